"""Workload 4: 1, 4, 16 concurrent clients (threads, one client each).

``provider``: every thread claims its own new consumers on one shared provider.
``consumer``: every thread adds one VCPU to the same consumer (read-modify-write).

Retries are counted per operation on the client side as PUTs beyond the first (each
attempt of every client here writes exactly once), and the total is checked against the
PUTs the server saw. The final usage is checked against the successful operations, so a
lost update would show. Bounded by a per-thread operation count and a time budget after
which no thread starts a new operation.

The thread runner (:func:`run_groups`), the per-group figures (:func:`group_result`) and
their summary over rounds (:func:`summarise`) also serve the production shape's contention
and mixed cells (``bench.cells.cluster``, ``bench.cells.mixed``): one way to run and count writers.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.drivers.allocations import CONSUMER_TYPE, Driver
from bench.support.common import INVENTORY, PROJECT, USER, WireCounter, latency_ms, percentile
from reportclient.testing import PlacementAdmin


@dataclass
class Worker:
    driver: Driver
    #: Every operation's time to its outcome, success or the client giving up: the caller
    #: of an operation its client gave up on waited that long too.
    latencies: list[float] = field(default_factory=list)
    #: The successful operations' times alone.
    ok_latencies: list[float] = field(default_factory=list)
    retries: list[int] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)
    ok: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    crashed: BaseException | None = None
    #: ``perf_counter()`` when the worker's loop ended: a group's wall time ends at its last.
    ended: float = 0.0


#: A group of workers running one operation ``count`` times each.
Group = tuple[list[Worker], Callable[[Driver], None], int]


def _work(
    worker: Worker,
    op: Callable[[Driver], None],
    count: int,
    deadline_box: list[float],
    barrier: threading.Barrier,
) -> None:
    counts = worker.driver.wire.counts
    try:
        barrier.wait()
        for _ in range(count):
            if time.perf_counter() >= deadline_box[0]:
                break
            puts, total = counts["PUT"], sum(counts.values())
            began = time.perf_counter()
            try:
                op(worker.driver)
            except Exception as exc:  # a failure after the client gave up is a result
                worker.errors[type(exc).__name__] += 1
                worker.latencies.append(time.perf_counter() - began)
            else:
                worker.ok += 1
                worker.latencies.append(time.perf_counter() - began)
                worker.ok_latencies.append(worker.latencies[-1])
            worker.retries.append(max(0, counts["PUT"] - puts - 1))
            worker.requests.append(sum(counts.values()) - total)
    except BaseException as exc:  # surfaced by the caller
        worker.crashed = exc
    finally:
        worker.ended = time.perf_counter()


def run_groups(
    groups: list[Group], budget: float, meter: Callable[[], float] | None = None
) -> tuple[list[float], float | None]:
    """Start every group's threads at one barrier; return each group's wall time and the CPU.

    No thread starts a new operation after ``budget`` seconds, nor once any one group has
    finished: a mixed cell measures groups *beside* each other, and a group left running
    alone would be measured without the load the cell is about. ``meter``, when given, reads
    the server's CPU seconds so far; the CPU returned is what it spent while the groups ran.
    """
    barrier = threading.Barrier(sum(len(workers) for workers, _, _ in groups) + 1)
    deadline_box = [float("inf")]
    threads = [
        [
            threading.Thread(target=_work, args=(w, op, count, deadline_box, barrier), daemon=True)
            for w in workers
        ]
        for workers, op, count in groups
    ]
    for thread in (t for group in threads for t in group):
        thread.start()
    cpu_before = meter() if meter is not None else 0.0
    deadline_box[0] = time.perf_counter() + budget
    barrier.wait()
    began = time.perf_counter()
    # Bounded: no new operation starts after the budget, and every client gives up within
    # its own retry limits (reportclient 30 s, nova 4 tries of <= 6 s sleeps).
    limit = began + budget + 60
    while any(t.is_alive() for group in threads for t in group) and time.perf_counter() < limit:
        if any(not any(t.is_alive() for t in group) for group in threads):
            deadline_box[0] = min(deadline_box[0], time.perf_counter())
        time.sleep(0.02)
    cpu = meter() - cpu_before if meter is not None else None
    for worker in (w for workers, _, _ in groups for w in workers):
        if worker.crashed is not None:
            raise RuntimeError("a benchmark thread crashed") from worker.crashed
    if any(t.is_alive() for group in threads for t in group):
        raise RuntimeError("a benchmark thread did not finish in time")
    walls = [max((w.ended for w in workers), default=began) - began for workers, _, _ in groups]
    return walls, cpu


def shared_consumer(admin: PlacementAdmin, rp: str) -> str:
    """A new consumer holding 1 VCPU on ``rp``, for writers to add to."""
    shared = str(uuid.uuid4())
    resp = admin.put_allocations(
        shared,
        {
            "allocations": {rp: {"resources": {"VCPU": 1}}},
            "consumer_generation": None,
            "project_id": PROJECT,
            "user_id": USER,
            "consumer_type": CONSUMER_TYPE,
        },
    )
    if resp.status_code != 204:
        raise RuntimeError(f"cannot create the shared consumer: {resp.text[:200]}")
    return shared


def contention_cell(
    make_driver: Callable[[], Driver],
    kind: str,
    clients: int,
    ops_per_client: int,
    budget: float,
    admin: PlacementAdmin,
    wire: WireCounter | None,
    meter: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """Run one (client, kind, n clients) cell on a fresh provider and return its figures.

    ``wire`` counts what the server saw (None where the server keeps no request log);
    ``meter``, when given, reads the server's CPU seconds so far and the cell reports the
    CPU spent while the operations ran (``placement_cpu_s``).
    """
    rp = admin.create_provider(inventory=INVENTORY)
    shared = shared_consumer(admin, rp) if kind == "consumer" else ""
    start_vcpu = 1 if kind == "consumer" else 0
    workers = [Worker(make_driver()) for _ in range(clients)]
    if kind == "consumer":
        for worker in workers:
            worker.driver.warm(shared)

        def op(driver: Driver) -> None:
            driver.update(shared, rp)
    else:

        def op(driver: Driver) -> None:
            driver.claim(str(uuid.uuid4()), rp)

    position = wire.mark() if wire is not None else 0
    (wall,), cpu = run_groups([(workers, op, ops_per_client)], budget, meter)
    planned = clients * ops_per_client
    vcpu = admin.usages(rp).get("VCPU", 0)
    result = group_result(workers, wall, vcpu, start_vcpu, planned, wire, position)
    result["placement_cpu_s"] = cpu
    return result


def group_result(
    workers: list[Worker],
    wall: float,
    usage_vcpu: int,
    start_vcpu: int,
    planned: int,
    wire: WireCounter | None = None,
    position: int = 0,
) -> dict[str, Any]:
    """One group's figures; ``usage_vcpu`` is what its writes hold, read back after the run.

    ``start_vcpu`` is what they held before it: the difference from ``start_vcpu`` plus the
    successful operations is a lost update (or, negative, a write that landed after its
    client reported failure).
    """
    latencies = [x for w in workers for x in w.latencies]
    ok_latencies = [x for w in workers for x in w.ok_latencies]
    retries = [x for w in workers for x in w.retries]
    requests = [x for w in workers for x in w.requests]
    ok = sum(w.ok for w in workers)
    errors: Counter[str] = Counter()
    for w in workers:
        errors.update(w.errors)
    ops = len(retries)
    server_puts = wire.count_since(position, "PUT") if wire is not None else None
    client_puts = sum(w.driver.wire.counts["PUT"] for w in workers)
    vcpu = usage_vcpu
    return {
        "ops": ops,
        "ok": ok,
        "errors": dict(errors),
        "wall_s": wall,
        "planned_ops": planned,
        "hit_time_budget": ops < planned,
        "ops_per_s": ok / wall if wall else 0.0,
        **latency_ms(latencies),
        "latencies_s": latencies,
        "ok_latencies_s": ok_latencies,
        "retries_median": percentile(retries, 50),
        "retries_p99": percentile(retries, 99),
        "retries_max": max(retries, default=0),
        "retried_share": sum(1 for r in retries if r) / ops if ops else 0.0,
        "requests_per_op": sum(requests) / ops if ops else 0.0,
        "server_puts": server_puts,
        "client_puts": client_puts,
        "puts_match": None if server_puts is None else server_puts == client_puts,
        "usage_vcpu": vcpu,
        "expected_vcpu": start_vcpu + ok,
        "lost_updates": start_vcpu + ok - vcpu,
    }


def contention(
    clients_list: list[int],
    total_ops: int,
    budgets: dict[str, float],
    factories: dict[str, Callable[[], Driver]],
    admin: PlacementAdmin,
    wire: WireCounter,
) -> dict[str, Any]:
    """Every (client, kind, clients) cell; ``total_ops`` split evenly over the threads."""
    out: dict[str, Any] = {"total_ops_per_cell": total_ops, "cells": []}
    for kind in ("provider", "consumer"):
        for clients in clients_list:
            per_client = max(1, total_ops // clients)
            for name, factory in factories.items():
                budget = budgets.get(f"{name}/{kind}", budgets["default"])
                cell = contention_cell(factory, kind, clients, per_client, budget, admin, wire)
                cell.update({"client": name, "kind": kind, "clients": clients, "budget_s": budget})
                out["cells"].append(cell)
    return out


def rotations(names: list[str], rounds: int) -> Iterator[str]:
    """Each name once per round, the order rotating one way, then the other.

    A B C, B C A, C A B, then C B A, B A C, A C B, and again. Rotating spreads drift on a
    shared machine over every variant instead of whichever runs last. Rotating one way only
    left each variant behind the same one in every round (reportclient always after "nova
    again"), so whatever a cell leaves the server doing fell on one neighbour; turning the
    rotation round every ``len(names)`` rounds puts each variant after each neighbour alike
    (for three variants, after every other variant equally often in every 6 rounds).
    """
    count = len(names)
    for r in range(rounds):
        order = names if (r // count) % 2 == 0 else names[::-1]
        shift = r % count
        yield from [*order[shift:], *order[:shift]]


def summarise(done: list[dict[str, Any]]) -> dict[str, Any]:
    """One variant's figures over its rounds (``done``: :func:`group_result` dicts).

    Rates are successful operations over the summed wall time; latencies are pooled, so the
    p99 is the p99 of every operation rather than a median of per-round p99s. ``p99_ms``
    counts every operation to its outcome (a client that gave up on one waited that long
    too); ``p99_ok_ms`` the successful ones alone.
    """
    ops = sum(c["ops"] for c in done)
    ok = sum(c["ok"] for c in done)
    errors: Counter[str] = Counter()
    for c in done:
        errors.update(c["errors"])
    return {
        **latency_ms([x for c in done for x in c["latencies_s"]]),
        "p99_ok_ms": latency_ms([x for c in done for x in c.get("ok_latencies_s", [])])["p99_ms"],
        "ops": ops,
        "ok": ok,
        "errors": dict(errors),
        "success_rate": ok / ops if ops else 0.0,
        "ok_per_s": ok_per_s(done),
        "requests_per_op": sum(c["requests_per_op"] * c["ops"] for c in done) / ops if ops else 0.0,
        "puts_per_op": sum(c["client_puts"] for c in done) / ops if ops else 0.0,
        "lost_updates": sum(c["lost_updates"] for c in done),
        "hit_time_budget": any(c["hit_time_budget"] for c in done),
    }


def ok_per_s(cells: list[dict[str, Any]]) -> float:
    """Successful operations of ``cells`` over their summed wall time."""
    wall = sum(c["wall_s"] for c in cells)
    return sum(c["ok"] for c in cells) / wall if wall else 0.0


def cpu_ms_per_ok(cells: list[dict[str, Any]]) -> float:
    """Placement CPU milliseconds of ``cells`` (each with ``placement_cpu_s``) per success."""
    ok = sum(c["ok"] for c in cells)
    return 1000 * sum(c["placement_cpu_s"] for c in cells) / ok if ok else float("inf")


#: A figure of a variant over a list of rounds' cells (pooled, as :func:`summarise` pools).
Figure = Callable[[list[dict[str, Any]]], float]

FIGURES: dict[str, Figure] = {
    "updates_per_s": ok_per_s,
    "p99_ms": lambda cells: percentile([x for c in cells for x in c["latencies_s"]], 99) * 1000,
    "cpu_ms_per_success": cpu_ms_per_ok,
}


def paired_ratio(
    cells: list[dict[str, Any]],
    baseline: list[list[dict[str, Any]]],
    figure: Figure,
    *,
    draws: int = 2000,
    level: float = 0.90,
) -> tuple[float, float, float]:
    """``figure`` of ``cells`` over ``figure`` of ``baseline``, with a bootstrap interval.

    ``cells[i]`` and ``baseline[i]`` (one or more cells) ran in the same round, so drift
    between rounds moves both; the interval resamples whole rounds with replacement and
    returns (ratio, low, high) at ``level``. A single A/A ratio (nova against itself) says
    how far two runs of one client land apart once; the interval says how far this ratio
    could move if the same rounds were run again, which is what "within the noise" needs.
    Hand-written because the benchmark's environment has no scipy (``stats.bootstrap``),
    and seeded so that a report renders the same from the same results.
    """
    if not cells or len(cells) != len(baseline):
        raise ValueError("paired_ratio needs one baseline entry per round")

    def ratio(rounds: list[int]) -> float:
        mine = figure([cells[i] for i in rounds])
        theirs = figure([c for i in rounds for c in baseline[i]])
        return mine / theirs if theirs else float("inf")

    every = list(range(len(cells)))
    rng = random.Random(0)
    drawn = sorted(ratio([rng.choice(every) for _ in every]) for _ in range(draws))
    tail = (1.0 - level) / 2.0
    return (
        ratio(every),
        drawn[int(tail * (draws - 1))],
        drawn[int((1.0 - tail) * (draws - 1))],
    )


def interval(found: Sequence[float]) -> str:
    """``ratio [low-high]``: a :func:`paired_ratio` as printed."""
    ratio, low, high = found
    return f"{ratio:.2f} [{low:.2f}-{high:.2f}]"


def vs_baseline(
    cells: dict[str, list[Any]], baseline: Sequence[str], figures: dict[str, Figure]
) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Per variant, each of ``figures`` as :func:`paired_ratio` against the baseline's runs.

    ``cells[name][i]`` is variant ``name``'s cell of round ``i``. ``baseline`` names one
    variant run once or more (nova, nova again): every other variant is set against all its
    runs pooled, and each repeat against the first run, which is the A/A noise floor with an
    interval of its own. Empty when the baseline did not run.
    """
    runs = [cells[name] for name in baseline if name in cells]
    if not runs:
        return {}
    pooled = [list(same_round) for same_round in zip(*runs, strict=True)]
    first = [[cell] for cell in runs[0]]
    return {
        name: {
            key: paired_ratio(done, first if name in baseline else pooled, figure)
            for key, figure in figures.items()
        }
        for name, done in cells.items()
        if name != baseline[0]
    }
