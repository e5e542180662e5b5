"""One cell of the Galera matrix: arrange, run four workloads under one fault, judge on every node.

The workloads run together on the spawn pool, through a :class:`~tests.galera.faults.
GaleraProxy` in front of HAProxy: two processes race claims, adds and releases on the same
consumers (``consumers``), one adds to a single consumer from four threads (``adds``), and one
runs the provider side (``providers``: agents reconciling trees, operators adding traits and
aggregates, schedulers claiming) with two movers racing on the same moves (``moves``).

Once the fault is recovered and every node is Synced at one seqno, everything is read back
from *each* Placement host directly (each reads its own node) and judged there with the race
suite's checker; the nodes must also agree table by table (``CHECKSUM TABLE``). The reads are
causal: every node's ``wsrep_last_committed`` is the same before and after the judge (else it
judges again), so no node can be read while it still applies a write set. What Placement
itself broke, proven from its log and its rows, is counted apart (:mod:`tests.galera.findings`).
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from reportclient.testing import GaleraPlacement, PlacementAdmin
from tests.galera.faults import Window
from tests.galera.findings import (
    bypassed,
    check_with_orphans,
    explain_adds,
    explain_usages,
    explained_by,
    refused_but_landed,
)
from tests.galera.provider_workers import POp, ProviderPlan, run_providers
from tests.races.checker import OK, Checker, Op, uncertain
from tests.races.checker import total as vcpus
from tests.races.runner import THREADS, deal, new_id, providers
from tests.races.workers import Phase, Plan, Step, raw_body, run_plan

WORKLOADS = ("consumers", "adds", "providers", "moves")
HEADERS = [
    "mode", "fault", "workload", "injected", "met", "recovered", "typed error",
    "applied twice", "lost", "clobbered", "resurrected", "nodes consistent", "placement",
]  # fmt: skip
#: Times the judge reads every node again when a node committed something while it read.
JUDGE_ATTEMPTS = 3
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
    #: Global request ids whose allocation write Placement retried after a deadlock.
    retried: set[str] = field(default_factory=set)
    #: consumer -> requests whose failed write deleted it as "auto-created" (Placement's log).
    cleanups: dict[str, set[str]] = field(default_factory=dict)
    #: Racing consumers' writes a host ran after HAProxy answered them itself (``late_writes``).
    late: list[Op] = field(default_factory=list)
    #: workload -> category -> max count over the nodes
    failures: dict[str, Counter[str]] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    #: The consumers and providers a client failure on any node is about.
    failed: set[str] = field(default_factory=set)
    #: workload -> Placement-side findings (max over the nodes), and their evidence
    findings: Counter[str] = field(default_factory=Counter)
    finding_lines: list[str] = field(default_factory=list)
    consistent: bool = True
    #: The seqno every node had applied when it was judged.
    judged_at: int = -1
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


@dataclass
class NodeVerdict:
    """What one host's reads showed: client failures, Placement's findings, what it read."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    findings: list[tuple[str, str]] = field(default_factory=list)
    snapshot: Any = None
    #: The consumers and providers a client failure is about.
    subjects: set[str] = field(default_factory=set)

    def fail(self, workload: str, category: str, line: str, *subjects: str) -> None:
        """Count one client failure; ``subjects``: the consumers or providers it is about."""
        self.counts.setdefault(workload, Counter())[category] += 1
        self.evidence.append(f"{workload} {category}: {line}")
        self.subjects.update(s for s in subjects if s)


