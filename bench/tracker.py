"""nova's resource tracker, period by period: requests, nova's client beside the adapter.

``python -m bench tracker`` runs the same compute node's periods on nova 34's
``SchedulerReportClient`` and on ``reportclient.nova.SchedulerReportClient``, each
against the real Placement (a child process), and counts every request each period
sends: ``get_provider_tree_and_ensure_root``, the driver's changes to the tree it
returns, ``update_from_provider_tree``, redriven at once on
``ResourceProviderUpdateConflict`` as nova's ``_update_to_placement`` does (up to 4
tries). Both clients' windows are nova's default 300 s, on a clock the harness moves
(nova's report module's ``time.time``, the adapter's client clock); Placement's own
clock is real, so around each step that is past the window the harness waits out the
5 s proof margin (doc/source/providers.rst), as the 300 s between windows would in
production.

Steps, in order, on one tree (a root with VCPU, MEMORY_MB, a trait and an aggregate;
a child with a custom class):

* fresh: the first period (the tree created), a steady period inside the window, a
  period whose driver changes the inventory;
* contended: the inventory changed after a scheduler's claim moved the root's
  generation (nova: 409, a full re-read, a write; the adapter: 409, a read of that
  field, a write), the traits changed after an operator set one (both: nova's
  conflict and a redrive that keeps the operator's trait), a period after nova-api
  added an aggregate (nothing to write for either);
* past the window: first after the writes above (every field they wrote is read
  once: its proof is as old as its last change), then a quiet tree, then a tree a
  claim moved.

The table is the one in doc/source/nova_adapter.rst ("What each tracker call costs").
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.drivers.allocations import optional_nova
from bench.support.common import (
    MICROVERSION,
    PROJECT,
    USER,
    CountingAdapter,
    make_adapter,
    placement_server,
    quiet_logging,
)
from reportclient import PlacementClient
from reportclient._engine.proofs import PROOF_MARGIN
from reportclient.fixture import FakeClock

WINDOW = 300.0


class Context:
    """nova's RequestContext as both clients read it."""

    global_id = None


class _NovaTime:
    """nova's report module's ``time``: the harness's clock for ``time.time()`` only."""

    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock

    def time(self) -> float:
        return self._clock()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


class Node:
    """One compute node's tracker on one client: its tree, its driver, its requests."""

    def __init__(self, client: Any, wire: CountingAdapter, clock: FakeClock, nova: Any) -> None:
        self.client, self.wire, self.clock, self.nova = client, wire, clock, nova
        self.root, self.child, self.agg = (str(uuid.uuid4()) for _ in range(3))
        self.vcpu = 16
        self.traits = {"HW_CPU_X86_AVX2"}

    def drive(self, tree: Any) -> None:
        """The driver's ``update_provider_tree``: what it owns, keeping the rest."""
        tree.update_inventory(
            self.root, {"VCPU": {"total": self.vcpu}, "MEMORY_MB": {"total": 65536}}
        )
        if not tree.exists(self.child):
            tree.new_child(f"dev-{self.child}", self.root, uuid=self.child)
        tree.update_inventory(self.child, {"CUSTOM_TRACKER_DEV": {"total": 2}})
        tree.add_traits(self.root, *sorted(self.traits))

    def period(self) -> tuple[int, Counter[str], int]:
        """One ``_update_to_placement``: requests, by method, and redrives."""
        before = Counter(self.wire.counts)
        context = Context()
        for attempt in range(4):
            tree = self.client.get_provider_tree_and_ensure_root(
                context, self.root, name=f"cn-{self.root}"
            )
            self.drive(tree)
            try:
                self.client.update_from_provider_tree(context, tree)
                break
            except self.nova.exception.ResourceProviderUpdateConflict:
                if attempt == 3:
                    raise
        else:  # pragma: no cover - the loop breaks or raises
            attempt = 3
        spent = Counter(self.wire.counts) - before
        return sum(spent.values()), spent, attempt


def other_client(url: str, token: str) -> PlacementClient:
    return PlacementClient(make_adapter(url, token), microversion=MICROVERSION)


