"""One cell of the Galera matrix: arrange, run four workloads under one fault, judge on every node.

The workloads run together on the spawn pool, through a :class:`~tests.galera.faults.
GaleraProxy` in front of HAProxy: two processes race claims, adds and releases on the same
consumers (``consumers``), one adds to a single consumer from four threads (``adds``), and one
runs the provider side (``providers``: agents reconciling trees, operators adding traits and
aggregates, schedulers claiming) with two movers racing on the same moves (``moves``).

Once the fault is recovered and every node is Synced at one seqno, everything is read back
from *each* Placement host directly (each reads its own node) and judged there with the race
suite's checker; the nodes must also agree table by table (``CHECKSUM TABLE``).
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from reportclient.testing import GaleraPlacement, PlacementAdmin
from tests.galera.faults import Window
from tests.galera.provider_workers import POp, ProviderPlan, run_providers
from tests.races.checker import OK, Checker, Op, uncertain
from tests.races.runner import THREADS, deal, new_id, providers
from tests.races.workers import Phase, Plan, Step, raw_body, run_plan

WORKLOADS = ("consumers", "adds", "providers", "moves")
HEADERS = [
    "mode", "fault", "workload", "injected", "met", "recovered", "typed error",
    "applied twice", "lost", "clobbered", "resurrected", "nodes consistent",
]  # fmt: skip
#: Seconds a workload may run before its steps stop starting.
GUARD = 150.0
CONSUMERS = 8
STORM_STEPS = 6
ADDS = 24
TREES = 2
RECONCILES = 6
CLAIMS = 12
MOVES = 4
STORM_MIX = {"claim": 35, "add": 40, "release": 25}


@dataclass
class Setup:
    """What the parent arranged before the run."""

    storm_rps: list[str]
    consumers: list[str]
    add_rp: str
    add_consumer: str
    trees: list[tuple[str, str]]
    aggregates: list[str]
    claims: list[tuple[str, str]]
    moves: list[tuple[str, str]]
    move_allocs: dict[str, dict[str, dict[str, int]]]


@dataclass
class Cell:
    """One mode x fault run: the operations, the fault's window and the per-node verdicts."""

    mode: str
    fault: str
    setup: Setup
    consumer_ops: list[Op] = field(default_factory=list)
    add_ops: list[Op] = field(default_factory=list)
    provider_ops: list[POp] = field(default_factory=list)
    window: Window = field(default_factory=Window)
    injected_proxy: list[tuple[str, str]] = field(default_factory=list)
    cert_failures: int = 0
    #: workload -> category -> max count over the nodes
    failures: dict[str, Counter[str]] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    consistent: bool = True
    seconds: float = 0.0


def arrange(admin: PlacementAdmin, seed: int) -> Setup:
    """Fresh providers and consumers for one cell; the moves' sources are claimed here."""
    import random

    rng = random.Random(seed)
    storm_rps = providers(admin, 2, 512)
    (add_rp,) = providers(admin, 1, 256)
    add_consumer = new_id()
    response = admin.put_allocations(add_consumer, raw_body({add_rp: {"VCPU": 1}}, None))
    assert response.status_code == 204, response.text
    inventory = {"VCPU": {"total": 64, "max_unit": 64}}
    trees = []
    for _ in range(TREES):
        root = admin.create_provider(inventory=inventory)
        child = admin.create_provider(inventory=inventory, parent=root)
        trees.append((root, child))
    rps = [rp for tree in trees for rp in tree]
    claims = [(new_id(), rng.choice(rps)) for _ in range(CLAIMS)]
    moves, move_allocs = [], {}
    for _ in range(MOVES):
        source = new_id()
        allocs = {rng.choice(rps): {"VCPU": 2}}
        assert admin.put_allocations(source, raw_body(allocs, None)).status_code == 204
        moves.append((source, new_id()))
        move_allocs[source] = allocs
    return Setup(
        storm_rps, [new_id() for _ in range(CONSUMERS)], add_rp, add_consumer, trees,
        [new_id() for _ in range(3)], claims, moves, move_allocs,
    )  # fmt: skip


def storm_steps(setup: Setup, seed: int, count: int) -> list[Step]:
    import random

    rng = random.Random(seed)
    kinds = rng.choices(list(STORM_MIX), weights=list(STORM_MIX.values()), k=count)
    return [
        Step(k, rng.choice(setup.consumers),
             {} if k == "release" else {rng.choice(setup.storm_rps): {"VCPU": 1}})
        for k in kinds
    ]  # fmt: skip


