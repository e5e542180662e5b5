"""Fresh claims as nova's scheduler makes them: nova's report client beside the library's drop-in.

One workload on the production shape (a ``PlacementCluster``: gunicorn workers over MariaDB
or PostgreSQL). Every claim is what ``nova.scheduler.utils.claim_resources`` asks of its
report client for a new instance: ``claim_resources(context, consumer, {"allocations":
{rp: {"resources": {"VCPU": 1}}}}, project, user, allocation_request_version="1.36")``
with a new consumer uuid (each thread makes its own), on one of 8 root providers (VCPU
total 100000 each, made before the cells, so capacity never runs out) taken in turn by
each thread from its own starting point. Two variants make the same call:

* ``nova``: nova's ``SchedulerReportClient(adapter=...)`` over a counting keystoneauth1
  Adapter built with ``raise_exc=False``, as nova builds its own (it reads the statuses
  itself). nova 34 reads the consumer (``GET /allocations/{consumer}``) before it writes,
  to double up an evacuation's allocations, then PUTs; a provider generation race inside
  Placement is retried up to 3 times after a random sleep (its ``@retries``).
* ``adapter``: ``reportclient.nova.SchedulerReportClient(client=PlacementClient(<counting
  Adapter>, microversion=1.39))``, the library's drop-in: one PUT at consumer generation
  null, a read only when that PUT conflicts.

Per thread count (``--threads``, 1, 4, 16 and 64 by default) and per round (``--rounds``,
2 by default), each variant runs one cell on its own: a new client shared by all the
cell's threads (one client serves many scheduler threads in nova), each with keystoneauth's
keep-alive pool holding a connection per thread. Each thread first makes one claim that
is not measured (it opens its connection), then all threads start together and claim
back to back until the cell's deadline (``--cell-seconds``, 8 by default; a claim begun
before it finishes) or, with ``--claims N``, N claims each. The variants take turns
(nova, adapter in even rounds, adapter, nova in odd ones) so drift on a shared machine hits
both alike, and never run at the same time, so the process's CPU time in a cell is one
variant's.

Columns, per variant and thread count, summed or pooled over the rounds: successful claims;
claims/s (the mean over rounds of claims over the cell's wall time) and each round's;
noise, the spread of a variant's rounds ((max - min) / mean of its claims/s: a ratio
between the variants smaller than that is not a difference); adapter/nova, the ratio of
the mean claims/s (and each round's); requests per claim, in all and by method, counted by
the client's Adapter; client CPU ms per claim (``time.process_time()`` over the cell, every
thread of this process, divided by the claims); Placement CPU ms per claim (user + system
time of the gunicorn master and workers, the database not counted); p50/p99 latency of
the successful claims; failures (any exception, or a return other than True, by name,
the unmeasured first claims included). After each cell the providers' VCPU usage is read
back: it must lie between the claims reported done and those plus the failed ones. The
cell's consumers are then deleted (``force_release``, outside the measured time), so the
database does not grow from cell to cell. Exit status 1 when any claim failed or a
read-back did not match.

The rows are saved as JSON (``--json``, ``bench/results/claims.json`` by default) from the
same summaries the table prints; ``--plot DIR`` draws claims/s and requests per claim
against threads from them (``python -m bench plot`` redraws from the JSON). A line per
cell on stderr says where the run is (``--quiet``: none).
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time
import uuid
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from keystoneauth1 import adapter as ks_adapter

from bench.cells.cluster import cluster_cpu_seconds
from bench.drivers.allocations import optional_nova
from bench.support.common import (
    MICROVERSION,
    PROJECT,
    RESULTS,
    USER,
    CountingAdapter,
    full_inventory,
    identity,
    keepalive_pool,
    machine_info,
    make_adapter,
    output_options,
    package_version,
    percentile,
    quiet_logging,
    save_results,
)
from bench.support.progress import Progress
from reportclient import PlacementClient, ProviderSpec
from reportclient.nova import SchedulerReportClient as AdapterReportClient
from reportclient.testing import PlacementCluster

NOVA, ADAPTER = "nova", "adapter"
#: What nova 34's scheduler passes as ``allocation_request_version`` (SAME_SUBTREE_VERSION).
REQUEST_VERSION = "1.36"
PROVIDERS = 8
TOTAL = 100_000
#: Threads deleting a cell's consumers between cells.
RELEASERS = 8


@dataclass
class Cell:
    """One variant at one thread count in one round."""

    variant: str
    threads: int
    claims: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    placement_cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)
    requests: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    lost: int = 0

    @property
    def rate(self) -> float:
        return self.claims / self.wall if self.wall else 0.0


class Claimer:
    """One variant's client for one cell, and the consumers it claimed for."""

    def __init__(self, variant: str, url: str, token: str, threads: int, nova: Any) -> None:
        self.variant = variant
        self.context = SimpleNamespace(global_id=None)  # claim_resources reads only this
        if variant == NOVA:
            # raise_exc=False as nova's get_sdk_adapter builds it: nova reads statuses itself.
            self.wire: CountingAdapter = make_adapter(url, token, raise_exc=False)
            self.client: Any = nova.SchedulerReportClient(adapter=self.wire)
        else:
            self.wire = make_adapter(url, token)
            placement = PlacementClient(self.wire, microversion=MICROVERSION)
            self.client = AdapterReportClient(client=placement)
        keepalive_pool(self.wire.session.session, max(threads, 1))
        self.consumers: list[str] = []
        self.lock = threading.Lock()

    def claim(self, rp: str) -> tuple[str | None, float]:
        """One fresh claim: the failure's name (None on success) and the seconds it took."""
        consumer = str(uuid.uuid4())
        with self.lock:
            self.consumers.append(consumer)
        began = time.perf_counter()
        try:
            ok = self.client.claim_resources(
                self.context,
                consumer,
                {"allocations": {rp: {"resources": {"VCPU": 1}}}},
                PROJECT,
                USER,
                allocation_request_version=REQUEST_VERSION,
            )
        except Exception as exc:  # a benchmark counts every failure, by its type
            return type(exc).__name__, time.perf_counter() - began
        elapsed = time.perf_counter() - began
        return (None if ok is True else f"returned {ok!r}"), elapsed


