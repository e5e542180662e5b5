"""Two threads of one client overlap on one consumer: does the cache end as Placement does?

Issue 35. Thread A of a shared ``PlacementClient`` writes a consumer while thread B of the
same client reads it. B's answer may be processed after A's acknowledgement and still show
the state before A's write; if the cache lets that older answer replace what A's write
proved, the cache is wrong although nothing failed. This measures how often, with no fault
injected, on Placement's production shape: gunicorn workers (``--workers``) over MariaDB or
PostgreSQL (``reportclient.testing.PlacementCluster``, as the other cluster benches start it).

Each round takes a fresh consumer on one provider. Operations (thread A, this process's main
thread):

* ``claim``: a claim of a new consumer, ``cache_ttl=0`` (the default).
* ``release``: the release of a consumer the same client has just claimed, ``cache_ttl=60``.

Thread B starts its ``get_allocations`` a fixed offset after A's call starts (a monotonic
deadline reached with ``Event.wait(timeout)``; the ``lag`` column is how late it started).
After both calls returned, the cache is judged against Placement, read by a separate client:

* claim: *wrong* when ``client.cached(c)`` shows a state other than what Placement holds
  (the claim's allocations, generation 1), or when the same client's next claim of the
  consumer (a resize) raises ``ConsumerChanged`` over its own write. ``None`` (overlapping
  answers left the entry in doubt, so the next write reads) is not wrong;
* release: *wrong* when ``client.cached(c, trusted=True)`` (what the next write would compute
  from without reading) is not None and differs from Placement, which holds nothing.

The target is 0 wrong at every offset. ``old`` counts rounds where B's answer showed the
state before A's write, ``old+late`` those where it also returned after A's call had (the
issue's interleaving); ``errors`` counts rounds where either call raised (not judged). A line
under the table splits the wrong rounds by that order: a stale answer stored *before* A's
acknowledgement is as wrong in the end as one stored after it, if the acknowledgement (whose
request was sent before B's answer was stored) is then taken for the overlapping answer.

Requests are counted at the wire (a requests transport adapter on the client's session,
per thread): ``A req/op`` is what thread A's operation cost in the overlap rounds, and a
second table measures each operation alone, where 1 request per fresh claim and 2 per
update at ``cache_ttl=0`` must hold.

The process exits 0 whatever the figures (``--strict``: 1 when any is missed), 3 when a
database is unavailable, 2 when a round could not run (a thread stuck past its budget).

Usage: ``python -m bench overlap [--database mariadb postgresql] [--workers 2 4]
[--rounds 50] [--offsets 0,1,2,5,10] [--quick] [--json PATH] [--strict] [--plot DIR]
[--quiet]``
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from requests import PreparedRequest
from requests.adapters import HTTPAdapter

from bench.support.common import (
    INVENTORY,
    MICROVERSION,
    PROJECT,
    USER,
    identity,
    machine_info,
    output_options,
    percentile,
    quiet_logging,
    save_results,
)
from bench.support.progress import Progress
from bench.support.tables import table
from reportclient import ConsumerChanged, PlacementClient, add_allocations
from reportclient.testing import ClusterUnavailable, PlacementAdmin, PlacementCluster

CLAIM, RELEASE = "claim", "release"
OPS = (CLAIM, RELEASE)
#: cache_ttl per operation: a release only skips its read (the overlap's target) within a ttl.
TTL = {CLAIM: 0.0, RELEASE: 60.0}
DATABASES = ("mariadb", "postgresql")
# 20 and 50 ms reach past most of a claim on these databases, where the overlap ends.
OFFSETS_MS = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
HEADERS = [
    "database", "workers", "op", "offset ms", "rounds", "wrong", "old", "old+late", "errors",
    "lag ms p50", "A ms p50", "A req/op",
]  # fmt: skip
REQUEST_HEADERS = ["database", "workers", "op", "cache_ttl", "ops", "req/op", "expected", ""]
#: Seconds a thread may take over one call before the round is abandoned.
CALL_BUDGET = 30.0
#: Waits at most to reach a deadline: Event.wait may return a little early, never forever.
MAX_WAITS = 100
READER = "overlap-reader"


class WireCounter(HTTPAdapter):
    """Counts every request sent on the wire, by the name of the thread that sent it."""

    def __init__(self) -> None:
        super().__init__(pool_connections=2, pool_maxsize=4)
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def send(self, request: PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        """Count, then send as usual."""
        with self._lock:
            self.counts[threading.current_thread().name] += 1
        return super().send(request, *args, **kwargs)

    def of(self, thread: str | None = None) -> int:
        """Requests sent so far by ``thread`` (the calling thread when None)."""
        name = threading.current_thread().name if thread is None else thread
        with self._lock:
            return self.counts[name]


def make_client(url: str, token: str, cache_ttl: float) -> tuple[PlacementClient, WireCounter]:
    """A client whose every request is counted at the wire; its microversion is pinned."""
    session = ks_session.Session(auth=token_endpoint.Token(url, token))
    wire = WireCounter()
    session.session.mount("http://", wire)
    adapter = ks_adapter.Adapter(session, service_type="placement", endpoint_override=url)
    client = PlacementClient(adapter, cache_ttl=cache_ttl, microversion=MICROVERSION)
    return client, wire


@dataclass
class Round:
    """What one round saw."""

    wrong: bool = False
    #: B's answer showed the state before A's write.
    old: bool = False
    #: B's call returned after A's had.
    late: bool = False
    error: str | None = None
    lag_ms: float = 0.0
    #: How long A's call took.
    writer_ms: float = 0.0
    writer_requests: int = 0


class Reader(threading.Thread):
    """Thread B: reads the consumer once, ``offset`` seconds after the go signal's start time."""

    def __init__(self, client: PlacementClient, consumer: str, offset: float) -> None:
        super().__init__(name=READER, daemon=True)
        self.client = client
        self.consumer = consumer
        self.offset = offset
        self.go = threading.Event()
        self.start_at = 0.0
        self.lag = 0.0
        self.generation: int | None = None
        self.returned = 0.0
        self.error: str | None = None

    def run(self) -> None:
        """Wait for the signal, then for the deadline, then read."""
        if not self.go.wait(CALL_BUDGET):
            self.error = "no go signal"
            return
        deadline = self.start_at + self.offset
        never = threading.Event()
        for _ in range(MAX_WAITS):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            never.wait(left)
        self.lag = time.monotonic() - deadline
        try:
            self.generation = self.client.get_allocations(self.consumer).generation
        except Exception as exc:  # recorded; the round is not judged
            self.error = type(exc).__name__
        self.returned = time.monotonic()


