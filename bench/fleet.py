"""Compute agents at fleet scale: what each agent costs Placement per period, and under claims.

Two workloads on the production shape (gunicorn workers over MariaDB or PostgreSQL):

**Fleet.** N agents per variant, each with its own client and its own tree: a root with
VCPU, MEMORY_MB and DISK_GB, two traits and an aggregate, and 0 to 2 children with
``CUSTOM_FLEET_DEV`` inventory. Each agent reconciles its tree once per 60 s period, in a
random order per period (oslo's periodic-task jitter). Periods run back to back in
*simulated* time: every client's clock (and nova's ``time.time`` inside its report client,
which drives ``resource_provider_association_refresh``) reads the simulated clock, which
moves 60 s per period; the staleness windows (300 s) are counted in that time, unscaled.
With ``--real-time`` periods are real seconds (``--period-seconds``, 6 by default) and the
windows are scaled by the same factor (5 periods: 30 s): every client reads the real
monotonic clock (nova its own ``time.time``), nova's ``[compute]
resource_provider_association_refresh`` is overridden to the scaled window for both nova
variants, and each agent runs as oslo's ``FixedIntervalLoopingCall`` after a random initial
delay: its reconcile starts at its offset within the period, the next one a period after
that start, or at once when the reconcile outlasted the period (an overrun, counted). The
window is exactly 5 periods, as nova's 300 s is of its 60 s period, so a tree proven in one
period is due again 5 periods later within the loop's drift: whether it is proven again
then or a period later depends on when each client stamps its proof.
Phases, in order: ``create`` (one period), ``settle`` (one window and a period: the first
proof past the window of what the create wrote, which a tree's ``Last-Modified`` cannot
give within its 5 s margin, so every written field is read once; a node pays it once
after each change of its own, and it is kept out of ``steady``), ``steady``, ``churn``
(5% of agents change a field each period), ``churn+claims`` and ``claims`` (schedulers
claim and release one VCPU at ``--claim-rate`` per second on the variant's roots while
its agents run). Variants:

* ``rc strict``: ``ProviderClient.reconcile(specs)``, the library default (every write
  proven: one listing and a read per managed field every period).
* ``rc agent``: ``reconcile(specs, max_staleness=300)``, the agent setting (the scaled
  window in real time).
* ``nova``: nova's resource tracker flow on ``SchedulerReportClient(adapter=...)``:
  ``get_provider_tree_and_ensure_root``, the description applied to the tree it returns,
  ``update_from_provider_tree``, redriven up to 4 times on ``ResourceProviderUpdateConflict``
  as ``_update_to_placement``'s ``@retrying.retry`` does. nova 34's tracker also calls
  ``get_allocations_for_provider_tree`` every period (one GET per provider and one per
  consumer on it); that is left out, so the nova rows are a lower bound of its cost.
* ``nova on reportclient``: the same tracker flow on ``reportclient.nova.SchedulerReportClient``
  (the library's drop-in for nova's client) over a ``PlacementClient`` on the agent's clock;
  its provider-tree view is proven again past nova's association refresh option. A second
  table gives its requests and Placement CPU per agent-period as a ratio of ``nova``'s.

After each phase x variant every provider is read back and compared with its description;
any difference makes the run exit non-zero.

**Starvation** (the measurement of the issue's item 3): one provider, claims and releases
at 10, 30 and 100 per second on it, and one writer changing a field back and forth as fast
as it can: success rate, p99 and requests per write of ``set_inventory``, ``set_traits``
and ``reconcile`` beside nova's ``set_inventory_for_provider`` and
``update_from_provider_tree`` (each nova write redriven up to 4 times, as its callers do).

Both tables print from the summaries ``bench.fleet_report`` makes of the cells, and the same
summaries are saved as JSON (``--json``, ``bench/results/fleet.json`` by default) and drawn
by ``--plot DIR``: requests and Placement CPU per agent-period, by phase and variant. A line
per phase x variant (and per starvation writer) on stderr says where the run is.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from keystoneauth1 import exceptions as ks_exc

import reportclient
from bench.cells.cluster import cluster_cpu_seconds
from bench.drivers.allocations import optional_nova
from bench.fleet_report import (
    NOVA,
    NOVA_RC,
    STARVATION_HEAD,
    Cell,
    render_fleet,
    render_ratios,
    starvation_line,
    summarise,
)
from bench.support.common import (
    MICROVERSION,
    PROJECT,
    RESULTS,
    USER,
    CountingAdapter,
    full_inventory,
    identity,
    machine_info,
    make_adapter,
    output_options,
    package_version,
    percentile,
    quiet_logging,
    save_results,
)
from bench.support.progress import Progress
from reportclient import PlacementClient, ProofAssumption, ProviderSpec
from reportclient.nova import SchedulerReportClient as RcSchedulerReportClient
from reportclient.testing import PlacementCluster

PERIOD = 60.0
WINDOW = 300.0
DEV = "CUSTOM_FLEET_DEV"
RC_STRICT, RC_AGENT = "rc strict", "rc agent"
#: The same two on a client that names every ProofAssumption: what the opt-in saves.
RC_AGENT_ASSUMED, NOVA_RC_ASSUMED = "rc agent assumed", "nova on reportclient assumed"
#: The variants that run nova's resource tracker flow (on nova's client, or the library's).
NOVA_FLOWS = (NOVA, NOVA_RC, NOVA_RC_ASSUMED)
#: The variants whose clients assume every other writer keeps to ProofAssumption's promises.
ASSUMED = (RC_AGENT_ASSUMED, NOVA_RC_ASSUMED)
PHASES = ("create", "settle", "steady", "churn", "churn+claims", "claims")
#: Periods of ``settle``: one window and one period, so every field the create wrote is
#: proven again once before ``steady`` is measured.
SETTLE_PERIODS = 6
AGGREGATES = [str(uuid.UUID(int=0xA66 << 64 | i)) for i in range(4)]


class StatusAdapter(CountingAdapter):  # type: ignore[misc]
    """Counts every request by (method, status), whether keystoneauth raises or not."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.status: Counter[tuple[str, int]] = Counter()

    def request(self, url: str, method: str, **kwargs: Any) -> Any:
        try:
            response = super().request(url, method, **kwargs)
        except ks_exc.HttpError as exc:
            with self.count_lock:
                self.status[(method, exc.http_status)] += 1
            raise
        with self.count_lock:
            self.status[(method, response.status_code)] += 1
        return response


