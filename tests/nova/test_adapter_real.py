"""nova's resource tracker on the adapter, against the real Placement, with nova's own types.

Each test runs the tracker's flow as nova 34's ``ResourceTracker._update_to_placement``
does (``get_provider_tree_and_ensure_root``, the driver's changes to the tree it
returns, ``update_from_provider_tree``) on :class:`reportclient.nova.SchedulerReportClient`,
with nova installed (``tox -e nova``): the trees are nova's ``ProviderTree`` and the
errors nova's. The window is the adapter's client clock, moved by the test. Run by
``tox -e nova`` (``pytest tests/nova``), which installs nova.
"""

from __future__ import annotations

from typing import Any

import pytest
from nova import exception

from reportclient import PlacementClient
from reportclient.fixture import FakeClock
from reportclient.nova import SchedulerReportClient
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import (
    backdate,
    backdate_classes,
    claim,
    make_client,
    new_id,
    stamp_later,
    wire,
)

WINDOW = 300


class Context:
    """nova's RequestContext as the adapter reads it."""

    global_id = None


CTX = Context()


class Tracker:
    """One compute node's resource tracker: its report client, its clock, its node."""

    def __init__(self, placement: EmbeddedPlacement) -> None:
        self.clock = FakeClock()
        client: PlacementClient = make_client(placement, clock=self.clock)
        self.nova = SchedulerReportClient(client=client, association_refresh=WINDOW)
        self.root, self.child, self.agg = new_id(), new_id(), new_id()
        self.name = f"cn-{self.root}"

    def period(self, **driver: Any) -> Any:
        """One ``_update_to_placement``: the tree, the driver's changes, the flush."""
        tree = self.nova.get_provider_tree_and_ensure_root(CTX, self.root, name=self.name)
        self.drive(tree, **driver)
        self.nova.update_from_provider_tree(CTX, tree)
        return tree

    def drive(self, tree: Any, *, vcpu: int = 8, traits: set[str] | None = None) -> None:
        """The driver's ``update_provider_tree``: its inventory, a child, its traits."""
        tree.update_inventory(self.root, {"VCPU": {"total": vcpu}})
        if not tree.exists(self.child):
            tree.new_child(f"dev-{self.child}", self.root, uuid=self.child)
            tree.update_inventory(self.child, {"CUSTOM_NOVA_DEV": {"total": 2}})
        if traits is not None:
            tree.update_traits(self.root, traits)


def placement_of(placement: EmbeddedPlacement) -> Any:
    return make_client(placement).providers


def operator_sets_gold(placement: EmbeddedPlacement, rp: str) -> None:
    """An operator's ``openstack resource provider trait set``, with its trait created."""
    providers = placement_of(placement)
    providers.ensure_trait("CUSTOM_OPERATOR_GOLD")
    providers.add_traits(rp, ["CUSTOM_OPERATOR_GOLD"])


@pytest.fixture
def tracker(real_placement: EmbeddedPlacement) -> Tracker:
    made = Tracker(real_placement)
    made.period(traits={"HW_CPU_X86_AVX2"})
    placement_of(real_placement).add_aggregates(made.root, [made.agg])  # nova-api, long ago
    made.nova.invalidate_resource_provider(made.root, cacheonly=True)
    made.period()  # proves the aggregate into the view
    real_placement.clear_requests_seen()
    return made


def test_a_steady_period_inside_the_window_sends_no_request(
    real_placement: EmbeddedPlacement, tracker: Tracker
) -> None:
    for _period in range(4):
        tracker.clock.advance(60)
        tree = tracker.period()
    assert wire(real_placement) == []
    assert tree.data(tracker.root).aggregates == {tracker.agg}