def held(admin: PlacementClient, providers: list[str]) -> int:
    """VCPU used on the providers, as Placement reports it."""
    return sum(admin.get_provider_usages(rp).usages.get("VCPU", 0) for rp in providers)


def run_cell(
    cluster: PlacementCluster,
    admin: PlacementClient,
    providers: list[str],
    variant: str,
    threads: int,
    seconds: float,
    count: int | None,
    nova: Any,
) -> Cell:
    """One cell: ``threads`` threads share a new client of ``variant``; release after."""
    claimer = Claimer(variant, cluster.url, cluster.token, threads, nova)
    result = Cell(variant, threads)
    lock = threading.Lock()
    warmed = threading.Barrier(threads + 1)
    go = threading.Barrier(threads + 1)
    deadline = [0.0]
    landed = [0]  # claims reported done, the unmeasured first ones included
    failed = [0]

    def work(index: int) -> None:
        mine: list[float] = []
        errors: Counter[str] = Counter()
        k = index
        error, _ = claimer.claim(providers[k % len(providers)])  # opens this thread's connection
        if error is not None:
            errors[error] += 1
        warm_ok = error is None
        warmed.wait()
        go.wait()
        end, done = deadline[0], 0
        while (done < count) if count is not None else (time.perf_counter() < end):
            k += 1
            done += 1
            error, took = claimer.claim(providers[k % len(providers)])
            if error is None:
                mine.append(took)
            else:
                errors[error] += 1
        with lock:
            result.latencies.extend(mine)
            result.failures.update(errors)
            landed[0] += len(mine) + warm_ok
            failed[0] += sum(errors.values())

    before_usage = held(admin, providers)
    pool = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    for thread in pool:
        thread.start()
    warmed.wait()
    counts = Counter(claimer.wire.counts)
    cpu0, placement0 = time.process_time(), cluster_cpu_seconds(cluster)
    began = time.perf_counter()
    deadline[0] = began + seconds
    go.wait()
    for thread in pool:
        thread.join(600)
    result.wall = time.perf_counter() - began
    result.cpu = time.process_time() - cpu0
    result.placement_cpu = cluster_cpu_seconds(cluster) - placement0
    if any(t.is_alive() for t in pool):
        raise RuntimeError(f"a {variant} claim thread did not finish within 600 s")
    result.requests = claimer.wire.counts - counts
    result.claims = len(result.latencies)
    usage = held(admin, providers) - before_usage
    if not landed[0] <= usage <= landed[0] + failed[0]:
        print(
            f"  LOST: {variant} x{threads}: providers hold {usage} VCPU more, "
            f"{landed[0]} claims done, {failed[0]} failed",
            file=sys.stderr,
        )
        result.lost = 1
    with ThreadPoolExecutor(RELEASERS) as releasers:
        list(releasers.map(admin.force_release, claimer.consumers))
    return result