class SimClock:
    """Simulated seconds, moved by the harness one period at a time."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class _NovaTime:
    """nova's report module's ``time``: the simulated clock for ``time.time()`` only."""

    def __init__(self, clock: SimClock) -> None:
        self._clock = clock

    def time(self) -> float:
        return self._clock()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@dataclass(frozen=True)
class Timing:
    """How periods pass: simulated (60 s, back to back) or real seconds, windows scaled."""

    real: bool = False
    period: float = PERIOD

    @property
    def window(self) -> float:
        """The staleness window: :data:`WINDOW`, scaled as the period is (5 periods)."""
        return WINDOW * self.period / PERIOD

    @property
    def refresh(self) -> int:
        """nova's ``resource_provider_association_refresh`` for the window (an IntOpt)."""
        return max(1, round(self.window))

    def describe(self) -> str:
        if not self.real:
            return (
                f"simulated time: {self.period:g} s periods back to back, "
                f"window {self.window:g} s (nova's association refresh: its default)"
            )
        return (
            f"real time: {self.period:g} s periods, window {self.window:g} s "
            f"(nova's [compute] resource_provider_association_refresh = {self.refresh})"
        )


# -- descriptions ---------------------------------------------------------------------------
@dataclass
class Node:
    """One provider of an agent's tree, as the agent describes it."""

    uuid: str
    name: str
    parent: str | None
    inventories: dict[str, int]
    traits: set[str]
    aggregates: set[str]


