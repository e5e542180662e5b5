"""Benchmark reportclient against the real Placement; print a table and write JSON.

Usage: ``python -m bench run [--quick] [--json PATH] [--with-nova] [--galera] [--shared]
[--placement sqlite|mariadb|postgresql] [--workers N]``

``--galera`` runs fresh claims through HAProxy on three Galera nodes beside the same claims
sent to one node's Placement (``bench.cells.galera``; needs the Galera suite's packages).
``--shared`` (with ``--placement mariadb|postgresql``) runs threads sharing one client on
one consumer, reportclient beside nova (``bench.cells.shared``). ``--placement mariadb`` or
``postgresql`` runs the production-shape workloads instead
(``bench.cells.cluster``): Placement behind ``--workers`` gunicorn workers on that database,
fresh claims at 1/4/16/64 threads, contention at 2/4/16/64 writers and the mixed cell
(2 writers on one consumer beside 14 threads claiming fresh consumers).

Workloads 1-4 and 7 (an instance's lifecycle, nova's way) run against the real Placement in
a separate process; workloads 5 (CPU with the transport stubbed) and 6 (cache memory, in
child processes) need no server. reportclient runs with its default ``cache_ttl=0`` and,
where the cache changes the request count (2, 3, 4, 7), also with ``cache_ttl=60``. Every
comparison is measured side by side in the same run and printed as a ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bench import memory
from bench.cells import cluster, galera, shared
from bench.drivers.allocations import (
    TTL,
    BareDriver,
    Driver,
    KeystoneauthDriver,
    NovaDriver,
    ReportclientDriver,
    nova_for,
)
from bench.support.common import (
    INVENTORY,
    RESULTS,
    WireCounter,
    emit,
    identity,
    output_options,
    placement_server,
    quiet_logging,
    results_parser,
    run_meta,
    server_description,
)
from bench.support.progress import Progress
from bench.workloads import overhead
from bench.workloads.claims import (
    RACE_NOVA_BEFORE,
    RACE_NOVA_BETWEEN,
    RACE_RC,
    RACE_RC_TTL,
    cached_updates,
    fresh_claims,
    shelve_race,
)
from bench.workloads.contention import contention
from bench.workloads.lifecycle import lifecycle
from bench.workloads.report import render, targets
from reportclient import DEFAULT_CACHE_SIZE
from reportclient.testing import PlacementAdmin

# Each knob at full size and with --quick, side by side: the quick run is the full one
# at small counts.
_SIZES: dict[str, tuple[Any, Any]] = {
    "w1_n": (250, 40),
    "rounds": (25, 8),
    "w2_n": (200, 30),
    "w3_n": (40, 8),
    "w4_clients": ([1, 4, 16], [1, 4, 16]),
    "w4_total": (96, 16),
    "w4_budgets": (
        {"default": 45.0, "nova/consumer": 20.0},
        {"default": 10.0, "nova/consumer": 6.0},
    ),
    "w5_block": (500, 300),
    "w5_repeats": (15, 5),
    "w6_bytes_n": (DEFAULT_CACHE_SIZE, 20_000),
    "w6_rss": ([DEFAULT_CACHE_SIZE, 1_000_000], [DEFAULT_CACHE_SIZE]),
    "w7_n": (40, 8),
    "w7_budget": (60.0, 20.0),
}
# Cells on a shared VM drift by 10-15% between rounds; these counts (8 interleaved rounds
# of fresh claims, 6 of contention) keep the ratios within a few percent.
_CLUSTER_SIZES: dict[str, tuple[Any, Any]] = {
    "threads": ([1, 4, 16, 64], [1, 4, 16, 64]),
    "claims": ({1: 400, 4: 640, 16: 2048, 64: 3072}, {1: 20, 4: 40, 16: 64, 64: 128}),
    "rounds": (8, 2),
    "writers": ([2, 4, 16, 64], [2, 4, 16, 64]),
    # One round at 64 writers is a single burst of 64 updates, whose cost swings widely
    # (nova against itself: 0.90-1.11x over 6 rounds), so that cell gets more rounds; at 2
    # and 4 writers a round is short and one conflict moves its p99, so they get many. At 2
    # writers 12-16 updates of 240 conflict, so the p99 rests on a handful of them; at 16,
    # nova against itself ranged 0.71-1.13x on updates/s over eight 6-round runs: those
    # two cells get twice the rounds they had (24 and 12), about 3 more minutes a run. Each
    # count is a multiple of 6, where the rotation (reportclient, nova, nova again) puts
    # every variant after every other equally often.
    "updates": ({2: 480, 4: 384, 16: 768, 64: 768}, {2: 16, 4: 24, 16: 32, 64: 64}),
    "contention_rounds": ({2: 24, 4: 12, 16: 12, 64: 12}, {2: 1, 4: 1, 16: 1, 64: 1}),
    "budget": (90.0, 30.0),
}
# The claimers finish first at the rates both clients reach here (about 15-25 claims/s
# beside 1-2 updates/s), so a cell lasts about 15 s and stops the pair: 10 rounds keep a
# run per database under 10 minutes with nova twice beside reportclient.
_MIXED_SIZES: dict[str, tuple[Any, Any]] = {
    "pair": (2, 2),
    "claimers": (14, 14),
    "pair_updates": (30, 8),
    "claims": (20, 6),
    "rounds": (10, 1),
    "budget": (90.0, 30.0),
}


def _column(sizes: dict[str, tuple[Any, Any]], quick: bool) -> dict[str, Any]:
    return {knob: pair[quick] for knob, pair in sizes.items()}


FULL: dict[str, Any] = _column(_SIZES, False)
QUICK: dict[str, Any] = _column(_SIZES, True)
CLUSTER_FULL: dict[str, Any] = {
    **_column(_CLUSTER_SIZES, False),
    "mixed": _column(_MIXED_SIZES, False),
}
CLUSTER_QUICK: dict[str, Any] = {
    **_column(_CLUSTER_SIZES, True),
    "mixed": _column(_MIXED_SIZES, True),
}


def _memory(sizes: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "bytes": memory.run("bytes", sizes["w6_bytes_n"]),
        "rss": [memory.run("rss", n) for n in sizes["w6_rss"]],
    }
    if 1_000_000 not in sizes["w6_rss"]:
        out["skipped"] = ["1,000,000-entry RSS child (--quick); run without --quick"]
    return out


def _server_workloads(
    sizes: dict[str, Any], nova: Any, meta: dict[str, Any], progress: Progress
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with placement_server() as server:
        meta["server"] = server_description(server)
        meta["server_startup_s"] = server.startup_seconds
        url, token = server.url, server.token
        admin = PlacementAdmin(url, token)
        wire = WireCounter(server)
        rp = admin.create_provider(inventory=INVENTORY)
        rc = ReportclientDriver(url, token)
        rc_ttl = ReportclientDriver(url, token, cache_ttl=TTL)
        bare_put = BareDriver(url, token, get_first=False)
        bare_get_put = BareDriver(url, token, get_first=True)
        ks_put = KeystoneauthDriver(url, token)
        nova_driver = NovaDriver(nova, url, token) if nova is not None else None
        extra: list[Driver] = [nova_driver] if nova_driver is not None else []

        progress.begin("workload 1: fresh claims")
        w1 = fresh_claims(
            [rc, bare_put, ks_put, bare_get_put, *extra],
            rp,
            sizes["w1_n"],
            sizes["rounds"],
            wire,
        )
        consumers = w1.pop("consumers")
        results["fresh_claims"] = w1

        progress.begin("workload 2: updates of known consumers")
        # Fresh claims do not depend on cache_ttl, so the trusting client claims its own
        # consumers just before each of its rounds (unmeasured), well within its ttl.
        results["cached_updates"] = cached_updates(
            [rc, rc_ttl, bare_get_put, *extra],
            consumers,
            rp,
            sizes["w2_n"],
            sizes["rounds"],
            wire,
            claim_first=[rc_ttl.name],
        )

        progress.begin("workload 3: shelve race")
        race_rp = admin.create_provider(inventory=INVENTORY)
        variants: list[tuple[str, Driver, bool]] = [
            (RACE_RC, rc, False),
            (RACE_RC_TTL, rc_ttl, True),
        ]
        if nova_driver is not None:
            variants += [
                (RACE_NOVA_BETWEEN, nova_driver, True),
                (RACE_NOVA_BEFORE, nova_driver, False),
            ]
        results["shelve_race"] = shelve_race(variants, admin, race_rp, sizes["w3_n"], wire)

        progress.begin("workload 4: contention")
        factories: dict[str, Any] = {
            rc.name: lambda: ReportclientDriver(url, token),
            rc_ttl.name: lambda: ReportclientDriver(url, token, cache_ttl=TTL),
        }
        if nova is not None:
            factories["nova"] = lambda: NovaDriver(nova, url, token)
        results["contention"] = contention(
            sizes["w4_clients"], sizes["w4_total"], sizes["w4_budgets"], factories, admin, wire
        )

        progress.begin("workload 7: instance lifecycle")
        results["lifecycle"] = lifecycle(
            url,
            token,
            nova,
            admin,
            wire,
            sizes["w7_n"],
            budget=sizes["w7_budget"],
            progress=progress.note,
        )
        admin.close()
    return results


def build_parser() -> argparse.ArgumentParser:
    """``python -m bench run``'s options."""
    parser = results_parser("run", __doc__, "latest.json", "small counts, under a minute")
    output_options(parser)
    parser.add_argument(
        "--placement",
        choices=["sqlite", "mariadb", "postgresql"],
        default="sqlite",
        help="sqlite: one wsgiref server (default); mariadb/postgresql: the production shape",
    )
    parser.add_argument(
        "--workers", type=int, default=4, help="gunicorn workers for --placement mariadb|postgresql"
    )
    parser.add_argument(
        "--threads",
        help="production shape: fresh-claim thread counts to run, e.g. 4 or 1,16 (default all)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        help="production shape: fresh-claim rounds (claims per cell stay as they are)",
    )
    parser.add_argument(
        "--no-contention",
        action="store_true",
        help="production shape: fresh claims only",
    )
    parser.add_argument(
        "--writers",
        help="production shape: contention writer counts to run, e.g. 2,4 (default 2,4,16,64)",
    )
    parser.add_argument(
        "--contention-only",
        action="store_true",
        help="production shape: contention and the mixed cell only (no fresh claims)",
    )
    parser.add_argument(
        "--mixed",
        action="store_true",
        help="production shape: the mixed cell only (2 writers on one consumer beside 14 "
        "threads claiming fresh consumers); --contention-only runs it too",
    )
    parser.add_argument(
        "--mixed-rounds",
        type=int,
        help="production shape: rounds of the mixed cell (default 10; 1 with --quick)",
    )
    parser.add_argument(
        "--fixed-window",
        action="store_true",
        help="production shape: also run reportclient with the fixed 3 s window it used to have",
    )
    parser.add_argument(
        "--galera",
        action="store_true",
        help="fresh claims through HAProxy on three Galera nodes beside one node's Placement",
    )
    parser.add_argument(
        "--shared",
        action="store_true",
        help="production shape: only threads sharing one client, all updating one consumer",
    )
    parser.add_argument(
        "--with-nova",
        action="store_true",
        help="also drive nova's SchedulerReportClient (needs nova installed)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run every workload, print the table, write the JSON; return the exit code."""
    args = build_parser().parse_args(argv)
    began = time.perf_counter()
    quiet_logging()
    sizes = QUICK if args.quick else FULL
    meta: dict[str, Any] = {**run_meta(args.quick, sizes), **identity("run", argv)}
    nova: Any = None
    if args.with_nova:
        nova = nova_for(meta, "--with-nova requested but skipped", "WARNING")

    if args.galera:
        return _galera(args, meta, began)
    if args.shared:
        return _shared(args, nova, meta, began)
    if args.placement != "sqlite":
        return _production_shape(args, nova, meta, began)
    results: dict[str, Any] = {}
    progress = Progress("run", 7, "workloads", quiet=args.quiet)
    progress.begin("workload 5: client CPU overhead (stubbed transport)")
    results["overhead"] = overhead.measure(sizes["w5_block"], sizes["w5_repeats"])
    progress.begin("workload 6: cache memory (child processes)")
    results["memory"] = _memory(sizes)
    results.update(_server_workloads(sizes, nova, meta, progress))
    results["targets"] = targets(results)
    meta["wall_seconds"] = time.perf_counter() - began

    return emit(render(meta, results), meta, results, args.json, args.plot, args.quiet)


def _production_shape(
    args: argparse.Namespace, nova: Any, meta: dict[str, Any], began: float
) -> int:
    sizes = dict(CLUSTER_QUICK if args.quick else CLUSTER_FULL)
    if args.threads:
        sizes["threads"] = [int(t) for t in args.threads.split(",")]
    if args.rounds:
        per_round = {t: n / sizes["rounds"] for t, n in sizes["claims"].items()}
        sizes["claims"] = {t: round(n * args.rounds) for t, n in per_round.items()}
        sizes["rounds"] = args.rounds
    if args.no_contention:
        sizes["writers"] = []
        sizes["mixed"] = None
    if args.mixed:
        sizes["threads"], sizes["writers"] = [], []
    if args.mixed_rounds and sizes["mixed"]:
        sizes["mixed"] = {**sizes["mixed"], "rounds": args.mixed_rounds}
    if args.writers:
        sizes["writers"] = [int(w) for w in args.writers.split(",")]
    if args.contention_only:
        sizes["threads"] = []
    sizes["fixed_window"] = args.fixed_window
    if args.json == RESULTS / "latest.json":
        args.json = RESULTS / f"production-{args.placement}.json"
    meta.update(sizes=sizes, placement=args.placement, workers=args.workers)
    groups = len(sizes["threads"]) + len(sizes["writers"]) + (1 if sizes["mixed"] else 0)
    progress = Progress("run", groups, "thread and writer counts", quiet=args.quiet)
    server, results = cluster.run(args.placement, args.workers, nova, sizes, progress.begin)
    meta.update(server)
    meta["wall_seconds"] = time.perf_counter() - began
    return emit(cluster.render(meta, results), meta, results, args.json, args.plot, args.quiet)


def _preset(
    args: argparse.Namespace,
    full: dict[str, Any],
    quick: dict[str, Any],
    counts: str,
    results: str,
) -> dict[str, Any]:
    """A cell's sizes as asked: ``--quick``, its ``counts`` knob and ``--rounds`` applied.

    The cell writes to ``bench/results/RESULTS`` unless ``--json`` named a file.
    """
    sizes = quick if args.quick else full
    given = getattr(args, counts)
    if given:
        sizes = {**sizes, counts: [int(n) for n in given.split(",")]}
    if args.rounds:
        sizes = {**sizes, "rounds": args.rounds}
    if args.json == RESULTS / "latest.json":
        args.json = RESULTS / results
    return sizes


def _galera(args: argparse.Namespace, meta: dict[str, Any], began: float) -> int:
    sizes = _preset(args, galera.FULL, galera.QUICK, "threads", "production-galera.json")
    meta.update(sizes=sizes, placement="galera")
    progress = Progress("run", 1 + len(sizes["threads"]), "steps", quiet=args.quiet)
    meta["server"], rows = galera.run(sizes, progress.begin)
    meta["wall_seconds"] = time.perf_counter() - began
    return emit(
        galera.render(meta, rows), meta, {"fresh_claims": rows}, args.json, args.plot, args.quiet
    )


def _shared(args: argparse.Namespace, nova: Any, meta: dict[str, Any], began: float) -> int:
    if args.placement == "sqlite":
        print("--shared needs --placement mariadb or postgresql", file=sys.stderr)
        return 2
    sizes = _preset(args, shared.FULL, shared.QUICK, "writers", f"shared-{args.placement}.json")
    meta.update(sizes=sizes, placement=args.placement, workers=args.workers)
    progress = Progress("run", len(sizes["writers"]), "thread counts", quiet=args.quiet)
    meta["server"], rows = shared.run(args.placement, args.workers, nova, sizes, progress.begin)
    meta["wall_seconds"] = time.perf_counter() - began
    return emit(shared.render(meta, rows), meta, {"shared": rows}, args.json, args.plot, args.quiet)
