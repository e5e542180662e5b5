"""Chaos on the provider side: agents, operators and schedulers through the fault proxy.

The Galera matrix's provider workload (``tests/galera/provider_workers.py``: agents reconciling
their two-provider trees with ``merge=True`` and a growing VCPU total, operators adding traits
and aggregates to the same providers, schedulers claiming fresh consumers on them, two movers
racing on the same moves) runs beside a small claim/add/release storm, all through the chaos
suite's proxy: every 7th write's answer dropped after the commit, every 11th answered 500 after
the commit, every 13th reset before it is forwarded, every 5th read answered 503, on every
path (inventories, traits, aggregates and allocations alike), and one gunicorn worker
SIGKILLed once the run is busy.

Then everything is read back from the cluster itself, not through the proxy, and judged with
the Galera matrix's judge (``judge_node``): every claim and storm consumer, every provider's
usages against the sum of its allocations, every operator's trait and aggregate still there
(nothing clobbered by an agent's merge, nothing a definite failure left behind), each VCPU
total one its agent's latest successes (or a later attempt) wrote, every move applied once.
This module adds the trees' shape (each child still under its root, nothing else in the tree)
and holds every operation to the outcomes the README promises: success, ``OutcomeUnknown`` or
``PlacementUnavailable`` only where a fault or a server 5xx met it, ``GenerationConflict`` once
the policy gave up, and a move's ``NothingToMove`` / ``ConsumerChanged``.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import pytest

from reportclient.testing import PlacementAdmin, PlacementCluster
from tests.galera.matrix import Cell, arrange, judge_node, storm_steps
from tests.galera.provider_workers import TRAITS, ProviderPlan, run_providers
from tests.races.chaos import (
    FAULT_HEADERS,
    FAULTS,
    RuleScheduler,
    TracingProxy,
    WorkerKiller,
    fault_rows,
)
from tests.races.checker import OK, Checker, Op, rows_printed_at_end, table
from tests.races.runner import GRACE, GUARD, THREADS, deal
from tests.races.workers import Phase, Plan, run_plan

pytestmark = pytest.mark.functional

#: The chaos suite's faults, on every path: provider writes meet them as claims do.
PROVIDER_FAULTS = tuple(dataclasses.replace(fault, path="/") for fault in FAULTS)
#: Writes relayed before a worker is killed: early enough that the run is still busy.
KILL_AFTER = 20
#: One round per seed and database, each on fresh trees and consumers with its own SIGKILL.
SEEDS = (21, 22, 23)
#: Reconciles per agent: more than the Galera cell's 6, so agents reconcile all through the run.
RECONCILES = 12
#: Storm steps per thread (one process of THREADS threads) on the arranged storm consumers.
STORM_STEPS = 6
#: Categories shown beside "applied twice" and "lost" (a broken tree counts as clobbered).
EXTRA = ("clobbered", "phantom", "resurrected")
#: What each provider-side operation may end in besides success.
#: PlacementOverloaded: the client's retry budget, spent on the injected faults, refused a
#: retry of a write that cannot have landed (the state judges still check the data).
TYPED = frozenset(
    {"OutcomeUnknown", "PlacementUnavailable", "GenerationConflict", "PlacementOverloaded"}
)
ALLOWED = {
    "reconcile": TYPED,
    "add_trait": TYPED,
    "add_aggregate": TYPED,
    "claim": TYPED,
    "move": TYPED | {"NothingToMove", "ConsumerChanged"},
}
#: Outcomes that say no answer proved what happened: a fault or a server 5xx must explain them.
UNANSWERED = frozenset({"OutcomeUnknown", "PlacementUnavailable"})


@pytest.fixture(scope="module")
def provider_fault_table() -> Iterator[list[list[object]]]:
    """Rows of the per-fault table, printed when the module ends (visible with ``-s``)."""
    title = "Provider chaos: faults injected through the proxy, and what became of them"
    yield from rows_printed_at_end(title, [*FAULT_HEADERS, *EXTRA])


def run_cell(
    pool: ProcessPoolExecutor, cluster: PlacementCluster, admin: PlacementAdmin, seed: int
) -> tuple[Cell, TracingProxy, WorkerKiller]:
    """Arrange as the Galera matrix does, then run the provider workload and a storm under chaos."""
    setup = arrange(admin, seed)
    cell = Cell(cluster.database, "chaos", setup)
    port = int(cluster.url.rsplit(":", 1)[1])
    with TracingProxy(upstream_port=port, faults=PROVIDER_FAULTS) as proxy:
        scheduler = RuleScheduler(proxy, PROVIDER_FAULTS)
        killer = WorkerKiller(cluster, proxy, KILL_AFTER)
        scheduler.start()
        killer.start()
        try:
            start_at = time.time() + 0.5
            deadline = start_at + GUARD
            steps = storm_steps(setup, seed, THREADS * STORM_STEPS)
            storm = Plan(proxy.url, "storm", [Phase(deal(steps, THREADS))], start_at, deadline)
            plan = ProviderPlan(
                proxy.url, setup.trees, setup.aggregates, setup.claims, setup.moves,
                RECONCILES, start_at, deadline,
            )  # fmt: skip
            storm_future = pool.submit(run_plan, storm)
            provider_future = pool.submit(run_providers, plan)
            report = storm_future.result(timeout=GUARD + GRACE)
            cell.provider_ops = provider_future.result(timeout=GUARD + GRACE)
        finally:
            scheduler.stop()
            killer.stop()
    assert report.not_run == 0, f"wall-clock guard ({GUARD:g} s) tripped"
    cell.consumer_ops = list(report.ops)
    cell.injected_proxy = proxy.injected()
    return cell, proxy, killer


def judge_trees(admin: PlacementAdmin, cell: Cell) -> list[str]:
    """Each tree still holds exactly its root and its child, the child under the root."""
    found = []
    for root, child in cell.setup.trees:
        listed = admin.request("GET", f"/resource_providers?in_tree={root}").json()
        parents = {rp["uuid"]: rp["parent_provider_uuid"] for rp in listed["resource_providers"]}
        if parents != {root: None, child: root}:
            found.append(f"providers clobbered: tree of {root} reads {parents}")
    return found


def judge_outcomes(cell: Cell, injected: set[str]) -> list[str]:
    """Every operation ended in a promised outcome; an unanswered one met a fault or a 5xx."""
    found = [
        f"{op.kind} {op.subject} {op.value}: {op.outcome} {op.detail}"
        for op in cell.provider_ops
        if op.outcome != OK and op.outcome not in ALLOWED[op.kind]
    ]
    logged = [
        (f"{p.kind} {p.subject}", p.outcome, p.request_id, p.detail) for p in cell.provider_ops
    ]
    logged += [(f"storm {o.kind} {o.consumer}", o.outcome, o.request_id, o.detail)
               for o in cell.consumer_ops]  # fmt: skip
    for what, outcome, rid, detail in logged:
        # A server's own 5xx (PostgreSQL's deadlock 500) is a fault no proxy injected.
        if outcome in UNANSWERED and rid not in injected and "-> 5" not in detail:
            found.append(f"{what}: {outcome} met no fault: {detail}")
    return found


def charged(cell: Cell, counts: dict[str, Counter[str]], admin: PlacementAdmin) -> Checker:
    """All operations as one log for :func:`fault_rows`, each typed error named with its kind.

    The Galera judge counts violations per workload, not per operation, so each is charged to
    every kind of fault: an upper bound, whose zeros are exact.
    """
    checker = Checker(admin, [])
    for p in cell.provider_ops:
        outcome = OK if p.outcome == OK else f"{p.kind} {p.outcome}"
        checker.ops.append(Op(p.kind, p.subject, {}, outcome, p.start, p.end, "p", p.request_id))
    for op in cell.consumer_ops:
        outcome = OK if op.outcome == OK else f"storm {op.outcome}"
        checker.ops.append(dataclasses.replace(op, outcome=outcome))
    for workload, found in counts.items():
        for category, n in found.items():
            for _ in range(n):
                checker.verdict.fail(category, "", workload)
    return checker


def excerpt(cell: Cell, evidence: list[str]) -> str:
    """The log of every operation on a provider or consumer some evidence names, by start."""
    text = "\n".join(evidence)
    logged = [
        (p.start, p.end, p.kind, p.subject, p.value, p.outcome, p.request_id, p.detail)
        for p in cell.provider_ops
        if p.subject in text or (isinstance(p.value, str) and p.value in text)
    ] + [
        (o.start, o.end, o.kind, o.consumer, o.args, o.outcome, o.request_id, o.detail)
        for o in cell.consumer_ops if o.consumer in text
    ]  # fmt: skip
    lines = [
        f"  {start:.3f}-{end:.3f} {kind} {who} {what} {outcome} {rid} {detail[:200]}"
        for start, end, kind, who, what, outcome, rid, detail in sorted(logged, key=str)
    ]
    return "\n".join(lines[:80])


@pytest.mark.parametrize("seed", SEEDS)
def test_provider_chaos_loses_clobbers_and_applies_nothing_twice(
    seed: int,
    pool: ProcessPoolExecutor,
    cluster: PlacementCluster,
    admin: PlacementAdmin,
    provider_fault_table: list[list[object]],
) -> None:
    started = time.monotonic()
    cell, proxy, killer = run_cell(pool, cluster, admin, seed)
    seconds = time.monotonic() - started
    setup = cell.setup
    expected = len(setup.trees) * RECONCILES + 2 * len(TRAITS) + len(setup.claims)
    expected += 2 * len(setup.moves)
    assert len(cell.provider_ops) == expected, "a provider thread did not finish"

    # One database, no Galera: no deadlock retry is excused. Allocation rows Placement left
    # without a consumer row (a failed write deleting the consumer it auto-created while a
    # racing move filled it; doc/source/galera.rst) are read from the database itself, and
    # a failure is moved to Placement's findings only where those rows account for all of it.
    verdict = judge_node(admin, cell, orphans=cluster.orphaned_allocations())
    counts, evidence = verdict.counts, list(verdict.evidence)
    for workload, line in verdict.findings:
        print(f"Placement finding ({workload}): {line}")
    tree_evidence = judge_trees(admin, cell)
    counts["providers"]["clobbered"] += len(tree_evidence)
    evidence += tree_evidence
    injected = {rid for rid, _ in cell.injected_proxy}
    evidence += judge_outcomes(cell, injected)

    title = f"{cluster.database}: providers, seed {seed}"
    checker = charged(cell, counts, admin)
    rows = fault_rows(title, checker, proxy, extra=EXTRA)
    provider_fault_table.extend(rows)
    met = Counter(
        (p.kind, p.outcome, p.request_id in injected) for p in cell.provider_ops
    ) + Counter((f"storm {op.kind}", op.outcome, op.request_id in injected)
                for op in cell.consumer_ops)  # fmt: skip
    print(f"\n{title}: {seconds:.1f} s, worker {killer.victim} SIGKILLed")
    outcomes = [[k, o, "yes" if m else "no", n] for (k, o, m), n in sorted(met.items())]
    print(table(["operation", "outcome", "met a fault", "count"], outcomes))
    print(table([*FAULT_HEADERS, *EXTRA], rows))

    assert killer.victim is not None, "the run ended before a worker was killed"
    assert killer.victim not in killer.workers
    assert len(killer.workers) == cluster.workers
    assert {fault.label for fault in PROVIDER_FAULTS} <= {row[1] for row in rows}, rows
    # Every fault that met a request carrying a request id was charged to the operation that
    # sent it (the table's "unattributed" counts also the requests that carried none).
    sent = {op.request_id for op in checker.ops}
    assert not [(rid, label) for rid, label in cell.injected_proxy if rid and rid not in sent]
    assert not evidence, (
        f"seed {seed} on {cluster.database}:\n" + "\n".join(evidence)
        + f"\noperations on what it names:\n{excerpt(cell, evidence)}"
    )  # fmt: skip
    # KNOWN CLIENT BUG, left failing on purpose: reconcile's tree listing
    # (reportclient/_engine/reconcile.py, list_trees: list_providers(in_tree=anchor)) sends no
    # global request id, so an operator cannot tie that GET to the reconcile that sent it, and
    # a fault meeting it is charged to nobody. Every request an operation sends carries its id.
    anonymous = Counter((method, label) for rid, method, label in proxy.trace if not rid)
    assert not anonymous, f"requests without their operation's request id: {dict(anonymous)}"