def test_an_aggregate_nova_api_adds_after_the_tree_was_read_survives_the_flush(
    real_placement: EmbeddedPlacement, tracker: Tracker
) -> None:
    theirs = new_id()
    tree = tracker.nova.get_provider_tree_and_ensure_root(CTX, tracker.root)
    api = SchedulerReportClient(client=make_client(real_placement))
    api.aggregate_add_host(CTX, theirs, rp_uuid=tracker.root)
    tracker.drive(tree, vcpu=16)  # the inventory changes: a write at the tree's generation

    tracker.nova.update_from_provider_tree(CTX, tree)

    providers = placement_of(real_placement)
    assert providers.get_aggregates(tracker.root).aggregates == {tracker.agg, theirs}
    assert providers.get_inventories(tracker.root).inventories["VCPU"].total == 16


def test_a_trait_an_operator_sets_after_the_tree_was_read_survives_the_flush(
    real_placement: EmbeddedPlacement, tracker: Tracker
) -> None:
    tree = tracker.nova.get_provider_tree_and_ensure_root(CTX, tracker.root)
    operator_sets_gold(real_placement, tracker.root)
    tracker.drive(tree, vcpu=16)

    tracker.nova.update_from_provider_tree(CTX, tree)

    traits = placement_of(real_placement).get_traits(tracker.root).traits
    assert traits == {"HW_CPU_X86_AVX2", "CUSTOM_OPERATOR_GOLD"}


def test_a_flush_from_a_stale_view_is_novas_conflict_and_the_redrive_keeps_both(
    real_placement: EmbeddedPlacement, tracker: Tracker
) -> None:
    tree = tracker.nova.get_provider_tree_and_ensure_root(CTX, tracker.root)
    operator_sets_gold(real_placement, tracker.root)
    tracker.drive(tree, traits={"HW_CPU_X86_AVX2", "COMPUTE_STATUS_DISABLED"})

    with pytest.raises(exception.ResourceProviderUpdateConflict):
        tracker.nova.update_from_provider_tree(CTX, tree)
    assert placement_of(real_placement).get_traits(tracker.root).traits == {
        "HW_CPU_X86_AVX2",
        "CUSTOM_OPERATOR_GOLD",
    }

    # nova's tracker redrives at once with a fresh tree; the driver keeps what it
    # does not manage and adds its own.
    tree = tracker.nova.get_provider_tree_and_ensure_root(CTX, tracker.root)
    tree.add_traits(tracker.root, "COMPUTE_STATUS_DISABLED")
    tracker.nova.update_from_provider_tree(CTX, tree)
    assert placement_of(real_placement).get_traits(tracker.root).traits == {
        "HW_CPU_X86_AVX2",
        "CUSTOM_OPERATOR_GOLD",
        "COMPUTE_STATUS_DISABLED",
    }


def test_a_provider_re_created_under_its_uuid_is_noticed_past_the_window_not_before(
    real_placement: EmbeddedPlacement, tracker: Tracker
) -> None:
    ours = tracker.nova.get_provider_tree_and_ensure_root(CTX, tracker.root).data(tracker.child)
    other = placement_of(real_placement)
    other.delete_provider(tracker.child)
    other.create_provider(
        f"dev-{tracker.child}", uuid=tracker.child, parent_provider_uuid=tracker.root
    )
    other.set_inventories(tracker.child, {"CUSTOM_NOVA_DEV": 5})
    assert other.get_inventories(tracker.child).generation == ours.generation
    real_placement.clear_requests_seen()

    tracker.clock.advance(WINDOW)  # inside the window: nova's cache, no request
    inside = tracker.nova.get_provider_tree_and_ensure_root(CTX, tracker.root)
    assert wire(real_placement) == []
    assert inside.data(tracker.child).inventory["CUSTOM_NOVA_DEV"]["total"] == 2

    tracker.clock.advance(1)  # past it: one listing proves the tree, and catches this
    past = tracker.nova.get_provider_tree_and_ensure_root(CTX, tracker.root)
    assert past.data(tracker.child).inventory["CUSTOM_NOVA_DEV"]["total"] == 5