@dataclass
class Agent:
    """One compute agent: its tree, its client, and what its reconciles cost."""

    index: int
    nodes: list[Node]
    client: Any = None
    wire: StatusAdapter | None = None
    offset: float = 0.0
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    overruns: int = 0
    late: float = 0.0

    @property
    def root(self) -> str:
        return self.nodes[0].uuid

    @property
    def status(self) -> Counter[tuple[str, int]]:
        """The agent's requests by (method, status)."""
        assert self.wire is not None, "the agent's client is made with its wire"
        return self.wire.status


def describe_agent(variant: str, index: int) -> list[Node]:
    root = str(uuid.uuid4())
    tag = variant.replace(" ", "-")
    nodes = [
        Node(
            root,
            f"{tag}-cn{index}",
            None,
            {"VCPU": 64, "MEMORY_MB": 262144, "DISK_GB": 2000},
            {"HW_CPU_X86_AVX2", f"CUSTOM_FLEET_RACK{index % 4}"},
            {AGGREGATES[index % 4]},
        )
    ]
    for c in range(index % 3):
        nodes.append(
            Node(str(uuid.uuid4()), f"{tag}-cn{index}-dev{c}", root, {DEV: 4}, set(), set())
        )
    return nodes


def churn(node: Node, period: int) -> None:
    """One field change, alternating between inventory, traits and aggregates."""
    what = period % 3
    if what == 0 or node.parent is not None:
        key = "DISK_GB" if node.parent is None else DEV
        node.inventories[key] += 1
    elif what == 1:
        node.traits ^= {"CUSTOM_FLEET_CHURN"}
    else:
        node.aggregates = {AGGREGATES[(AGGREGATES.index(min(node.aggregates)) + 1) % 4]}


def specs_of(agent: Agent) -> list[ProviderSpec]:
    return [
        ProviderSpec(
            n.uuid,
            n.name,
            n.parent,
            {rc: full_inventory(t) for rc, t in n.inventories.items()},
            set(n.traits),
            set(n.aggregates),
        )
        for n in agent.nodes
    ]


# -- one agent period per variant ------------------------------------------------------------
def rc_period(agent: Agent, max_staleness: float | None) -> None:
    agent.client.providers.reconcile(specs_of(agent), max_staleness=max_staleness)


def nova_period(agent: Agent, nova: Any) -> None:
    context = SimpleNamespace(global_id=None)
    root = agent.nodes[0]
    for attempt in range(4):
        tree = agent.client.get_provider_tree_and_ensure_root(context, root.uuid, name=root.name)
        for node in agent.nodes[1:]:
            if not tree.exists(node.uuid):
                tree.new_child(node.name, root.uuid, uuid=node.uuid)
        for node in agent.nodes:
            tree.update_inventory(
                node.uuid, {rc: full_inventory(t) for rc, t in node.inventories.items()}
            )
            tree.update_traits(node.uuid, sorted(node.traits))
            tree.update_aggregates(node.uuid, sorted(node.aggregates))
        try:
            agent.client.update_from_provider_tree(context, tree)
            return
        except nova.exception.ResourceProviderUpdateConflict:
            if attempt == 3:
                raise


def agent_period(variant: str, agent: Agent, nova: Any, timing: Timing) -> None:
    """One period of one agent, as its variant runs it."""
    if variant in NOVA_FLOWS:
        nova_period(agent, nova)
    else:
        rc_period(agent, timing.window if variant in (RC_AGENT, RC_AGENT_ASSUMED) else None)


# -- read back -----------------------------------------------------------------------------
def differences(reader: PlacementClient, agents: list[Agent]) -> list[str]:
    """What Placement holds that differs from each agent's description."""
    out: list[str] = []
    providers = reader.providers
    for agent in agents:
        listed = {rp.uuid: rp for rp in providers.list_providers(in_tree=agent.root)}
        if set(listed) != {n.uuid for n in agent.nodes}:
            out.append(f"agent {agent.index}: tree {sorted(listed)}")
            continue
        for n in agent.nodes:
            rp = listed[n.uuid]
            inv = {rc: i.total for rc, i in providers.get_inventories(n.uuid).inventories.items()}
            traits = set(providers.get_traits(n.uuid).traits)
            aggs = set(providers.get_aggregates(n.uuid).aggregates)
            got = (rp.name, rp.parent_provider_uuid, inv, traits, aggs)
            want = (n.name, n.parent, n.inventories, n.traits, n.aggregates)
            if got != want:
                out.append(f"{n.uuid}: holds {got}, described {want}")
    return out