def make_providers(admin: PlacementClient) -> list[str]:
    """:data:`PROVIDERS` root providers with :data:`TOTAL` VCPU each."""
    providers = [str(uuid.uuid4()) for _ in range(PROVIDERS)]
    admin.providers.reconcile(
        [
            ProviderSpec(rp, f"claims-{rp[:8]}", inventories={"VCPU": full_inventory(TOTAL)})
            for rp in providers
        ]
    )
    return providers


def _rounds(values: list[float], digits: int) -> str:
    return ", ".join(f"{v:.{digits}f}" for v in values)


def _none_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else value


def summarise(threads: int, cells: dict[str, list[Cell]]) -> list[dict[str, Any]]:
    """One thread count's figures, a dict per variant pooled over its rounds.

    The table's rows (:func:`row_cells`), the results JSON and the figure
    (:mod:`bench.figures.claims`) are all made from these. Per claim means per successful
    claim; NaN (no claim done) is None.
    """
    rates = {v: [c.rate for c in cs] for v, cs in cells.items()}
    means = {v: sum(r) / len(r) for v, r in rates.items()}
    out = []
    for variant, runs in cells.items():
        claims = sum(c.claims for c in runs)
        requests: Counter[str] = sum((c.requests for c in runs), Counter())
        failures: Counter[str] = sum((c.failures for c in runs), Counter())
        latencies = [t for c in runs for t in c.latencies]
        mean = means[variant]
        ratio, ratio_rounds = None, []
        if variant == ADAPTER and NOVA in cells and means[NOVA]:
            ratio = mean / means[NOVA]
            ratio_rounds = [a / n for a, n in zip(rates[ADAPTER], rates[NOVA], strict=True) if n]
        per = max(claims, 1)
        out.append(
            {
                "threads": threads,
                "variant": variant,
                "claims": claims,
                "claims_per_s": mean,
                "claims_per_s_rounds": rates[variant],
                "noise": (max(rates[variant]) - min(rates[variant])) / mean if mean else None,
                "vs_nova": ratio,
                "vs_nova_rounds": ratio_rounds,
                "requests_per_claim": sum(requests.values()) / per,
                "requests_by_method": {m: n / per for m, n in sorted(requests.items())},
                "client_cpu_ms_per_claim": sum(c.cpu for c in runs) / per * 1000,
                "placement_cpu_ms_per_claim": sum(c.placement_cpu for c in runs) / per * 1000,
                "p50_ms": _none_if_nan(percentile(latencies, 50) * 1000),
                "p99_ms": _none_if_nan(percentile(latencies, 99) * 1000),
                "failures": dict(sorted(failures.items())),
            }
        )
    return out


def row_cells(r: dict[str, Any]) -> list[str]:
    """One variant's row of the table, as printed."""
    noise = float("nan") if r["noise"] is None else r["noise"]
    ratio = (
        "-" if r["vs_nova"] is None else f"{r['vs_nova']:.2f} ({_rounds(r['vs_nova_rounds'], 2)})"
    )
    return [
        str(r["threads"]),
        r["variant"],
        str(r["claims"]),
        f"{r['claims_per_s']:.1f} ({_rounds(r['claims_per_s_rounds'], 1)})",
        f"{noise:.1%}",
        ratio,
        f"{r['requests_per_claim']:.2f}",
        " ".join(f"{m} {n:.2f}" for m, n in r["requests_by_method"].items()) or "-",
        f"{r['client_cpu_ms_per_claim']:.2f}",
        f"{r['placement_cpu_ms_per_claim']:.2f}",
        "nan" if r["p50_ms"] is None else f"{r['p50_ms']:.1f}",
        "nan" if r["p99_ms"] is None else f"{r['p99_ms']:.1f}",
        ", ".join(f"{k} x{v}" for k, v in r["failures"].items()) or "0",
    ]


HEADERS = [
    "threads",
    "variant",
    "claims",
    "claims/s (rounds)",
    "noise",
    "adapter/nova (rounds)",
    "req/claim",
    "by method",
    "client CPU ms/claim",
    "Placement CPU ms/claim",
    "p50 ms",
    "p99 ms",
    "failures",
]


