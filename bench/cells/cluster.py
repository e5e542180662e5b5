"""Production shape: the real Placement behind N gunicorn workers over MariaDB or PostgreSQL.

Two workloads, each variant measured beside the others in the same run:

* **Fresh claims** at 1, 4, 16 and 64 threads sharing one client per variant (how a
  scheduler process uses its client): reportclient, the bare ``PUT`` floor and nova's
  ``SchedulerReportClient``. Variants take turns in rounds (A B C, B C A, ...) so drift on a
  shared machine hits them alike.
* **Contention**: 16 and 64 writers (one client each, as separate schedulers would be) each
  adding one VCPU to the same consumer. Success rate, requests per update and Placement CPU
  per *successful* update; the final usage is read back, so a lost update would show.

Placement CPU is the user + system time of every gunicorn process (master and workers), read
from ``/proc`` before and after each cell: unlike wall time it does not depend on what else
the machine is doing, and it is the cost a client puts on the shared service. The database
server's own CPU is not included (it is shared with everything else on the machine).
Requests are counted on the client side: the cluster keeps no request log, and every
variant's requests go through a counting adapter or session.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import tenacity

from bench.cells.mixed import mixed, mixed_table, mixed_targets
from bench.drivers.allocations import BareDriver, Driver, NovaDriver, ReportclientDriver, pooled
from bench.support.common import INVENTORY, latency_ms, mark, package_version
from bench.support.tables import table
from bench.workloads.contention import (
    FIGURES,
    contention_cell,
    cpu_ms_per_ok,
    interval,
    rotations,
    summarise,
    vs_baseline,
)
from reportclient.retry import DEFAULT_ATTEMPTS, DEFAULT_DEADLINE, wait_full_jitter
from reportclient.testing import PlacementAdmin, PlacementCluster

RC, BARE, NOVA = "reportclient", "bare PUT", "nova"
#: The bare PUT again, measured as a variant of its own: its "x bare" is the noise floor.
CONTROL = "bare PUT again"
#: nova again, as a contention variant of its own: the noise floor of "vs nova".
NOVA_CONTROL = "nova again"
#: The policy reportclient shipped before the engine suggested windows: full jitter over
#: min(8 s, 3 s x 2^(n-1)) after every contended conflict, whatever the contention.
FIXED = "reportclient, fixed 3 s window"
_TICK = os.sysconf("SC_CLK_TCK")


def cluster_cpu_seconds(cluster: PlacementCluster) -> float:
    """User + system CPU seconds of the gunicorn master and its live workers so far."""
    total = 0
    for pid in [cluster.master_pid, *cluster.worker_pids()]:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except FileNotFoundError:
            continue
        # After "pid (comm)": state is field 0, utime 11, stime 12 (proc(5) fields 14, 15).
        total += int(fields[11]) + int(fields[12])
    return total / _TICK


def claims_cell(
    driver: Driver, rp: str, threads: int, per_thread: int, meter: Callable[[], float]
) -> dict[str, Any]:
    """``threads`` threads share ``driver``; each makes ``per_thread`` fresh claims."""
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(threads + 1)

    def work() -> None:
        mine: list[float] = []
        barrier.wait()
        for _ in range(per_thread):
            began = time.perf_counter()
            try:
                driver.claim(str(uuid.uuid4()), rp)
            except Exception as exc:  # counted and shown, never fatal to the run
                with lock:
                    errors[type(exc).__name__] += 1
                continue
            mine.append(time.perf_counter() - began)
        with lock:
            latencies.extend(mine)

    pool = [threading.Thread(target=work, daemon=True) for _ in range(threads)]
    for thread in pool:
        thread.start()
    before = Counter(driver.wire.counts)
    cpu = meter()
    barrier.wait()
    began = time.perf_counter()
    for thread in pool:
        thread.join(300)
    wall = time.perf_counter() - began
    if any(t.is_alive() for t in pool):
        raise RuntimeError("a claim thread did not finish within 300 s")
    return {
        "wall": wall,
        "cpu": meter() - cpu,
        "latencies": latencies,
        "errors": errors,
        "requests": sum((driver.wire.counts - before).values()),
    }


def fresh_claims(
    drivers: dict[str, Callable[[], Driver]],
    admin: PlacementAdmin,
    meter: Callable[[], float],
    threads_list: Sequence[int],
    claims: dict[int, int],
    rounds: int,
    progress: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    """One row per (threads, variant): claims/s, requests and Placement CPU per claim.

    Each variant first runs one unmeasured cell at the thread count (Placement's workers,
    the database's buffers and the client's connections warm up on someone's time, and it
    must not be the first variant's). Measured cells then take turns in a rotating order,
    each on a provider of its own so that no variant claims on a provider the others
    filled. ``x bare`` per round pairs a variant's cell with the bare PUT's cell of the same
    round; their median and range say how far one round's ratio can wander. ``progress``
    hears of each thread count as it begins.
    """
    rows: list[dict[str, Any]] = []
    for threads in threads_list:
        progress(f"fresh claims at {threads} threads")
        made = {name: pooled(factory(), max(threads, 10)) for name, factory in drivers.items()}
        names = list(made)
        per_thread = max(1, claims[threads] // (threads * rounds))
        warm_rp = admin.create_provider(inventory=INVENTORY)
        for driver in made.values():
            claims_cell(driver, warm_rp, threads, per_thread, meter)
        cells: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for name in rotations(names, rounds):
            rp = admin.create_provider(inventory=INVENTORY)
            cells[name].append(claims_cell(made[name], rp, threads, per_thread, meter))
        for name in names:
            rows.append(_claims_row(threads, name, cells[name], cells.get(BARE)))
    return rows


def _claims_row(
    threads: int, name: str, done: list[dict[str, Any]], bare: list[dict[str, Any]] | None
) -> dict[str, Any]:
    latencies = [x for c in done for x in c["latencies"]]
    errors: Counter[str] = Counter()
    for c in done:
        errors.update(c["errors"])
    ops = len(latencies) + sum(errors.values())
    wall = sum(c["wall"] for c in done)
    paired = [
        (len(mine["latencies"]) / mine["wall"]) / (len(base["latencies"]) / base["wall"])
        for mine, base in zip(done, bare or [], strict=False)
        if base["latencies"] and mine["wall"] and base["wall"]
    ]
    return {
        "threads": threads,
        "variant": name,
        "ops": ops,
        "ok": len(latencies),
        "errors": dict(errors),
        "claims_per_s": len(latencies) / wall if wall else 0.0,
        "requests_per_claim": sum(c["requests"] for c in done) / ops,
        "cpu_ms_per_claim": 1000 * sum(c["cpu"] for c in done) / ops,
        "round_ratio_median": statistics.median(paired) if paired else None,
        "round_ratio_min": min(paired, default=None),
        "round_ratio_max": max(paired, default=None),
        **latency_ms(latencies),
    }


def contention(
    factories: dict[str, Callable[[], Driver]],
    admin: PlacementAdmin,
    meter: Callable[[], float],
    writers_list: Sequence[int],
    updates: dict[int, int],
    rounds: dict[int, int],
    budget: float,
    progress: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    """One row per (writers, variant), summed over ``rounds[writers]`` interleaved cells."""
    rows: list[dict[str, Any]] = []
    for writers in writers_list:
        progress(f"contention at {writers} writers")
        cells: dict[str, list[dict[str, Any]]] = {name: [] for name in factories}
        per_writer = max(1, updates[writers] // (writers * rounds[writers]))
        for name in rotations(list(factories), rounds[writers]):
            cells[name].append(
                contention_cell(
                    factories[name], "consumer", writers, per_writer, budget, admin, None, meter
                )
            )
        for name, done in cells.items():
            row = summarise(done)
            row.update(
                writers=writers,
                variant=name,
                updates_per_s=row.pop("ok_per_s"),
                cpu_ms_per_success=cpu_ms_per_ok(done),
            )
            rows.append(row)
        found = vs_baseline(cells, (NOVA, NOVA_CONTROL), FIGURES)
        for row in rows[-len(cells) :]:
            if row["variant"] in found:
                row["vs_nova"] = found[row["variant"]]
    return rows


def fixed_window_policy() -> tenacity.Retrying:
    """The default policy as it was: the same stops, a window that ignores the engine's hint."""
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(DEFAULT_ATTEMPTS)
        | tenacity.stop_after_delay(DEFAULT_DEADLINE),
        wait=wait_full_jitter(3.0, 8.0),
        reraise=True,
    )