def judge_node(
    admin: PlacementAdmin, cell: Cell, orphans: dict[str, dict[str, int]]
) -> NodeVerdict:
    """Every workload's invariants as read from one host; also what it read (for comparison).

    :param orphans: the node's allocation rows without a consumer row, read causally.
    """
    setup = cell.setup
    node = NodeVerdict({w: Counter() for w in WORKLOADS})

    def usages(workload: str, message: str) -> bool:
        finding = explain_usages(message, orphans)
        if finding is not None:
            node.findings.append((workload, finding))
        return finding is not None

    storm = Checker(admin, setup.storm_rps)
    storm.record(cell.consumer_ops)
    storm.read_back()
    lines, _ = check_with_orphans(storm, orphans, cell.cleanups, storm.check_registers)
    node.findings += [("consumers", line) for line in lines]
    risen = _resurrected(storm)
    storm_bypassed = bypassed(cell.consumer_ops, cell.retried)
    emptied = refused_but_landed(cell.consumer_ops, cell.retried, storm.final)
    landed_late = explained_by(storm, cell.late, Checker.check_registers)
    for category, who, message in storm.verdict.failures:
        if category == "usages" and usages("consumers", message):
            continue
        if who in emptied and category == "lost":
            line = f"deadlock retry landed a refused release of {who}, so {category}: {message}"
            node.findings.append(("consumers", line))
            continue
        if who in storm_bypassed:
            # Placement answered two writes on this consumer for one generation: its history
            # is not one the client could be judged against.
            gens = sorted(storm_bypassed[who])
            line = f"deadlock retry bypassed generation {gens} of {who}, so {category}: {message}"
            node.findings.append(("consumers", line))
            continue
        if who in landed_late:
            writes = "; ".join(op.detail for op in landed_late[who])
            line = f"a cut write ran later ({writes}), so {category}: {message}"
            node.findings.append(("consumers", line))
            continue
        if who in risen and category in ("applied twice", "lost"):
            category = "resurrected"
        node.fail("consumers", category, f"{who} {message}", who)
        node.evidence.append(f"consumers log of {who}: {_ops_log(cell, who)}")

    adds = Checker(admin, [setup.add_rp])
    adds.created.add(setup.add_consumer)
    adds.record(cell.add_ops)
    adds.read_back()
    lines, _ = check_with_orphans(
        adds, orphans, cell.cleanups,
        lambda: adds.check_adds(setup.add_consumer, {setup.add_rp: {"VCPU": 1}}, 1),
    )  # fmt: skip
    node.findings += [("adds", line) for line in lines]
    adds_bypassed = bypassed(cell.add_ops, cell.retried).get(setup.add_consumer, {})
    explained = explain_adds(adds, setup.add_consumer, 1, 1, adds_bypassed)
    for category, who, message in adds.verdict.failures:
        if category == "usages" and usages("adds", message):
            continue
        if explained and category in ("lost", "generations"):
            gens = sorted(adds_bypassed)
            line = f"deadlock retry bypassed generation {gens} of {who}, so {category}: {message}"
            node.findings.append(("adds", line))
            continue
        node.fail("adds", category, f"{who} {message}", who)
    if node.counts["adds"]:
        node.evidence.append(f"adds log: {_adds_log(cell)}")

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
    lines, as_read = check_with_orphans(sched, orphans, cell.cleanups, sched.check_claims)
    node.findings += [("providers", line) for line in lines]
    for category, who, message in sched.verdict.failures:
        if category == "usages" and usages("providers", message):
            continue
        node.fail("providers", category, f"{who} {message}", who)

    fields: dict[str, Any] = {}
    for rp in rps:
        traits = set(admin.request("GET", f"/resource_providers/{rp}/traits").json()["traits"])
        aggs = set(
            admin.request("GET", f"/resource_providers/{rp}/aggregates").json()["aggregates"]
        )
        total = admin.inventory(rp).get("VCPU", {}).get("total")
        fields[rp] = (sorted(traits), sorted(aggs), total)
        root = next(tree[0] for tree in setup.trees if rp in tree)
        _judge_fields(cell.provider_ops, rp, root, (traits, aggs, total), node)

    for source, target in setup.moves:
        ops = [p for p in cell.provider_ops if p.kind == "move" and p.subject == source]
        src, dst = sched.final[source], sched.final[target]
        moved = {}, setup.move_allocs[source]
        stayed = setup.move_allocs[source], {}
        allowed = []
        if any(p.outcome == OK for p in ops):
            allowed.append(moved)
        elif any(p.outcome not in ("NothingToMove", "ConsumerChanged", "GenerationConflict",
                                    "PlacementUnavailable", "PlacementOverloaded")
                 for p in ops):  # fmt: skip
            allowed += [moved, stayed]
        else:
            allowed.append(stayed)
        # A target whose consumer row Placement deleted reads empty: judged both ways.
        if (src, dst) not in allowed and (as_read[source], as_read[target]) not in allowed:
            category = "applied twice" if src and dst else "lost"
            outcomes = [p.outcome for p in ops]
            line = f"{source}->{target} holds {src}, {dst}; {outcomes}"
            node.fail("moves", category, line, source, target)
    node.snapshot = (
        storm.final,
        adds.final,
        fields,
        {c: sched.final[c] for p in setup.moves for c in p},
    )
    return node


