"""Threads sharing one client, all adding to one consumer: do they collide with each other?

A service shares one report client between its threads (nova's scheduler and conductor
between greenthreads). When several of them write the same consumer, nova's client lets them
read the same generation and collide in Placement; reportclient's writers of one subject take
turns inside the client (``reportclient._engine.turns``), so the next one reads what the last
one wrote. Each cell: ``writers`` threads share one client (reportclient, nova, nova again as
the noise floor) and each adds 1 VCPU to one consumer ``updates`` times, on a fresh provider;
afterwards the consumer is read back against the successful updates (a lost update shows).
Variants take turns in rotating rounds. Requests are counted on the shared client, so they
are totals per cell, not per thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.cells.cluster import cluster_cpu_seconds
from bench.drivers.allocations import Driver, NovaDriver, ReportclientDriver, pooled
from bench.support.common import INVENTORY, latency_ms
from bench.support.tables import table
from bench.workloads.contention import Worker, rotations, run_groups, shared_consumer
from reportclient.testing import PlacementAdmin, PlacementCluster

RC, NOVA, NOVA_AGAIN = "reportclient", "nova", "nova again"
QUICK: dict[str, Any] = {"writers": [4], "updates": 4, "rounds": 1}
FULL: dict[str, Any] = {"writers": [2, 4, 16], "updates": 10, "rounds": 6}


def _cell(
    driver: Driver, admin: PlacementAdmin, writers: int, updates: int, meter: Callable[[], float]
) -> dict[str, Any]:
    rp = admin.create_provider(inventory=INVENTORY)
    consumer = shared_consumer(admin, rp)
    driver.warm(consumer)
    counts = driver.wire.counts  # type: ignore[attr-defined]
    before = dict(counts)
    workers = [Worker(driver) for _ in range(writers)]
    (wall,), cpu = run_groups(
        [(workers, lambda d: d.update(consumer, rp), updates)], budget=90.0, meter=meter
    )
    ok = sum(w.ok for w in workers)
    held = admin.get_allocations(consumer)["allocations"].get(rp, {}).get("resources", {})
    return {
        "ok": ok,
        "ops": sum(w.ok + sum(w.errors.values()) for w in workers),
        "wall": wall,
        "cpu": cpu or 0.0,
        "latencies": [x for w in workers for x in w.latencies],
        "puts": counts["PUT"] - before.get("PUT", 0),
        "requests": sum(counts.values()) - sum(before.values()),
        "lost": 1 + ok - held.get("VCPU", 0),
    }


def run(
    database: str, workers: int, nova: Any, sizes: dict[str, Any], progress: Callable[[str], None]
) -> tuple[str, list[dict[str, Any]]]:
    """Start the cluster, measure every (writers, variant), stop it; describe it and the rows."""
    with PlacementCluster(database, workers=workers) as cluster:
        url, token = cluster.url, cluster.token
        admin = PlacementAdmin(url, token)
        meter = lambda: cluster_cpu_seconds(cluster)  # noqa: E731
        made: dict[str, Callable[[], Driver]] = {RC: lambda: ReportclientDriver(url, token)}
        if nova is not None:
            made[NOVA] = made[NOVA_AGAIN] = lambda: NovaDriver(nova, url, token)
        rows = []
        for n in sizes["writers"]:
            progress(f"shared client: {n} threads on {database} x{workers}")
            cells: dict[str, list[dict[str, Any]]] = {name: [] for name in made}
            for name in rotations(list(made), sizes["rounds"]):
                driver = pooled(made[name](), n + 2)
                cells[name].append(_cell(driver, admin, n, sizes["updates"], meter))
            rows += [_row(n, name, done) for name, done in cells.items()]
        admin.close()
    described = (
        f"real Placement behind {workers} gunicorn sync workers over {database}; "
        "clients in this process"
    )
    return described, rows


def _row(writers: int, name: str, done: list[dict[str, Any]]) -> dict[str, Any]:
    ok = sum(c["ok"] for c in done)
    ops = sum(c["ops"] for c in done)
    wall = sum(c["wall"] for c in done)
    return {
        "writers": writers,
        "variant": name,
        "ok": ok,
        "ops": ops,
        "updates_per_s": ok / wall if wall else 0.0,
        "puts_per_update": sum(c["puts"] for c in done) / ok if ok else float("inf"),
        "requests_per_update": sum(c["requests"] for c in done) / ok if ok else float("inf"),
        "cpu_ms_per_update": 1000 * sum(c["cpu"] for c in done) / ok if ok else float("inf"),
        "lost_updates": sum(c["lost"] for c in done),
        **latency_ms([x for c in done for x in c["latencies"]]),
    }


def render(meta: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """The table: per (writers, variant), rate, latency, requests, CPU and lost updates."""
    lines = [
        f"Placement: {meta['server']}",
        f"machine: {meta.get('cpu_model')}, {meta.get('cores')} cores, Python {meta.get('python')}",
        "",
        "N threads share ONE client; each adds 1 VCPU to the same consumer "
        f"{meta['sizes']['updates']} times; {meta['sizes']['rounds']} rounds",
    ]
    lines += table(
        ["writers", "variant", "ok/ops", "updates/s", "p50 ms", "p99 ms", "PUT/update",
         "req/update", "CPU ms/update", "lost"],
        [
            [str(r["writers"]), r["variant"], f"{r['ok']}/{r['ops']}", r["updates_per_s"],
             r["p50_ms"], r["p99_ms"], r["puts_per_update"], r["requests_per_update"],
             r["cpu_ms_per_update"], r["lost_updates"]]
            for r in rows
        ],
    )  # fmt: skip
    lines.append(
        f'"{NOVA_AGAIN}" is the noise floor: nova\'s cell again. PUT/update above 1.00 is '
        "conflicts: with turns, a client's own threads should cause none."
    )
    return lines