# -- claims --------------------------------------------------------------------------------
class Claimer:
    """Schedulers claiming one VCPU on random roots and releasing the oldest, at ``rate``/s."""

    def __init__(self, url: str, token: str, roots: list[str], rate: float, live: int) -> None:
        self.wire = make_adapter(url, token, StatusAdapter)
        self.client = PlacementClient(self.wire, microversion=MICROVERSION)
        self.roots, self.rate, self.live = roots, rate, live
        self.latencies: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._held: list[str] = []
        self._lock = threading.Lock()

    def _one(self) -> None:
        began = time.perf_counter()
        try:
            with self._lock:
                release = self._held.pop(0) if len(self._held) >= self.live else None
            if release is not None:
                self.client.release(release)
            else:
                consumer = str(uuid.uuid4())
                rp = random.choice(self.roots)
                self.client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
                with self._lock:
                    self._held.append(consumer)
        except reportclient.PlacementError:
            self.failures += 1
            return
        self.latencies.append(time.perf_counter() - began)

    @contextmanager
    def running(self, threads: int = 4) -> Iterator[None]:
        pool = ThreadPoolExecutor(threads)

        def pace() -> None:
            start, sent = time.perf_counter(), 0
            while not self._stop.is_set():
                due = start + sent / self.rate
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(self._one)
                sent += 1

        pacer = threading.Thread(target=pace, daemon=True)
        pacer.start()
        try:
            yield
        finally:
            self._stop.set()
            pacer.join()
            pool.shutdown(wait=True)
            self._stop.clear()

    def release_all(self) -> None:
        for consumer in self._held:
            self.client.release(consumer)
        self._held.clear()


# -- the fleet run ---------------------------------------------------------------------------
def make_agents(
    variant: str, n: int, url: str, token: str, clock: SimClock, nova: Any, timing: Timing
) -> list[Agent]:
    agents = []
    for i in range(n):
        agent = Agent(i, describe_agent(variant, i))
        agent.offset = random.uniform(0, timing.period)
        if variant == NOVA:
            agent.wire = make_adapter(url, token, StatusAdapter, raise_exc=False)
            agent.client = nova.SchedulerReportClient(adapter=agent.wire)
            agents.append(agent)
            continue
        agent.wire = make_adapter(url, token, StatusAdapter)
        # Simulated: the agent's offset within the period on the simulated clock. Real
        # time: the client's own default, the real monotonic clock.
        settings: dict[str, Any] = (
            {} if timing.real else {"clock": lambda a=agent: clock() + a.offset}
        )
        if variant in ASSUMED:
            settings["proof_assumptions"] = list(ProofAssumption)
        placement = PlacementClient(agent.wire, microversion=MICROVERSION, **settings)
        if variant in (NOVA_RC, NOVA_RC_ASSUMED):
            agent.client = RcSchedulerReportClient(client=placement)
        else:
            agent.client = placement
        agents.append(agent)
    return agents


def one_period(variant: str, agent: Agent, nova: Any, timing: Timing) -> None:
    """One agent period, its latency recorded; a failure is counted and printed, not raised."""
    began = time.perf_counter()
    try:
        agent_period(variant, agent, nova, timing)
    except Exception as exc:
        agent.failures += 1
        print(f"  {variant} agent {agent.index}: {exc!r}", file=sys.stderr)
        return
    agent.latencies.append(time.perf_counter() - began)