def run_workloads(pool: ProcessPoolExecutor, url: str, setup: Setup, seed: int, cell: Cell) -> None:
    """Submit all four workloads at once and collect every operation they logged."""
    start_at = time.time() + 0.5
    deadline = start_at + GUARD
    storm = [storm_steps(setup, seed + i, THREADS * STORM_STEPS) for i in range(2)]
    plans = [Plan(url, f"storm{i}", [Phase(deal(s, THREADS))], start_at, deadline) for i, s in
             enumerate(storm)]  # fmt: skip
    adds = [Step("add", setup.add_consumer, {setup.add_rp: {"VCPU": 1}}) for _ in range(ADDS)]
    plans.append(Plan(url, "adds", [Phase(deal(adds, THREADS))], start_at, deadline))
    futures = [pool.submit(run_plan, plan) for plan in plans]
    provider_plan = ProviderPlan(url, setup.trees, setup.aggregates, setup.claims, setup.moves,
                                 RECONCILES, start_at, deadline)  # fmt: skip
    provider_future = pool.submit(run_providers, provider_plan)
    reports = [future.result(timeout=GUARD + 120) for future in futures]
    cell.provider_ops = provider_future.result(timeout=GUARD + 120)
    assert sum(r.not_run for r in reports) == 0, "wall-clock guard tripped"
    for report in reports[:2]:
        cell.consumer_ops.extend(report.ops)
    cell.add_ops.extend(reports[2].ops)


# -- judging on one node -----------------------------------------------------------------------


def _resurrected(checker: Checker) -> set[str]:
    """Consumers whose last unfollowed operations were all releases, yet hold allocations."""
    found = set()
    by_consumer: dict[str, list[Op]] = {}
    for op in checker.ops:
        by_consumer.setdefault(op.consumer, []).append(op)
    for consumer, ops in by_consumer.items():
        ok = [op for op in ops if op.outcome == OK]
        if not ok or not checker.final.get(consumer):
            continue
        latest_start = max(op.start for op in ok)
        last = [op for op in ops if (op.outcome == OK or uncertain(op)) and op.end >= latest_start]
        if last and all(op.kind == "release" for op in last):
            found.add(consumer)
    return found


def judge_node(admin: PlacementAdmin, cell: Cell) -> tuple[dict[str, Counter[str]], Any, list[str]]:
    """Every workload's invariants as read from one host; also what it read (for comparison)."""
    setup = cell.setup
    counts: dict[str, Counter[str]] = {w: Counter() for w in WORKLOADS}
    evidence: list[str] = []

    storm = Checker(admin, setup.storm_rps)
    storm.record(cell.consumer_ops)
    storm.read_back()
    storm.check_registers()
    risen = _resurrected(storm)
    for category, who, message in storm.verdict.failures:
        if who in risen and category in ("applied twice", "lost"):
            category = "resurrected"
        counts["consumers"][category] += 1
        evidence.append(f"consumers {category}: {who} {message}")

    adds = Checker(admin, [setup.add_rp])
    adds.created.add(setup.add_consumer)
    adds.record(cell.add_ops)
    adds.read_back()
    adds.check_adds(setup.add_consumer, {setup.add_rp: {"VCPU": 1}}, base_generation=1)
    for category, who, message in adds.verdict.failures:
        counts["adds"][category] += 1
        evidence.append(f"adds {category}: {who} {message}")

    rps = [rp for tree in setup.trees for rp in tree]
    claim_ops = [
        Op("claim", p.subject, {p.value: {"VCPU": 1}}, p.outcome, p.start, p.end, "p",
           p.request_id, detail=p.detail)
        for p in cell.provider_ops if p.kind == "claim"
    ]  # fmt: skip
    sched = Checker(admin, rps)
    sched.created.update(c for pair in setup.moves for c in pair)
    sched.record(claim_ops)
    sched.read_back()
    sched.check_claims()
    for category, who, message in sched.verdict.failures:
        counts["providers"][category] += 1
        evidence.append(f"providers {category}: {who} {message}")

    fields: dict[str, Any] = {}
    for rp in rps:
        traits = set(admin.request("GET", f"/resource_providers/{rp}/traits").json()["traits"])
        aggs = set(
            admin.request("GET", f"/resource_providers/{rp}/aggregates").json()["aggregates"]
        )
        total = admin.inventory(rp).get("VCPU", {}).get("total")
        fields[rp] = (sorted(traits), sorted(aggs), total)
        root = next(tree[0] for tree in setup.trees if rp in tree)
        _judge_fields(cell.provider_ops, rp, root, (traits, aggs, total), counts, evidence)

    for source, target in setup.moves:
        ops = [p for p in cell.provider_ops if p.kind == "move" and p.subject == source]
        src, dst = sched.final[source], sched.final[target]
        moved = {}, setup.move_allocs[source]
        stayed = setup.move_allocs[source], {}
        allowed = []
        if any(p.outcome == OK for p in ops):
            allowed.append(moved)
        elif any(p.outcome not in ("NothingToMove", "ConsumerChanged", "GenerationConflict",
                                    "PlacementUnavailable") for p in ops):  # fmt: skip
            allowed += [moved, stayed]
        else:
            allowed.append(stayed)
        if (src, dst) not in allowed:
            category = "applied twice" if src and dst else "lost"
            counts["moves"][category] += 1
            outcomes = [p.outcome for p in ops]
            evidence.append(f"moves {category}: {source}->{target} holds {src}, {dst}; {outcomes}")
    snapshot = (
        storm.final,
        adds.final,
        fields,
        {c: sched.final[c] for p in setup.moves for c in p},
    )
    return counts, snapshot, evidence


