"""Chaos: workloads 2 and 4 through a fault proxy, with a gunicorn worker SIGKILLed mid-run.

A background scheduler keeps re-arming faults at fixed rates (every 7th write's answer dropped
after the commit, every 11th write answered 500 after the commit, every 13th write reset before
it is forwarded, every 5th read answered 503), each bounded by a budget; once the proxy has
relayed a few writes one worker is SIGKILLed and gunicorn replaces it. The checker then reads
the cluster directly, and the table (printed when the module ends, visible with ``-s``) says
per fault kind how many were injected, how the operations they met ended, and how many writes
were applied twice or lost: both must be zero.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor

import pytest

from reportclient.testing import PlacementAdmin, PlacementCluster
from tests.galera.findings import check_with_orphans, cleaned_up, explain_usages
from tests.races.chaos import (
    FAULT_HEADERS,
    FAULTS,
    KILLED,
    RuleScheduler,
    TracingProxy,
    WorkerKiller,
    fault_rows,
)
from tests.races.checker import Checker, Verdict, rows_printed_at_end, table
from tests.races.workloads import ADDS, same_consumer_adds, storm

pytestmark = pytest.mark.functional

#: Writes relayed before a worker is killed: early enough that the run is still busy.
KILL_AFTER = 20
STORM_SEED = 7


@pytest.fixture(scope="module")
def fault_table() -> Iterator[list[list[object]]]:
    """Rows of the per-fault table, printed when the module ends (visible with ``-s``)."""
    title = "Chaos: faults injected through the proxy, and what became of them"
    yield from rows_printed_at_end(title, FAULT_HEADERS)


def under_chaos(
    cluster: PlacementCluster, workload: Callable[[str], Checker]
) -> tuple[Checker, TracingProxy, WorkerKiller]:
    """Run ``workload(proxy_url)`` with the rule scheduler and the worker killer running."""
    port = int(cluster.url.rsplit(":", 1)[1])
    with TracingProxy(upstream_port=port) as proxy:
        scheduler = RuleScheduler(proxy)
        killer = WorkerKiller(cluster, proxy, KILL_AFTER)
        scheduler.start()
        killer.start()
        try:
            checker = workload(proxy.url)
        finally:
            scheduler.stop()
            killer.stop()
    return checker, proxy, killer


def placement_findings(checker: Checker, cluster: PlacementCluster) -> list[str]:
    """Judge the storm again, with what Placement's orphaned rows prove moved to its findings.

    Placement 16.0.0 deletes a consumer it auto-created when the write that created it fails,
    whoever wrote to the consumer meanwhile (``doc/source/galera.rst``, "Placement-side
    findings"): its allocation rows stay, counted in usages and in no listing, and the
    consumer reads empty. Those rows are read from the database itself. A consumer's failure
    is Placement's only when it also fails with the rows given back to it
    (:func:`~tests.galera.findings.check_with_orphans`), and a usage's only when the rows
    account for the whole difference (:func:`~tests.galera.findings.explain_usages`); every
    other failure stays the client's. Without orphaned rows nothing changes.
    """
    orphans = cluster.orphaned_allocations()
    if not orphans:
        return []
    checker.verdict = Verdict()
    checker.read_back()  # the workload is over: the same state, read again
    lines, _ = check_with_orphans(
        checker, orphans, cleaned_up([cluster.read_log()]), checker.check_registers
    )
    kept = []
    for category, who, message in checker.verdict.failures:
        finding = explain_usages(message, orphans) if category == "usages" else None
        if finding is None:
            kept.append((category, who, message))
        else:
            lines.append(finding)
    checker.verdict.failures = kept
    return lines


def assert_survived(
    title: str,
    checker: Checker,
    proxy: TracingProxy,
    killer: WorkerKiller,
    fault_table: list[list[object]],
    seconds: float,
) -> None:
    rows = fault_rows(title, checker, proxy)
    fault_table.extend(rows)
    print(f"\n{title}: {seconds:.1f} s, worker {killer.victim} SIGKILLed")
    print(checker.outcome_table())
    print(table(FAULT_HEADERS, rows))

    assert killer.victim is not None, "the run ended before a worker was killed"
    assert killer.victim not in killer.workers
    assert len(killer.workers) == killer.cluster.workers
    assert {fault.label for fault in FAULTS} <= {row[1] for row in rows}, "a fault never fired"
    # Every fault met a request some operation sent, and was charged to it.
    assert all("unattributed" not in str(row[4]) for row in rows), rows
    checker.assert_clean()
    assert checker.verdict.applied_twice == 0
    assert checker.verdict.lost == 0


def test_chaos_sixty_four_adds_neither_apply_twice_nor_get_lost(
    pool: ProcessPoolExecutor,
    cluster: PlacementCluster,
    admin: PlacementAdmin,
    fault_table: list[list[object]],
) -> None:
    started = time.monotonic()
    checker, proxy, killer = under_chaos(cluster, lambda url: same_consumer_adds(pool, url, admin))
    title = f"{cluster.database}: {ADDS} adds on one consumer"
    assert_survived(title, checker, proxy, killer, fault_table, time.monotonic() - started)
    assert len(checker.ops) == ADDS
    print(f"killed worker cut {sum(label == KILLED for _, label in proxy.injected())} request(s)")


def test_chaos_storm_leaves_what_the_last_successes_wrote(
    pool: ProcessPoolExecutor,
    cluster: PlacementCluster,
    admin: PlacementAdmin,
    fault_table: list[list[object]],
) -> None:
    started = time.monotonic()
    checker, proxy, killer = under_chaos(cluster, lambda url: storm(pool, url, admin, STORM_SEED))
    title = f"{cluster.database}: storm, seed {STORM_SEED}"
    for line in placement_findings(checker, cluster):
        print(f"Placement finding: {line}")
    assert_survived(title, checker, proxy, killer, fault_table, time.monotonic() - started)