def markdown(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table, columns padded so it also reads as text."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def build_parser() -> argparse.ArgumentParser:
    """``python -m bench claims``'s options."""
    parser = argparse.ArgumentParser(
        prog="python -m bench claims", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--placement", choices=("mariadb", "postgresql"), default="mariadb")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers (default 4)")
    parser.add_argument("--threads", default="1,4,16,64", help="thread counts (default 1,4,16,64)")
    parser.add_argument("--cell-seconds", type=float, default=8.0, help="default 8")
    parser.add_argument(
        "--claims", type=int, default=None, help="claims per thread per cell instead of a time"
    )
    parser.add_argument("--rounds", type=int, default=2, help="cells per variant (default 2)")
    parser.add_argument("--quick", action="store_true", help="threads 1,4 and 3 s cells")
    parser.add_argument(
        "--json",
        type=Path,
        default=RESULTS / "claims.json",
        help="where to write the results (default bench/results/claims.json)",
    )
    output_options(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.quick:
        args.threads, args.cell_seconds = "1,4", 3.0
    try:
        thread_counts = [int(t) for t in args.threads.split(",")]
    except ValueError:
        parser.error(f"--threads must be integers separated by commas, got {args.threads!r}")
    if min(thread_counts) < 1 or args.rounds < 1 or (args.claims is not None and args.claims < 1):
        parser.error("--threads, --rounds and --claims must be at least 1")
    quiet_logging()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eventlet's deprecation, on nova's import
        nova = optional_nova(True)
    variants = [NOVA, ADAPTER] if nova is not None else [ADAPTER]
    info = machine_info()
    began = time.perf_counter()
    summaries: list[dict[str, Any]] = []
    bad = 0
    with PlacementCluster(args.placement, workers=args.workers) as cluster:
        admin_adapter = make_adapter(cluster.url, cluster.token, adapter_class=ks_adapter.Adapter)
        keepalive_pool(admin_adapter.session.session, RELEASERS)
        admin = PlacementClient(admin_adapter, microversion=MICROVERSION)
        providers = make_providers(admin)
        for variant in variants:  # warm Placement and both code paths; not reported
            run_cell(cluster, admin, providers, variant, 4, 0.0, 10, nova)
        progress = Progress(
            "claims", len(thread_counts) * args.rounds * len(variants), quiet=args.quiet
        )
        for threads in thread_counts:
            cells: dict[str, list[Cell]] = {v: [] for v in variants}
            for round_ in range(args.rounds):
                order = variants if round_ % 2 == 0 else variants[::-1]
                for variant in order:
                    cell = run_cell(
                        cluster,
                        admin,
                        providers,
                        variant,
                        threads,
                        args.cell_seconds,
                        args.claims,
                        nova,
                    )
                    cells[variant].append(cell)
                    bad += cell.lost + sum(cell.failures.values())
                    progress.done(
                        f"{threads:>3} threads, round {round_ + 1}, {variant:<7}: "
                        f"{cell.claims} claims, {cell.rate:.1f}/s, "
                        f"{dict(sorted(cell.requests.items()))}, "
                        f"failures {dict(cell.failures) or 0}"
                    )
            summaries += summarise(threads, cells)
    how = f"{args.claims} claims per thread" if args.claims else f"{args.cell_seconds:g} s cells"
    lines = [
        f"Fresh claims, nova's SchedulerReportClient beside reportclient.nova's "
        f"(claim_resources, allocation_request_version {REQUEST_VERSION})",
        f"machine: {info['cpu_model']}, {info['cores']} cores, Python {info['python']}; "
        f"openstack-placement {info['placement']} on {args.placement}, "
        f"{args.workers} gunicorn workers; nova {package_version('nova') or '-'}, "
        f"reportclient {info['reportclient']} (microversion {MICROVERSION})",
        f"{how}, {args.rounds} rounds interleaved, {PROVIDERS} providers; "
        f"noise: (max - min) / mean of a variant's rounds",
        "",
        *markdown(HEADERS, [row_cells(r) for r in summaries]),
        "",
        f"wall time {time.perf_counter() - began:.0f} s; "
        f"failed claims and read-back differences: {bad}",
    ]
    print("\n".join(lines), flush=True)
    meta = {
        **info,
        **identity("claims", argv),
        "nova": package_version("nova"),
        "placement_database": args.placement,
        "workers": args.workers,
        "wall_seconds": time.perf_counter() - began,
    }
    results = {"claims": summaries, "failed_or_lost": bad}
    save_results({"meta": meta, "results": results}, args.json, args.plot, args.quiet)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
