"""The parent's side of a workload: arrange providers, deal steps, run plans on the spawn pool."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from reportclient.testing import PlacementAdmin, PlacementCluster
from tests.races.checker import UNKNOWN, Checker
from tests.races.workers import Phase, Plan, Report, Step, run_plan

#: Worker processes; 4 processes x 4 threads is the suite's production shape.
PROCESSES = 4
THREADS = 4
#: Seconds a workload may run before its steps stop starting (the wall-clock guard).
GUARD = 120.0
#: Extra seconds for a process to return once the guard tripped (an operation in flight is
#: bounded by the retry deadline plus the read timeout).
GRACE = 60.0


def new_id() -> str:
    """A fresh uuid4: every test has its own providers and consumers."""
    return str(uuid.uuid4())


def providers(admin: PlacementAdmin, count: int, vcpu: int) -> list[str]:
    """``count`` fresh providers with ``vcpu`` VCPU each (any amount per allocation)."""
    inventory = {"VCPU": {"total": vcpu, "max_unit": vcpu}}
    return [admin.create_provider(inventory=inventory) for _ in range(count)]


def deal(steps: Sequence[Step], parts: int) -> list[list[Step]]:
    """Split ``steps`` round-robin into ``parts`` lists."""
    return [list(steps[i::parts]) for i in range(parts)]


def run(
    pool: ProcessPoolExecutor,
    url: str,
    per_process: Sequence[Sequence[Phase]],
    checker: Checker,
    *,
    cache_ttl: float = 0.0,
    name: str = "w",
) -> list[Report]:
    """Run one plan per process, all starting together; log every op into ``checker``.

    Fails if the wall-clock guard kept any step from running.
    """
    start_at = time.time() + 0.5
    plans = [
        Plan(url, f"{name}{i}", list(phases), start_at, start_at + GUARD, cache_ttl)
        for i, phases in enumerate(per_process)
    ]
    futures = [pool.submit(run_plan, plan) for plan in plans]
    reports = [future.result(timeout=GUARD + GRACE) for future in futures]
    skipped = sum(report.not_run for report in reports)
    assert skipped == 0, f"wall-clock guard ({GUARD:g} s) tripped: {skipped} steps never ran"
    for report in reports:
        checker.record(report.ops)
        checker.requests.update(report.requests)
        checker.logged.update(report.logged)
    return reports


#: How Placement logs an exception it turned into a 500.
SERVER_ERROR = "Placement API unexpected error"


def server_errors(cluster: PlacementCluster) -> int:
    """500s Placement has answered so far (its log is the cluster's whole life)."""
    return cluster.read_log().count(SERVER_ERROR)


def assert_unknowns_come_from_server_errors(checker: Checker) -> None:
    """Without injected faults, an outcome can only be unknown because Placement answered 5xx.

    Placement 16.0.0 on PostgreSQL does: a deadlock between two writes' provider-generation
    updates aborts the transaction, and oslo.db's deadlock retry then runs inside it
    (``InFailedSqlTransaction``, 500). Nothing was written, but no client can know that.
    """
    unclear = {UNKNOWN, "PlacementUnavailable"}
    for op in checker.ops:
        if op.outcome in unclear:
            assert "-> 50" in op.detail, f"{op.outcome} without a server error: {op.detail}"