def steps(node: Node, other: PlacementClient) -> list[tuple[str, Callable[[], None]]]:
    """Each step's name and what happens before its period."""

    def advance(seconds: float) -> Callable[[], None]:
        return lambda: node.clock.advance(seconds)

    def change_inventory() -> None:
        node.clock.advance(60)
        node.vcpu += 1

    def claim_then_change() -> None:
        other.claim(str(uuid.uuid4()), {node.root: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
        change_inventory()

    def operator_trait() -> None:
        other.providers.ensure_trait("CUSTOM_OPERATOR_GOLD")
        other.providers.add_traits(node.root, ["CUSTOM_OPERATOR_GOLD"])
        node.traits.add("COMPUTE_STATUS_DISABLED")
        node.clock.advance(60)

    def api_aggregate() -> None:
        other.providers.add_aggregates(node.root, [str(uuid.uuid4())])
        node.clock.advance(60)

    def quiet_past_window() -> None:
        time.sleep(PROOF_MARGIN + 1)  # Placement's clock: the proofs postdate every change
        node.clock.advance(WINDOW + 1)

    def claim_past_window() -> None:
        time.sleep(PROOF_MARGIN + 1)  # the last proof a window ago: well before the claim
        other.claim(str(uuid.uuid4()), {node.root: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
        time.sleep(PROOF_MARGIN + 1)
        node.clock.advance(WINDOW + 1)

    def first() -> None:
        node.clock.advance(1)

    return [
        ("fresh: first period (creates the tree)", first),
        ("fresh: steady, inside the window", advance(60)),
        ("fresh: the driver changes the inventory", change_inventory),
        ("contended: inventory change after a claim moved the root", claim_then_change),
        ("contended: trait change after an operator set a trait", operator_trait),
        ("contended: nova-api added an aggregate; nothing to write", api_aggregate),
        ("past the window: first after the writes above", quiet_past_window),
        ("past the window: a quiet tree", advance(WINDOW + 1)),
        ("past the window: a claim moved the root", claim_past_window),
    ]


def first_aggregate(node: Node, other: PlacementClient) -> None:
    """The node's aggregate, as nova-api set it before the run (then read by both clients)."""
    other.providers.add_aggregates(node.root, [node.agg])
    node.client.invalidate_resource_provider(node.root, cacheonly=True)


Row = tuple[str, int, str, int]


def run(url: str, token: str, report: Any, nova: Any) -> dict[str, list[Row]]:
    """Every step's requests on each client: ``{client: [(step, requests, by method,
    redrives)]}``."""
    import reportclient.nova

    out: dict[str, list[Row]] = {}
    for name in ("nova", "adapter"):
        clock = FakeClock()
        wire = make_adapter(url, token, CountingAdapter, raise_exc=name != "nova")
        if name == "nova":
            report.time = _NovaTime(clock)
            client = report.SchedulerReportClient(adapter=wire)
        else:
            placement = PlacementClient(wire, microversion=MICROVERSION, clock=clock)
            client = reportclient.nova.SchedulerReportClient(client=placement)
        node = Node(client, wire, clock, nova)
        other = other_client(url, token)
        rows: list[Row] = []
        for index, (label, before) in enumerate(steps(node, other)):
            before()
            total, by_method, redrives = node.period()
            rows.append((label, total, _by(by_method), redrives))
            if index == 0:
                first_aggregate(node, other)
                node.period()  # proves the aggregate into both caches
        out[name] = rows
    return out


def _by(counts: Counter[str]) -> str:
    return ", ".join(f"{m} {n}" for m, n in sorted(counts.items())) or "-"


def render(results: dict[str, list[Row]]) -> list[str]:
    lines = [
        "| step | nova: requests | the adapter: requests | nova: by method | "
        "the adapter: by method |",
        "| --- | --- | --- | --- | --- |",
    ]

    def cell(row: Row) -> str:
        return f"{row[1]}" + (f" ({row[3]} redrive)" if row[3] else "")

    for theirs, ours in zip(results["nova"], results["adapter"], strict=True):
        lines.append(f"| {theirs[0]} | {cell(theirs)} | {cell(ours)} | {theirs[2]} | {ours[2]} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench tracker", description=__doc__.split("\n\n")[0]
    )
    parser.parse_args(argv)
    quiet_logging()
    report = optional_nova(True)
    if report is None:
        print("nova is needed to compare with (tox -e bench-fleet installs it)", file=sys.stderr)
        return 1
    import nova.exception

    with placement_server() as server:
        results = run(server.url, server.token, report, nova)
    print("\n".join(render(results)))
    return 0