def _judge_fields(
    ops: list[POp], rp: str, root: str, read: tuple[set[str], set[str], Any],
    counts: dict[str, Counter[str]], evidence: list[str],
) -> None:  # fmt: skip
    """Nobody removes a trait or an aggregate; a provider's total is its agent's last write."""
    traits, aggs, total = read
    for op in ops:
        present = {"add_trait": traits, "add_aggregate": aggs}.get(op.kind)
        if present is None or op.subject != rp:
            continue
        if op.outcome == OK and op.value not in present:
            counts["providers"]["clobbered"] += 1
            evidence.append(f"providers clobbered: {op.kind} {op.value} on {rp} ok, now {present}")
        elif op.outcome != OK and not uncertain_pop(op) and op.value in present:
            counts["providers"]["phantom"] += 1
            evidence.append(f"providers phantom: {op.kind} {op.value} {op.outcome} on {rp}")
    recs = [op for op in ops if op.kind == "reconcile" and op.subject == root]
    if recs:
        ok = [op for op in recs if op.outcome == OK]
        latest = max((op.start for op in ok), default=float("-inf"))
        # A reconcile is several writes, not one: one that ended in an error
        # (even PlacementUnavailable, which says only that its last request
        # went unanswered) may have set the total before it failed.
        allowed = {op.value for op in recs if op.end >= latest}
        if not ok:
            allowed.add(64)
        if total not in allowed:
            counts["providers"]["clobbered"] += 1
            evidence.append(f"providers clobbered: {rp} VCPU total {total}, allowed {allowed}")


def uncertain_pop(op: POp) -> bool:
    """Whether a provider-side operation's write may or may not have landed."""
    return op.outcome != OK and op.outcome not in (
        "GenerationConflict", "PlacementUnavailable", "InventoryInUse", "ProviderNotFound",
    )  # fmt: skip


def judge(cluster: GaleraPlacement, cell: Cell) -> None:
    """Judge ``cell`` on every node; keep the worst count per category and the evidence."""
    snapshots, sums = [], []
    for index, host in enumerate(cluster.hosts):
        with PlacementAdmin(host.url, cluster.token, timeout=60.0) as admin:
            counts, snapshot, evidence = judge_node(admin, cell)
        for workload, found in counts.items():
            mine = cell.failures.setdefault(workload, Counter())
            for category, n in found.items():
                mine[category] = max(mine[category], n)
        cell.evidence += [f"host{index + 1}: {line}" for line in evidence]
        snapshots.append(snapshot)
        sums.append(cluster.checksums(index))
    cell.consistent = all(s == snapshots[0] for s in snapshots) and all(s == sums[0] for s in sums)
    if not cell.consistent:
        cell.evidence.append(f"nodes differ: checksums {sums}")


def rows(cell: Cell) -> list[list[object]]:
    """The table's rows for ``cell``, one per workload."""
    by_rid: dict[str, str] = {}
    for rid, label in cell.injected_proxy:
        by_rid[rid] = label
    groups: dict[str, list[tuple[str, str, float, float]]] = {
        "consumers": [(o.request_id, o.outcome, o.start, o.end) for o in cell.consumer_ops],
        "adds": [(o.request_id, o.outcome, o.start, o.end) for o in cell.add_ops],
        "providers": [(p.request_id, p.outcome, p.start, p.end) for p in cell.provider_ops
                      if p.kind != "move"],
        "moves": [(p.request_id, p.outcome, p.start, p.end) for p in cell.provider_ops
                  if p.kind == "move"],
    }  # fmt: skip
    out: list[list[object]] = []
    win = cell.window
    for workload in WORKLOADS:
        ops = groups[workload]
        if cell.fault == "lost answers":
            met = [o for o in ops if o[0] in by_rid]
            injected: object = sum(
                1 for rid, _ in cell.injected_proxy if rid in {o[0] for o in ops}
            )
        elif cell.fault == "none":
            met = ops  # the whole run: certification conflicts can hit any write
            injected = f"{cell.cert_failures} cert"
        else:
            met = [o for o in ops if o[3] >= win.start and o[2] <= (win.end or o[3])]
            injected = f"{win.events} {win.target}".strip()
        if cell.fault == "kill host after commit":
            met = [o for o in ops if o[0] in by_rid] or met
        ok = sum(o[1] == OK for o in met)
        errors = Counter(o[1] for o in met if o[1] != OK)
        typed = ", ".join(f"{k} {n}" for k, n in sorted(errors.items())) or "-"
        fails = cell.failures.get(workload, Counter())
        out.append([
            cell.mode, cell.fault, workload, injected, len(met), ok, typed,
            fails["applied twice"], fails["lost"],
            fails["clobbered"] + fails["phantom"], fails["resurrected"],
            "yes" if cell.consistent else "NO",
        ])  # fmt: skip
    return out