def one_round(
    client: PlacementClient, wire: WireCounter, admin: PlacementAdmin, rp: str, op: str,
    offset: float,
) -> Round:  # fmt: skip
    """Run A's operation with B's read at ``offset`` s into it; judge the cache afterwards."""
    consumer = str(uuid.uuid4())
    claimed = {rp: {"VCPU": 1}}
    out = Round()
    if op == RELEASE:
        # The client's own claim: a cached, trusted state the release writes from unread.
        try:
            client.claim(consumer, claimed, project_id=PROJECT, user_id=USER)
        except Exception as exc:  # recorded; the round is not run
            out.error = f"set-up {type(exc).__name__}"
            return out
    reader = Reader(client, consumer, offset)
    reader.start()
    before = wire.of()
    reader.start_at = time.monotonic()
    reader.go.set()
    try:
        if op == CLAIM:
            client.claim(consumer, claimed, project_id=PROJECT, user_id=USER)
        else:
            client.release(consumer)
    except Exception as exc:  # recorded; the round is not judged
        out.error = type(exc).__name__
    acked = time.monotonic()
    out.writer_ms = (acked - reader.start_at) * 1000
    out.writer_requests = wire.of() - before
    reader.join(CALL_BUDGET)
    if reader.is_alive():
        raise RuntimeError(f"reader still in its call after {CALL_BUDGET} s")
    out.lag_ms = reader.lag * 1000
    out.error = out.error or reader.error
    out.late = reader.returned > acked
    body = admin.get_allocations(consumer)
    held = {p: a["resources"] for p, a in body["allocations"].items()}
    generation = body.get("consumer_generation")
    if op == CLAIM:
        out.old = reader.generation is None
        cached = client.cached(consumer)
        placement_holds_claim = held == claimed and generation == 1
        if not placement_holds_claim:
            out.error = out.error or "placement does not hold the claim"
        shown_wrong = cached is not None and (
            cached.allocations != claimed or cached.generation != 1
        )
        try:  # the resize: must not be refused over the client's own claim
            client.claim(consumer, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
            refused = False
        except ConsumerChanged:
            refused = True
        out.wrong = placement_holds_claim and (shown_wrong or refused)
    else:
        out.old = reader.generation is not None
        trusted = client.cached(consumer, trusted=True)
        out.wrong = trusted is not None and (
            trusted.allocations != held or trusted.generation != generation
        )
    return out


def overlap_cell(
    cluster: PlacementCluster, admin: PlacementAdmin, rp: str, op: str, offset_ms: float,
    rounds: int, budget: float,
) -> dict[str, Any]:  # fmt: skip
    """``rounds`` rounds (or as many as fit ``budget`` seconds) on one fresh client."""
    client, wire = make_client(cluster.url, cluster.token, TTL[op])
    began = time.monotonic()
    done: list[Round] = []
    for _ in range(rounds):
        if time.monotonic() - began > budget:
            break
        done.append(one_round(client, wire, admin, rp, op, offset_ms / 1000))
    judged = [r for r in done if r.error is None]
    return {
        "op": op,
        "cache_ttl": TTL[op],
        "offset_ms": offset_ms,
        "rounds": len(done),
        "wrong": sum(r.wrong for r in judged),
        "old": sum(r.old for r in judged),
        "old_late": sum(r.old and r.late for r in judged),
        "errors": dict(Counter(r.error for r in done if r.error is not None)),
        "lag_ms_p50": percentile([r.lag_ms for r in done], 50),
        "writer_ms_p50": percentile([r.writer_ms for r in done], 50),
        "writer_requests_per_op": (
            sum(r.writer_requests for r in done) / len(done) if done else float("nan")
        ),
        "wall_s": time.monotonic() - began,
        "round_detail": [asdict(r) for r in done],
    }


def _measure_alone(
    client: PlacementClient, wire: WireCounter, n: int, setup: Callable[[str], None],
    op: Callable[[str], None],
) -> float:  # fmt: skip
    counted = 0
    for _ in range(n):
        consumer = str(uuid.uuid4())
        setup(consumer)
        before = wire.of()
        op(consumer)
        counted += wire.of() - before
    return counted / n


def requests_alone(cluster: PlacementCluster, rp: str, n: int) -> list[dict[str, Any]]:
    """Requests per operation with no other thread: fresh claim, update (ttl 0), release (60)."""
    held = {rp: {"VCPU": 1}}
    rows = []
    for op, ttl, expected, must in (
        ("fresh claim", 0.0, 1, True),
        ("update", 0.0, 2, True),
        ("release", 60.0, 1, False),
    ):
        client, wire = make_client(cluster.url, cluster.token, ttl)

        def claim(consumer: str, client: PlacementClient = client) -> None:
            client.claim(consumer, held, project_id=PROJECT, user_id=USER)

        def nothing(consumer: str) -> None:
            return None

        def update(consumer: str, client: PlacementClient = client) -> None:
            client.update_allocations(
                consumer, add_allocations(held), project_id=PROJECT, user_id=USER
            )

        def release(consumer: str, client: PlacementClient = client) -> None:
            client.release(consumer)

        setup, call = {
            "fresh claim": (nothing, claim),
            "update": (claim, update),
            "release": (claim, release),
        }[op]
        per_op = _measure_alone(client, wire, n, setup, call)
        rows.append(
            {
                "op": op,
                "cache_ttl": ttl,
                "ops": n,
                "requests_per_op": per_op,
                "expected": expected,
                "must_hold": must,
                "pass": per_op == expected,
            }
        )
    return rows


def run_cluster(
    database: str, workers: int, rounds: int, offsets: list[float], alone: int, budget: float,
    progress: Progress,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:  # fmt: skip
    """Start one cluster; every (op, offset) cell, then requests per operation alone."""
    rows: list[dict[str, Any]] = []
    with (
        PlacementCluster(database, workers=workers) as cluster,
        PlacementAdmin(cluster.url, cluster.token, timeout=CALL_BUDGET) as admin,
    ):
        rp = admin.create_provider(inventory=INVENTORY)
        # The first write of a project and user creates their rows: done once here, so that
        # no measured round pays for it.
        warm, _ = make_client(cluster.url, cluster.token, 0.0)
        consumer = str(uuid.uuid4())
        warm.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
        warm.release(consumer)
        for op in OPS:
            for offset in offsets:
                cell = overlap_cell(cluster, admin, rp, op, offset, rounds, budget)
                rows.append({"database": database, "workers": workers, **cell})
                progress.done(
                    f"{database} x{workers} {op} +{offset:g} ms: wrong {cell['wrong']}/"
                    f"{cell['rounds']}"
                )
        alone_rows = [
            {"database": database, "workers": workers, **r}
            for r in requests_alone(cluster, rp, alone)
        ]
    return rows, alone_rows


def _errors(errors: dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in errors.items()) or "0"


def _wrong_by_order(rows: list[dict[str, Any]]) -> str:
    """How the wrong rounds split by whether B's answer returned before or after A's call."""
    judged = [d for r in rows for d in r["round_detail"] if d["error"] is None]
    wrong = [d for d in judged if d["wrong"]]
    first = sum(d["old"] and not d["late"] for d in wrong)
    last = sum(d["old"] and d["late"] for d in wrong)
    return (
        f"wrong {len(wrong)} of {len(judged)} judged rounds: B's old answer returned before A's "
        f"call {first}, after it {last}, B's answer not old {len(wrong) - first - last}"
    )


def render(
    rows: list[dict[str, Any]], alone: list[dict[str, Any]], meta: dict[str, Any]
) -> list[str]:
    """The overlap table, then the requests-per-operation table."""
    lines = [
        f"machine: {meta.get('cpu_model')}, {meta.get('cores')} cores, Python "
        f"{meta.get('python')}, Placement {meta.get('placement')}",
        "",
        "Thread B of the same client reads the consumer <offset> ms after thread A's operation "
        "starts; wrong = the cache differs from Placement after both returned (target 0)",
    ]
    lines += table(
        HEADERS,
        [
            [r["database"], str(r["workers"]), r["op"], f"{r['offset_ms']:g}", str(r["rounds"]),
             str(r["wrong"]), str(r["old"]), str(r["old_late"]), _errors(r["errors"]),
             r["lag_ms_p50"], r["writer_ms_p50"], r["writer_requests_per_op"]]
            for r in rows
        ],
    )  # fmt: skip
    lines += ["", _wrong_by_order(rows)]
    lines += [
        "",
        "Requests per operation alone (counted at the wire); * must hold",
    ]
    lines += table(
        REQUEST_HEADERS,
        [
            [r["database"], str(r["workers"]), r["op"] + (" *" if r["must_hold"] else ""),
             f"{r['cache_ttl']:g}", str(r["ops"]), r["requests_per_op"], str(r["expected"]),
             "PASS" if r["pass"] else "MISS"]
            for r in alone
        ],
    )  # fmt: skip
    return lines


def build_parser() -> argparse.ArgumentParser:
    """``python -m bench overlap``'s options."""
    parser = argparse.ArgumentParser(
        prog="python -m bench overlap", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--database", nargs="+", choices=DATABASES, default=list(DATABASES))
    parser.add_argument("--workers", nargs="+", type=int, default=[2, 4])
    parser.add_argument("--rounds", type=int, default=50, help="rounds per (op, offset) cell")
    parser.add_argument(
        "--offsets", default=",".join(f"{o:g}" for o in OFFSETS_MS), help="ms, comma-separated"
    )
    parser.add_argument("--alone", type=int, default=20, help="operations per requests row")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per cell at most")
    parser.add_argument(
        "--quick", action="store_true", help="CI size: first database, 2 workers, 4 rounds"
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when a cell is wrong or a request row MISS"
    )
    output_options(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.database, args.workers = args.database[:1], [2]
        args.rounds, args.alone, args.budget = min(args.rounds, 4), 5, 10.0
    offsets = [float(o) for o in args.offsets.split(",")]
    quiet_logging()
    began = time.monotonic()
    meta: dict[str, Any] = {
        **machine_info(),
        **identity("overlap", argv),
        "argv": sys.argv[1:] if argv is None else argv,
        "rounds": args.rounds,
        "offsets_ms": offsets,
    }
    cells = len(args.database) * len(args.workers) * len(OPS) * len(offsets)
    progress = Progress("overlap", cells, quiet=args.quiet)
    rows: list[dict[str, Any]] = []
    alone: list[dict[str, Any]] = []
    try:
        for database in args.database:
            for workers in args.workers:
                done, alone_rows = run_cluster(
                    database, workers, args.rounds, offsets, args.alone, args.budget, progress
                )
                rows += done
                alone += alone_rows
    except ClusterUnavailable as exc:
        print(f"unavailable: {exc}", file=sys.stderr)
        return 3
    except RuntimeError as exc:
        print(f"round could not run: {exc}", file=sys.stderr)
        return 2
    meta["wall_seconds"] = time.monotonic() - began
    print("\n".join([*render(rows, alone, meta), f"\nwall time {meta['wall_seconds']:.1f} s"]))
    save_results(
        {"meta": meta, "overlap": rows, "requests": alone}, args.json, args.plot, args.quiet
    )
    missed = any(r["wrong"] for r in rows) or any(not r["pass"] for r in alone)
    return 1 if args.strict and missed else 0