def _judge_fields(
    ops: list[POp], rp: str, root: str, read: tuple[set[str], set[str], Any], node: NodeVerdict
) -> None:
    """Nobody removes a trait or an aggregate; a provider's total is its agent's last write."""
    traits, aggs, total = read
    for op in ops:
        present = {"add_trait": traits, "add_aggregate": aggs}.get(op.kind)
        if present is None or op.subject != rp:
            continue
        if op.outcome == OK and op.value not in present:
            line = f"{op.kind} {op.value} on {rp} ok, now {present}"
            node.fail("providers", "clobbered", line, rp)
        elif op.outcome != OK and not uncertain_pop(op) and op.value in present:
            node.fail("providers", "phantom", f"{op.kind} {op.value} {op.outcome} on {rp}", rp)
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
            node.fail("providers", "clobbered", f"{rp} VCPU total {total}, allowed {allowed}", rp)


def _adds_log(cell: Cell) -> str:
    """The adds as a line to read a failure by: request, outcome, generation, amount, retried."""
    entries = []
    for op in sorted(cell.add_ops, key=lambda op: op.start):
        amount = vcpus(op.result if op.outcome == OK else op.sent)
        retried = " retried" if op.request_id in cell.retried else ""
        entries.append(f"{op.request_id[4:12]} {op.outcome} g{op.generation} v{amount}{retried}")
    return "; ".join(entries)


def _ops_log(cell: Cell, consumer: str) -> str:
    """One racing consumer's operations in start order, to read a failure by."""
    ops = sorted((op for op in cell.consumer_ops if op.consumer == consumer), key=lambda o: o.start)
    t0 = ops[0].start if ops else 0.0
    entries = []
    for op in ops:
        marks = " retried" if op.request_id in cell.retried else ""
        marks += " deleted-it" if op.request_id in cell.cleanups.get(consumer, ()) else ""
        held = op.result if op.outcome == OK else op.sent
        entries.append(
            f"{op.request_id[4:12]} {op.kind} {op.start - t0:.2f}-{op.end - t0:.2f}s "
            f"{op.outcome} g{op.generation} {held}{marks}"
        )
    return "; ".join(entries)


def uncertain_pop(op: POp) -> bool:
    """Whether a provider-side operation's write may or may not have landed."""
    return op.outcome != OK and op.outcome not in (
        "GenerationConflict", "PlacementUnavailable", "InventoryInUse", "ProviderNotFound",
        "PlacementOverloaded",
    )  # fmt: skip


def judge(cluster: GaleraPlacement, cell: Cell) -> None:
    """Judge ``cell`` on every node; keep the worst count per category and the evidence.

    Galera applies write sets asynchronously, so a node's answer is only the cluster's when
    nothing is left to apply: every node must report one ``wsrep_last_committed`` before the
    reads and the same after them (a request still running in a host, its client long gone,
    may commit late). Otherwise the cluster settles and every node is read again.
    """
    seqnos: list[int] = []
    for _ in range(JUDGE_ATTEMPTS):
        cluster.wait_settled()
        seqnos = cluster.last_committed()
        verdicts, sums = [], []
        for index, host in enumerate(cluster.hosts):
            orphans = cluster.orphaned_allocations(index)
            with PlacementAdmin(host.url, cluster.token, timeout=60.0) as admin:
                verdicts.append(judge_node(admin, cell, orphans))
            sums.append(cluster.checksums(index))
        after = cluster.last_committed()
        if after == seqnos and len(set(seqnos)) == 1:
            break
    else:
        cell.evidence.append(f"no settled state to judge: nodes at {seqnos}, then {after}")
    cell.judged_at = seqnos[0]
    for index, node in enumerate(verdicts):
        for workload, found in node.counts.items():
            mine = cell.failures.setdefault(workload, Counter())
            for category, n in found.items():
                mine[category] = max(mine[category], n)
        cell.evidence += [f"host{index + 1}: {line}" for line in node.evidence]
        cell.failed |= node.subjects
        for workload, n in Counter(w for w, _ in node.findings).items():
            cell.findings[workload] = max(cell.findings[workload], n)
        cell.finding_lines += [f"host{index + 1}: {w} {line}" for w, line in node.findings]
    snapshots = [node.snapshot for node in verdicts]
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
            "yes" if cell.consistent else "NO", cell.findings[workload],
        ])  # fmt: skip
    return out
