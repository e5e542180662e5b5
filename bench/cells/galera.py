"""Fresh claims through HAProxy on Galera beside the same claims sent to one node's Placement.

The cluster is :class:`reportclient.testing.GaleraPlacement` in single-writer mode (Kolla's
layout): HAProxy sends every request to host 1, whose Placement writes to Galera node 1, and
the other nodes apply its write sets. The direct variant sends the same claims to host 1
itself, so the two differ by the HAProxy hop only; certification never enters (one writer).
A third variant, host 1 directly again, is the noise floor: its ratio to the first direct
variant is what the machine alone makes of two identical cells.

Variants take turns in rotating rounds (A B C, B C A, ...) on providers of their own, after
one unmeasured warm-up cell each; the ratio is taken per round against the direct variant of
the same round, and its median and range are printed.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from bench.cells.cluster import claims_cell
from bench.drivers.allocations import Driver, ReportclientDriver
from bench.support.common import INVENTORY, latency_ms
from bench.support.tables import table
from reportclient.testing import SINGLE_WRITER, GaleraPlacement, PlacementAdmin

VIA, DIRECT, AGAIN = "via HAProxy", "host1 direct", "host1 direct again"
QUICK: dict[str, Any] = {"threads": [4], "per_cell": 40, "rounds": 3}
FULL: dict[str, Any] = {"threads": [1, 4, 16], "per_cell": 96, "rounds": 5}


def run(sizes: dict[str, Any], progress: Callable[[str], None]) -> tuple[str, list[dict[str, Any]]]:
    """Start the cluster, measure every (threads, variant), stop it; describe it and the rows."""
    progress("galera: starting three nodes, three Placement hosts and HAProxy")
    with GaleraPlacement(SINGLE_WRITER, workers=2) as cluster:
        with PlacementAdmin(cluster.url, cluster.token) as admin:
            rows = []
            for threads in sizes["threads"]:
                progress(f"galera: fresh claims at {threads} threads")
                rows += _claims(cluster, admin, threads, sizes)
        described = (
            f"Placement on {cluster.galera.size} Galera nodes, a {cluster.workers}-worker "
            f"gunicorn per node, HAProxy {cluster.mode}"
        )
    return described, rows


def _claims(
    cluster: GaleraPlacement, admin: PlacementAdmin, threads: int, sizes: dict[str, Any]
) -> list[dict[str, Any]]:
    urls = {VIA: cluster.url, DIRECT: cluster.hosts[0].url, AGAIN: cluster.hosts[0].url}
    made: dict[str, Driver] = {
        name: ReportclientDriver(url, cluster.token, pool_size=max(threads, 10))
        for name, url in urls.items()
    }
    per_thread = max(1, sizes["per_cell"] // threads)
    warm = admin.create_provider(inventory=INVENTORY)
    for driver in made.values():
        claims_cell(driver, warm, threads, per_thread, lambda: 0.0)
    names = list(made)
    cells: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for r in range(sizes["rounds"]):
        shift = r % len(names)
        for name in [*names[shift:], *names[:shift]]:
            rp = admin.create_provider(inventory=INVENTORY)
            cells[name].append(claims_cell(made[name], rp, threads, per_thread, lambda: 0.0))
    return [_row(threads, name, cells[name], cells[DIRECT]) for name in names]


def _rate(cell: dict[str, Any]) -> float:
    return len(cell["latencies"]) / cell["wall"] if cell["wall"] else 0.0


def _row(
    threads: int, name: str, done: list[dict[str, Any]], direct: list[dict[str, Any]]
) -> dict[str, Any]:
    latencies = [x for c in done for x in c["latencies"]]
    wall = sum(c["wall"] for c in done)
    ratios = [_rate(m) / _rate(d) for m, d in zip(done, direct, strict=True) if _rate(d)]
    return {
        "threads": threads,
        "variant": name,
        "ok": len(latencies),
        "errors": sum(sum(c["errors"].values()) for c in done),
        "claims_per_s": len(latencies) / wall if wall else 0.0,
        "ratio_median": statistics.median(ratios) if ratios else None,
        "ratio_min": min(ratios, default=None),
        "ratio_max": max(ratios, default=None),
        **latency_ms(latencies),
    }


def render(meta: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """The fresh-claims table: claims/s per variant and its ratio to host 1 direct, by round."""
    lines = [
        f"Placement: {meta['server']}",
        f"machine: {meta.get('cpu_model')}, {meta.get('cores')} cores, Python {meta.get('python')}",
        "",
        "Fresh claims, one reportclient shared by T threads, one new consumer per claim",
    ]
    lines += table(
        ["threads", "variant", "claims/s", "x direct (median)", "x direct (range)", "p50 ms",
         "p99 ms", "errors"],
        [
            [str(r["threads"]), r["variant"], r["claims_per_s"], r["ratio_median"],
             "-" if r["ratio_min"] is None else f"{r['ratio_min']:.2f}-{r['ratio_max']:.2f}",
             r["p50_ms"], r["p99_ms"], r["errors"]]
            for r in rows
        ],
    )  # fmt: skip
    lines.append(
        f'"{AGAIN}" is the noise floor: the same cell as "{DIRECT}" again, so its ratio is what '
        "the machine alone makes of two identical cells."
    )
    return lines