def run_periods(
    variant: str,
    agents: list[Agent],
    periods: int,
    clock: SimClock,
    pool: ThreadPoolExecutor,
    churning: bool,
    nova: Any,
) -> None:
    """Simulated time: each period moves the clock 60 s, then runs every agent once."""
    timing = Timing()

    def one(agent: Agent) -> None:
        one_period(variant, agent, nova, timing)

    for p in range(periods):
        clock.now += PERIOD
        if churning:
            for agent in random.sample(agents, max(1, len(agents) // 20)):
                churn(random.choice(agent.nodes), p)
        order = random.sample(agents, len(agents))
        list(pool.map(one, order))


def run_real_periods(
    variant: str, agents: list[Agent], periods: int, churning: bool, nova: Any, timing: Timing
) -> None:
    """Real time: each agent a looping call of ``periods`` runs, one thread per agent.

    As oslo's ``FixedIntervalLoopingCall`` after nova's random initial delay: the first
    reconcile starts at the agent's offset within the period, each next one a period after
    the previous start, or at once when the previous one outlasted the period (an overrun:
    counted, with how late it started). A late agent delays no other. The churn of each
    period is drawn here, in order, and applied by the agent's own thread just before that
    period's reconcile, so no description changes under a running reconcile.
    """
    plan: dict[int, list[tuple[int, Node]]] = {a.index: [] for a in agents}
    if churning:
        for p in range(periods):
            for agent in random.sample(agents, max(1, len(agents) // 20)):
                plan[agent.index].append((p, random.choice(agent.nodes)))

    def loop(agent: Agent, began: float) -> None:
        due = began + agent.offset
        for p in range(periods):
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            start = time.monotonic()
            for q, node in plan[agent.index]:
                if q == p:
                    churn(node, p)
            one_period(variant, agent, nova, timing)
            due = start + timing.period
            late = time.monotonic() - due
            if late > 0 and p < periods - 1:
                agent.overruns += 1
                agent.late = max(agent.late, late)

    with ThreadPoolExecutor(len(agents)) as pool:
        began = time.monotonic()
        for future in [pool.submit(loop, a, began) for a in agents]:
            future.result()


@contextmanager
def association_refresh(nova: Any, timing: Timing) -> Iterator[None]:
    """nova's clocks and refresh window for the run's timing, for both nova variants.

    Simulated: nova's report module reads the simulated clock (``time.time`` patched) and
    keeps its default refresh. Real time: nova's own clock, and ``[compute]
    resource_provider_association_refresh`` overridden to the scaled window (the adapter
    reads the same option on every call).
    """
    if nova is None or not timing.real:
        yield
        return
    conf = importlib.import_module("nova.conf").CONF
    conf.set_override("resource_provider_association_refresh", timing.refresh, group="compute")
    try:
        yield
    finally:
        conf.clear_override("resource_provider_association_refresh", group="compute")


def fleet(
    cluster: PlacementCluster,
    agents_per_variant: int,
    periods: int,
    claim_rate: float,
    nova: Any,
    variants: list[str],
    timing: Timing,
    progress: Progress,
) -> tuple[dict[tuple[str, str], Cell], int]:
    with association_refresh(nova, timing):
        return _fleet(
            cluster, agents_per_variant, periods, claim_rate, nova, variants, timing, progress
        )


def _fleet(
    cluster: PlacementCluster,
    agents_per_variant: int,
    periods: int,
    claim_rate: float,
    nova: Any,
    variants: list[str],
    timing: Timing,
    progress: Progress,
) -> tuple[dict[tuple[str, str], Cell], int]:
    url, token = cluster.url, cluster.token
    clock = SimClock()
    if nova is not None and not timing.real:
        nova.time = _NovaTime(clock)
    fleets = {
        v: make_agents(v, agents_per_variant, url, token, clock, nova, timing) for v in variants
    }
    reader = PlacementClient(make_adapter(url, token), microversion=MICROVERSION)
    cells: dict[tuple[str, str], Cell] = {}
    bad = 0
    with ThreadPoolExecutor(16) as pool:
        for phase in PHASES:
            for variant in variants:
                agents = fleets[variant]
                for a in agents:
                    a.status.clear()
                    a.latencies.clear()
                    a.failures = a.overruns = 0
                    a.late = 0.0
                claims = "claims" in phase
                claimer = Claimer(url, token, [a.root for a in agents], claim_rate, 50)
                n = {"create": 1, "settle": SETTLE_PERIODS}.get(phase, periods)
                churning = "churn" in phase
                cpu0 = cluster_cpu_seconds(cluster)
                with claimer.running() if claims else nullcontext():
                    if timing.real:
                        run_real_periods(variant, agents, n, churning, nova, timing)
                    else:
                        run_periods(variant, agents, n, clock, pool, churning, nova)
                cpu = cluster_cpu_seconds(cluster) - cpu0
                diffs = differences(reader, agents)
                for d in diffs[:5]:
                    print(f"  DIFF {phase} {variant}: {d}", file=sys.stderr)
                bad += len(diffs)
                status: Counter[tuple[str, int]] = Counter()
                for a in agents:
                    status.update(a.status)
                cells[(phase, variant)] = Cell(
                    status,
                    n * len(agents),
                    cpu,
                    [s for a in agents for s in a.latencies],
                    claimer.latencies,
                    sum(a.failures for a in agents),
                    claimer.failures,
                    len(diffs),
                    sum(a.overruns for a in agents),
                    max((a.late for a in agents), default=0.0),
                )
                claimer.release_all()
                done = cells[(phase, variant)]
                progress.done(
                    f"{phase} {variant}: "
                    f"{sum(done.status.values()) / done.agent_periods:.2f} req/agent-period",
                    units=n,
                )
    return cells, bad


# -- starvation ------------------------------------------------------------------------------
def _traits(k: int) -> list[str]:
    return ["HW_CPU_X86_AVX2"] if k % 2 else ["HW_CPU_X86_SSE"]


def starve_write(writer: str, client: Any, rp: str, name: str, k: int, nova: Any) -> None:
    """The ``k``-th write of one writer: a new inventory total (or the other trait set).

    Every write is a real change: alternating two values would let nova's cache report a
    failed write's successor as a no-op success.
    """
    inventory = {"VCPU": full_inventory(100000 + k)}
    if writer == "set_inventory":
        client.providers.set_inventory(rp, "VCPU", inventory["VCPU"])
    elif writer == "set_traits":
        client.providers.set_traits(rp, _traits(k))
    elif writer.startswith("reconcile"):
        client.providers.reconcile(
            [ProviderSpec(rp, name, inventories=inventory)],
            max_staleness=WINDOW if writer.endswith("agent") else None,
        )
    else:
        context = SimpleNamespace(global_id=None)
        for attempt in range(4):  # _update_to_placement's @retrying.retry
            try:
                tree = client.get_provider_tree_and_ensure_root(context, rp, name=name)
                if writer.endswith("for_provider"):
                    client.set_inventory_for_provider(context, rp, inventory)
                else:
                    tree.update_inventory(rp, inventory)
                    client.update_from_provider_tree(context, tree)
                return
            except nova.exception.ResourceProviderUpdateConflict:
                if attempt == 3:
                    raise


def starvation_writers(nova: Any) -> list[str]:
    """The writers each starvation rate runs: reportclient's four, and nova's two with nova."""
    return ["set_inventory", "set_traits", "reconcile", "reconcile agent"] + (
        ["nova set_inventory_for_provider", "nova update_from_provider_tree"] if nova else []
    )


def starvation(
    cluster: PlacementCluster, rates: list[int], seconds: float, nova: Any, progress: Progress
) -> tuple[list[dict[str, Any]], int]:
    """Each (rate, writer) row as :func:`bench.fleet_report.starvation_line` prints it."""
    url, token = cluster.url, cluster.token
    rows: list[dict[str, Any]] = []
    bad = 0
    for rate in rates:
        for writer in starvation_writers(nova):
            rp = str(uuid.uuid4())
            name = f"starve-{rate}-{writer.replace(' ', '-')}"
            admin = PlacementClient(make_adapter(url, token), microversion=MICROVERSION)
            admin.providers.reconcile(
                [ProviderSpec(rp, name, inventories={"VCPU": full_inventory(100000)})]
            )
            nova_ns = writer.startswith("nova")
            wire = make_adapter(url, token, StatusAdapter, raise_exc=not nova_ns)
            client: Any
            slept: list[float] = []

            def sleep(seconds: float, slept: list[float] = slept) -> None:
                slept.append(seconds)
                time.sleep(seconds)

            if nova_ns:
                client = nova.SchedulerReportClient(adapter=wire)
            else:
                # The default policy, with its sleeps recorded: a 409 retried without one
                # is the engine's "re-read shows the field unchanged, retry at once".
                policy = reportclient.default_retry(sleep=sleep)
                client = PlacementClient(wire, microversion=MICROVERSION, retry=policy)
            starve_write(writer, client, rp, name, 1, nova)  # warm: learn the provider
            wire.status.clear()
            slept.clear()
            claimer = Claimer(url, token, [rp], rate, 20)
            latencies: list[float] = []
            failures, k, landed = 0, 1, 1
            began_cell = time.perf_counter()
            with claimer.running(8):
                end = time.perf_counter() + seconds
                while time.perf_counter() < end:
                    k += 1
                    began = time.perf_counter()
                    try:
                        starve_write(writer, client, rp, name, k, nova)
                    except Exception as exc:
                        failures += 1
                        why = f"{type(exc).__name__}: {str(exc)[:160]}"
                        print(f"  starvation {rate}/s {writer}: {why}", file=sys.stderr)
                        continue
                    latencies.append(time.perf_counter() - began)
                    landed = k
            done_rate = len(claimer.latencies) / (time.perf_counter() - began_cell)
            claimer.release_all()
            # The last write reported done must be what Placement holds.
            if writer == "set_traits":
                ok = set(admin.providers.get_traits(rp).traits) == set(_traits(landed))
            else:
                inv = admin.providers.get_inventories(rp).inventories
                ok = inv["VCPU"].total == 100000 + landed
            bad += not ok
            writes = len(latencies) + failures
            per = max(writes, 1)
            conflicts = sum(k for (_m, s), k in wire.status.items() if s == 409)
            rows.append(
                {
                    "claims_per_s": rate,
                    "done_per_s": done_rate,
                    "writer": writer,
                    "writes": writes,
                    "success": len(latencies) / per,
                    "p50_ms": percentile(latencies, 50) * 1000 if latencies else None,
                    "p99_ms": percentile(latencies, 99) * 1000 if latencies else None,
                    "requests_per_write": sum(wire.status.values()) / per,
                    "conflicts_per_write": conflicts / per,
                    "retries_at_once_per_write": None if nova_ns else slept.count(0.0) / per,
                    "backoff_s_per_write": None if nova_ns else sum(slept) / per,
                    "holds": ok,
                }
            )
            progress.done(f"{rate}/s {writer}: {starvation_line(rows[-1])}")
    return rows, bad


def build_parser() -> argparse.ArgumentParser:
    """``python -m bench fleet``'s options."""
    parser = argparse.ArgumentParser(
        prog="python -m bench fleet", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--placement", default="mariadb", choices=["mariadb", "postgresql"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--periods", type=int, default=6, help="periods per phase (not create)")
    parser.add_argument("--claim-rate", type=float, default=20.0)
    parser.add_argument("--starve-rates", default="10,30,100")
    parser.add_argument("--starve-seconds", type=float, default=10.0)
    parser.add_argument("--skip-fleet", action="store_true")
    parser.add_argument("--skip-starvation", action="store_true")
    parser.add_argument("--without-nova", action="store_true")
    parser.add_argument(
        "--variants",
        help=f"comma-separated, of: {RC_STRICT}, {RC_AGENT}, {RC_AGENT_ASSUMED}, {NOVA}, "
        f"{NOVA_RC}, {NOVA_RC_ASSUMED} (default: all; {RC_STRICT} costs a listing and a "
        "read per field per agent-period, more than two cores serve at 200 agents in real "
        "time; the assumed ones name every ProofAssumption)",
    )
    parser.add_argument(
        "--real-time",
        action="store_true",
        help="periods in real seconds, every client on the real clock, windows scaled",
    )
    parser.add_argument(
        "--period-seconds",
        type=float,
        default=6.0,
        help="with --real-time: seconds per period; the windows are 5 periods (default 6)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=RESULTS / "fleet.json",
        help="where to write the results (default bench/results/fleet.json)",
    )
    output_options(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.period_seconds <= 0:
        parser.error("--period-seconds must be > 0")
    timing = Timing(real=True, period=args.period_seconds) if args.real_time else Timing()
    random.seed(1)
    quiet_logging()
    nova = optional_nova(not args.without_nova)
    variants = [RC_STRICT, RC_AGENT, RC_AGENT_ASSUMED] + (
        [NOVA, NOVA_RC, NOVA_RC_ASSUMED] if nova is not None else []
    )
    if args.variants:
        chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
        unknown = [v for v in chosen if v not in variants]
        if unknown:
            parser.error(f"--variants: unknown or without nova: {', '.join(unknown)}")
        variants = [v for v in variants if v in chosen]
    rates = [int(r) for r in args.starve_rates.split(",")]
    results: dict[str, Any] = {
        "shape": {
            "placement": args.placement,
            "workers": args.workers,
            "agents": args.agents,
            "periods": args.periods,
            "claim_rate": args.claim_rate,
            "clock": (
                f"real time, {timing.period:g} s periods"
                if timing.real
                else f"simulated {timing.period:g} s periods"
            ),
        },
        "real_time": timing.real,
        "fleet": [],
        "starvation": [],
    }
    bad = 0
    began = time.perf_counter()
    with PlacementCluster(args.placement, workers=args.workers) as cluster:
        print(
            f"Placement on {args.placement} x{args.workers} gunicorn workers; "
            f"{args.agents} agents per variant, {args.periods} periods per phase, "
            f"claims {args.claim_rate:g}/s; {timing.describe()}",
            flush=True,
        )
        if not args.skip_fleet:
            periods = sum(
                {"create": 1, "settle": SETTLE_PERIODS}.get(p, args.periods) for p in PHASES
            )
            progress = Progress("fleet", periods * len(variants), "periods", quiet=args.quiet)
            cells, fleet_bad = fleet(
                cluster,
                args.agents,
                args.periods,
                args.claim_rate,
                nova,
                variants,
                timing,
                progress,
            )
            bad += fleet_bad
            rows = [summarise(phase, variant, c) for (phase, variant), c in cells.items()]
            results["fleet"] = rows
            print("\n".join(["", "Fleet", "", *render_fleet(rows, timing.real)]), flush=True)
            for variant in (NOVA_RC, RC_AGENT, NOVA_RC_ASSUMED, RC_AGENT_ASSUMED):
                ratios = render_ratios(rows, PHASES, variant)
                if len(ratios) > 2:
                    print("\n".join(["", f"{variant} / {NOVA}", "", *ratios]), flush=True)
        if not args.skip_starvation:
            progress = Progress(
                "fleet starvation",
                len(rates) * len(starvation_writers(nova)),
                "writers",
                quiet=args.quiet,
            )
            rows, starve_bad = starvation(cluster, rates, args.starve_seconds, nova, progress)
            bad += starve_bad
            results["starvation"] = rows
            lines = [*STARVATION_HEAD, *(starvation_line(r) for r in rows)]
            print("\n".join(["", "Starvation (one provider)", "", *lines]), flush=True)
    print(f"\n{time.perf_counter() - began:.0f} s; read-back differences: {bad}")
    results["read_back_differences"] = bad
    meta = {
        **machine_info(),
        **identity("fleet", argv),
        "nova": package_version("nova"),
        "wall_seconds": time.perf_counter() - began,
    }
    save_results({"meta": meta, "results": results}, args.json, args.plot, args.quiet)
    return 1 if bad else 0