def run(
    database: str,
    workers: int,
    nova: Any,
    sizes: dict[str, Any],
    progress: Callable[[str], None],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Start the cluster, run both workloads, stop it; return (meta, results)."""
    with PlacementCluster(database, workers=workers) as cluster:
        url, token = cluster.url, cluster.token
        meta = {
            "server": (
                f"real Placement {package_version('openstack-placement')} behind {workers} "
                f"gunicorn sync workers over {database} ({cluster.server_url.split('@')[-1]}, "
                "a fresh database); clients in this process"
            )
        }
        admin = PlacementAdmin(url, token)
        meter = lambda: cluster_cpu_seconds(cluster)  # noqa: E731
        claimers: dict[str, Callable[[], Driver]] = {
            RC: lambda: ReportclientDriver(url, token),
            BARE: lambda: BareDriver(url, token, get_first=False),
            CONTROL: lambda: BareDriver(url, token, get_first=False),
        }
        writers: dict[str, Callable[[], Driver]] = {RC: lambda: ReportclientDriver(url, token)}
        if sizes.get("fixed_window"):
            writers[FIXED] = lambda: ReportclientDriver(url, token, retry=fixed_window_policy())
        if nova is not None:
            claimers[NOVA] = lambda: NovaDriver(nova, url, token)
            writers[NOVA] = lambda: NovaDriver(nova, url, token)
            writers[NOVA_CONTROL] = lambda: NovaDriver(nova, url, token)
        shape = f"{database} x{workers}"
        claims = fresh_claims(
            claimers,
            admin,
            meter,
            sizes["threads"],
            sizes["claims"],
            sizes["rounds"],
            lambda what: progress(f"production shape on {shape}: {what}"),
        )
        rows = contention(
            writers,
            admin,
            meter,
            sizes["writers"],
            sizes["updates"],
            sizes["contention_rounds"],
            sizes["budget"],
            lambda what: progress(f"production shape on {shape}: {what}"),
        )
        mixed_rows: list[dict[str, Any]] = []
        if sizes.get("mixed"):
            progress(f"production shape on {shape}: the mixed cell")
            mixed_rows = mixed(
                writers, claimers[BARE], admin, meter, sizes["mixed"], against=(NOVA, NOVA_CONTROL)
            )
        admin.close()
    results = {"fresh_claims": claims, "contention": rows, "mixed": mixed_rows}
    results["targets"] = cluster_targets(results)
    return meta, results


def cluster_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The production-shape goals, each with its measured figure."""
    out: list[dict[str, Any]] = []
    claims = {(r["threads"], r["variant"]): r for r in results["fresh_claims"]}
    for threads in sorted({t for t, _ in claims}):
        rc, bare = claims.get((threads, RC)), claims.get((threads, BARE))
        control = claims.get((threads, CONTROL))
        if rc and bare and bare["claims_per_s"]:
            # The bare PUT ran twice: both runs together are the better estimate.
            floors = [row for row in (bare, control) if row is not None and row["claims_per_s"]]
            floor = sum(row["ok"] for row in floors) / sum(
                row["ok"] / row["claims_per_s"] for row in floors
            )
            ratio = rc["claims_per_s"] / floor
            out.append(
                {
                    "target": f"fresh claims/s vs bare PUT (both runs), {threads} threads",
                    "goal": ">= 0.95",
                    "measured": ratio,
                    "pass": ratio >= 0.95,
                }
            )
        if control and bare and bare["claims_per_s"]:
            out.append(
                {
                    "target": f"(noise floor) bare PUT again vs bare PUT, {threads} threads",
                    "goal": "1.00",
                    "measured": control["claims_per_s"] / bare["claims_per_s"],
                    "pass": None,
                }
            )
    rows = {(r["writers"], r["variant"]): r for r in results["contention"]}
    for writers in sorted({w for w, _ in rows}):
        rc, nova = rows.get((writers, RC)), rows.get((writers, NOVA))
        if rc is None:
            continue
        out.append(
            {
                "target": f"lost updates, {writers} writers",
                "goal": "= 0",
                "measured": rc["lost_updates"],
                "pass": rc["lost_updates"] == 0,
            }
        )
        if nova is None:
            continue
        control = rows.get((writers, NOVA_CONTROL))
        novas = [row for row in (nova, control) if row is not None]
        nova_ok = sum(row["ok"] for row in novas)
        nova_requests = sum(row["requests_per_op"] * row["ops"] for row in novas) / nova_ok
        # A figure passes when it is at nova's or better, or when the 90% interval of the
        # ratio over rounds reaches nova's: not shown worse than nova at this run's noise.
        for key, label, higher in (
            ("updates_per_s", "updates/s", True),
            ("p99_ms", "p99", False),
            ("cpu_ms_per_success", "Placement CPU per successful update", False),
        ):
            found = rc["vs_nova"][key]
            out.append(
                {
                    "target": f"{label} vs nova (both runs), {writers} w",
                    "goal": f"{'>=' if higher else '<='} 1.00, or its interval reaches it",
                    "measured": interval(found),
                    "pass": found[2] >= 1.0 if higher else found[1] <= 1.0,
                }
            )
        out.append(
            {
                "target": f"requests per successful update vs nova (both runs), {writers} w",
                "goal": "-",
                "measured": (
                    rc["requests_per_op"] * rc["ops"] / rc["ok"] / nova_requests
                    if rc["ok"]
                    else float("inf")
                ),
                "pass": None,
            }
        )
        if control is not None:
            out.append(
                {
                    "target": f"(noise floor) nova again vs nova: ups / p99 / CPU, {writers} w",
                    "goal": "1.00",
                    "measured": " / ".join(
                        interval(control["vs_nova"][key])
                        for key in ("updates_per_s", "p99_ms", "cpu_ms_per_success")
                    ),
                    "pass": None,
                }
            )
        nova_rate = nova_ok / sum(row["ops"] for row in novas)
        out.append(
            {
                "target": f"success rate vs nova (both runs), {writers} writers",
                "goal": ">= nova",
                "measured": f"{rc['success_rate']:.3f} vs {nova_rate:.3f}",
                "pass": rc["success_rate"] >= nova_rate,
            }
        )
    return out + mixed_targets(results.get("mixed", []), RC, NOVA, NOVA_CONTROL)


def render(meta: dict[str, Any], results: dict[str, Any]) -> list[str]:
    """The production-shape tables and targets as printable lines."""
    lines = [
        f"Placement: {meta['server']}",
        f"machine: {meta.get('cpu_model')}, {meta.get('cores')} cores, Python {meta.get('python')}",
        "",
    ]
    claims = results["fresh_claims"]
    base = {r["threads"]: r["claims_per_s"] for r in claims if r["variant"] == BARE}
    if claims:
        lines.append("Fresh claims: one client shared by T threads, one new consumer per claim")
    lines += (
        []
        if not claims
        else table(
            [
                "threads",
                "variant",
                "claims/s",
                "x bare",
                "x bare by round",
                "req/claim",
                "CPU ms/claim",
                "p50 ms",
                "p99 ms",
                "errors",
            ],
            [
                [
                    str(r["threads"]),
                    r["variant"],
                    r["claims_per_s"],
                    r["claims_per_s"] / base[r["threads"]] if base.get(r["threads"]) else None,
                    _round_ratios(r),
                    r["requests_per_claim"],
                    r["cpu_ms_per_claim"],
                    r["p50_ms"],
                    r["p99_ms"],
                    sum(r["errors"].values()),
                ]
                for r in claims
            ],
        )
    )
    if results["contention"]:
        lines += ["", "Contention: W writers (one client each) add 1 VCPU to the same consumer"]
        lines += table(
            [
                "writers",
                "variant",
                "ok/ops",
                "success",
                "updates/s",
                "p50 ms",
                "p99 ms",
                "p99 ok ms",
                "req/op",
                "PUT/op",
                "CPU ms/success",
                "lost",
                "vs nova: updates/s",
                "p99",
                "CPU",
            ],
            [
                [
                    str(r["writers"]),
                    r["variant"],
                    f"{r['ok']}/{r['ops']}",
                    r["success_rate"],
                    r["updates_per_s"],
                    r["p50_ms"],
                    r["p99_ms"],
                    r.get("p99_ok_ms", r["p99_ms"]),
                    r["requests_per_op"],
                    r["puts_per_op"],
                    r["cpu_ms_per_success"],
                    r["lost_updates"],
                    *(
                        interval(r["vs_nova"][key]) if "vs_nova" in r else "-"
                        for key in ("updates_per_s", "p99_ms", "cpu_ms_per_success")
                    ),
                ]
                for r in results["contention"]
            ],
        )
    mixed_rows = results.get("mixed")
    if mixed_rows:
        shape = (meta.get("sizes") or {}).get("mixed", {})
        lines += [
            "",
            f"Mixed: {shape.get('pair', 2)} writers (one client each) add 1 VCPU to one "
            f"consumer while {shape.get('claimers', 14)} threads (one bare-PUT client each, "
            "the same beside every pair) claim fresh consumers on the same provider; the "
            "first group done stops the other",
        ]
        lines += table(*mixed_table(mixed_rows))
    lines += ["", "Targets"]
    lines += table(
        ["target", "goal", "measured", ""],
        [[t["target"], t["goal"], t["measured"], mark(t["pass"])] for t in results["targets"]],
    )
    return lines


def _round_ratios(row: dict[str, Any]) -> str:
    """``median [min-max]`` of a variant's per-round claims/s over the bare PUT's."""
    if row.get("round_ratio_median") is None:
        return "-"
    return (
        f"{row['round_ratio_median']:.2f} "
        f"[{row['round_ratio_min']:.2f}-{row['round_ratio_max']:.2f}]"
    )