def test_past_the_window_a_tree_only_allocations_moved_costs_no_more_than_nova_s_full_read(
    real_placement: EmbeddedPlacement, tracker: Tracker
) -> None:
    backdate(real_placement, [tracker.child])  # untouched since long before the proofs
    backdate_classes(real_placement)  # and so are the classes its inventory names
    claim(make_client(real_placement), new_id(), {tracker.root: {"VCPU": 1}})
    stamp_later(real_placement, [tracker.root])  # a claim well after them
    real_placement.clear_requests_seen()
    tracker.clock.advance(WINDOW + 1)

    tracker.period()

    paths = [
        path.split("?")[0].replace(tracker.root, "{root}").replace(tracker.child, "{child}")
        for _method, path, _status in wire(real_placement)
    ]
    # nova's client reads all three fields of both providers here (8 requests); the
    # adapter 8 too, of which 3 prove what nova's never proves (a re-created child, a
    # renamed class, an aggregate set below 1.19).
    assert sorted(paths) == sorted(
        [
            "/resource_providers",  # the tree
            "/resource_providers/{root}/inventories",  # the root moved (an allocation)
            "/resource_providers/{root}/traits",
            "/resource_providers/{root}/aggregates",
            "/resource_providers/{child}",  # its own Last-Modified: untouched since,
            "/resource_classes",  # its custom class not renamed since (issue 53),
            "/resource_providers/{child}/aggregates",  # its aggregates read (1.1 moves none)
            "/resource_providers",  # the sharing providers of the root's aggregate
        ]
    )


def test_the_adapter_has_every_public_method_of_novas_client_with_its_parameters() -> None:
    from tests.nova.run import interface_differences

    methods, differences = interface_differences()
    assert methods == 33
    assert differences == []


def test_a_trait_set_after_the_handout_survives_a_flush_after_nova_reads_the_traits(
    real_placement: EmbeddedPlacement, tracker: Tracker
) -> None:
    """Issue 53: nova's compute manager calls get_provider_traits on every service
    enable/disable. That read, by the same report client, must not become the base the
    tracker's tree is flushed against: the tracker did not touch the traits, so the
    operator's trait stays."""
    tree = tracker.nova.get_provider_tree_and_ensure_root(CTX, tracker.root, name=tracker.name)
    operator_sets_gold(real_placement, tracker.root)
    theirs = new_id()
    SchedulerReportClient(client=make_client(real_placement)).aggregate_add_host(
        CTX, theirs, rp_uuid=tracker.root
    )
    assert "CUSTOM_OPERATOR_GOLD" in tracker.nova.get_provider_traits(CTX, tracker.root).traits
    tracker.nova._placement.providers.get_aggregates(tracker.root)  # a shared client's read
    tracker.drive(tree)  # the driver's tree: what it was, nothing changed

    tracker.nova.update_from_provider_tree(CTX, tree)

    held = placement_of(real_placement)
    assert "CUSTOM_OPERATOR_GOLD" in held.get_traits(tracker.root).traits
    assert held.get_aggregates(tracker.root).aggregates == {tracker.agg, theirs}


def test_a_stale_tree_flushed_by_a_new_client_is_nova_s_conflict_and_writes_nothing(
    real_placement: EmbeddedPlacement, tracker: Tracker
) -> None:
    tree = tracker.nova.get_provider_tree_and_ensure_root(CTX, tracker.root, name=tracker.name)
    operator_sets_gold(real_placement, tracker.root)  # Placement's provider moves on
    tracker.drive(tree, vcpu=16, traits={"HW_CPU_X86_AVX2"})
    restarted = SchedulerReportClient(client=make_client(real_placement))  # a new client

    with pytest.raises(exception.ResourceProviderUpdateConflict):
        restarted.update_from_provider_tree(CTX, tree)

    held = placement_of(real_placement)
    assert "CUSTOM_OPERATOR_GOLD" in held.get_traits(tracker.root).traits
    assert held.get_inventories(tracker.root).inventories["VCPU"].total == 8
