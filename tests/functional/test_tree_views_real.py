"""A provider-tree view against the real Placement: what it costs, what a flush never removes.

The view is what ``reportclient.nova`` keeps for nova's resource tracker
(``tests/nova/test_adapter_real.py`` drives it through nova's own
``ProviderTree``). The server's clock is made controllable by backdating the
embedded database's timestamps (``backdate``), never by sleeping.
"""

from __future__ import annotations

import pytest

import reportclient
from reportclient import PlacementClient, ProviderSpec, TreeViews
from reportclient.fixture import FakeClock
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

WINDOW = 300.0


def sent(placement: EmbeddedPlacement) -> list[tuple[str, str, int]]:
    """The requests since the last clear, provider uuids and queries left out of the paths."""
    out = []
    for method, path, status in wire(placement):
        parts = ["{rp}" if len(p) == 36 else p for p in path.split("?")[0].split("/")]
        out.append((method, "/".join(parts), status))
    placement.clear_requests_seen()
    return out


def tree(root: str, child: str, agg: str, *, vcpu: int = 8) -> list[ProviderSpec]:
    return [
        ProviderSpec(root, f"cn-{root}", None, {"VCPU": vcpu}, {"HW_CPU_X86_AVX2"}, {agg}),
        ProviderSpec(child, f"dev-{child}", root, {"CUSTOM_FUNCTIONAL_DEV": 2}, set(), set()),
    ]


class Agent:
    """One compute agent's client, clock and view, with its tree flushed once."""

    def __init__(self, placement: EmbeddedPlacement) -> None:
        self.clock = FakeClock()
        self.client: PlacementClient = make_client(placement, clock=self.clock)
        self.views: TreeViews = self.client.providers.views(window=WINDOW)
        self.root, self.child, self.agg = new_id(), new_id(), new_id()
        self.views.ensure(self.root, name=f"cn-{self.root}")
        self.views.flush(tree(self.root, self.child, self.agg))


@pytest.fixture
def agent(real_placement: EmbeddedPlacement) -> Agent:
    made = Agent(real_placement)
    real_placement.clear_requests_seen()
    return made


def test_inside_the_window_a_steady_period_sends_nothing(
    real_placement: EmbeddedPlacement, agent: Agent
) -> None:
    for _period in range(5):
        agent.clock.advance(60)
        agent.views.ensure(agent.root)
        agent.views.flush(tree(agent.root, agent.child, agent.agg))
    assert sent(real_placement) == []


def test_past_the_window_a_quiet_tree_costs_its_listings_and_each_providers_aggregates(
    real_placement: EmbeddedPlacement, agent: Agent
) -> None:
    """Issue 53: aggregates set below 1.19 move nothing a listing shows, so each provider's
    are read once per window; a rename of the child's custom class moves no provider, so
    the resource classes are listed once per window. Everything else the listing proves."""
    backdate(real_placement, [agent.root, agent.child])  # quiet since before every proof
    backdate_classes(real_placement)
    for _window in range(3):
        agent.clock.advance(WINDOW + 1)
        agent.views.ensure(agent.root)
        assert sent(real_placement) == [
            ("GET", "/resource_providers", 200),  # ?in_tree=
            ("GET", "/resource_providers/{rp}/aggregates", 200),  # the root's
            ("GET", "/resource_classes", 200),  # the child's CUSTOM_FUNCTIONAL_DEV
            ("GET", "/resource_providers/{rp}/aggregates", 200),  # the child's
            ("GET", "/resource_providers", 200),  # ?member_of=in:...&required=MISC_SHARES...
        ]


def test_past_the_window_an_allocation_costs_the_moved_providers_fields_only(
    real_placement: EmbeddedPlacement, agent: Agent
) -> None:
    backdate(real_placement, [agent.child])  # untouched since long before the proofs
    backdate_classes(real_placement)
    claim(agent.client, new_id(), {agent.root: {"VCPU": 1}})
    stamp_later(real_placement, [agent.root])  # a claim well after them
    real_placement.clear_requests_seen()
    agent.clock.advance(WINDOW + 1)

    view = agent.views.ensure(agent.root)

    requests = sent(real_placement)
    assert sorted(requests) == sorted(
        [
            ("GET", "/resource_providers", 200),
            ("GET", "/resource_providers/{rp}/inventories", 200),  # the root moved:
            ("GET", "/resource_providers/{rp}/traits", 200),  # nothing Placement says tells
            ("GET", "/resource_providers/{rp}/aggregates", 200),  # an allocation from a write
            ("GET", "/resource_providers/{rp}", 200),  # the child: its own Last-Modified,
            ("GET", "/resource_classes", 200),  # its class names,
            ("GET", "/resource_providers/{rp}/aggregates", 200),  # and its aggregates read
            ("GET", "/resource_providers", 200),  # sharing providers
        ]
    )
    held = view.get(agent.root)
    assert held is not None and held.inventories["VCPU"].total == 8


def test_an_aggregate_another_writer_added_after_the_view_survives_a_flush(
    real_placement: EmbeddedPlacement, agent: Agent
) -> None:
    theirs = new_id()
    make_client(real_placement).providers.add_aggregates(agent.root, [theirs])  # nova-api
    real_placement.clear_requests_seen()

    agent.views.flush(tree(agent.root, agent.child, agent.agg, vcpu=16))

    assert sent(real_placement) == [
        ("PUT", "/resource_providers/{rp}/inventories", 409),  # at the view's generation
        ("GET", "/resource_providers/{rp}/inventories", 200),  # as the view showed it
        ("PUT", "/resource_providers/{rp}/inventories", 200),
    ]
    providers = make_client(real_placement).providers
    assert providers.get_aggregates(agent.root).aggregates == {agent.agg, theirs}
    assert providers.get_inventories(agent.root).inventories["VCPU"].total == 16


def test_a_trait_another_writer_set_after_the_view_survives_and_the_flush_says_so(
    real_placement: EmbeddedPlacement, agent: Agent
) -> None:
    make_client(real_placement).providers.add_traits(agent.root, ["HW_CPU_X86_SSE"])  # operator
    real_placement.clear_requests_seen()
    specs = tree(agent.root, agent.child, agent.agg)
    specs[0] = ProviderSpec(
        agent.root,
        f"cn-{agent.root}",
        None,
        {"VCPU": 8},
        {"HW_CPU_X86_AVX2", "COMPUTE_STATUS_DISABLED"},
        {agent.agg},
    )

    with pytest.raises(reportclient.ProviderChanged) as caught:
        agent.views.flush(specs)

    requests = sent(real_placement)
    traits = make_client(real_placement).providers.get_traits(agent.root).traits
    assert traits == {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"}
    assert caught.value.known == {"HW_CPU_X86_AVX2"}
    assert caught.value.status == 409  # the conflict that led to the re-read, request id and all
    assert caught.value.request_id
    assert requests == [
        ("PUT", "/resource_providers/{rp}/traits", 409),
        ("GET", "/resource_providers/{rp}/traits", 200),  # changed: nothing more is sent
    ]


def test_a_provider_re_created_at_the_views_generation_is_noticed_past_the_window(
    real_placement: EmbeddedPlacement,
) -> None:
    agent = Agent(real_placement)
    ours = agent.views.current().get(agent.child)
    assert ours is not None
    other = make_client(real_placement).providers
    other.delete_provider(agent.child)
    other.create_provider(f"dev-{agent.child}", uuid=agent.child, parent_provider_uuid=agent.root)
    other.set_inventories(agent.child, {"CUSTOM_FUNCTIONAL_DEV": 7})
    assert other.get_inventories(agent.child).generation == ours.generation  # back at ours
    agent.clock.advance(WINDOW + 1)

    held = agent.views.ensure(agent.root).get(agent.child)

    assert held is not None and held.inventories["CUSTOM_FUNCTIONAL_DEV"].total == 7


def test_a_trait_and_an_aggregate_added_after_the_handout_survive_a_flush_after_reading_them(
    real_placement: EmbeddedPlacement, agent: Agent
) -> None:
    """Issue 53: the flush's base is the tree handed out. Another call of the same client
    reading the field (nova's compute manager calls get_provider_traits on every service
    enable) refreshes the view; the tracker's unchanged tree must not remove what that
    read brought in."""
    agent.views.ensure(agent.root)  # the tracker's tree, as handed out
    other = make_client(real_placement).providers
    other.add_traits(agent.root, ["HW_CPU_X86_SSE"])  # an operator
    theirs = new_id()
    other.add_aggregates(agent.root, [theirs])  # nova-api
    agent.client.providers.get_traits(agent.root)  # another call, same client
    agent.client.providers.get_aggregates(agent.root)
    real_placement.clear_requests_seen()

    agent.views.flush(tree(agent.root, agent.child, agent.agg))  # the tracker changed nothing

    assert sent(real_placement) == []  # nothing it changed, nothing written
    assert other.get_traits(agent.root).traits == {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"}
    assert other.get_aggregates(agent.root).aggregates == {agent.agg, theirs}


class Handed:
    """What a caller was handed (nova's ProviderTree, say): any object, held weakly."""


def test_a_flush_of_the_object_handed_out_writes_only_what_it_changed(
    real_placement: EmbeddedPlacement, agent: Agent
) -> None:
    handed = Handed()
    agent.views.bind(handed, agent.views.ensure(agent.root))
    make_client(real_placement).providers.add_traits(agent.root, ["HW_CPU_X86_SSE"])
    agent.client.providers.get_traits(agent.root)
    agent.views.ensure(agent.root)  # handed out again, to another caller: not this object's base
    real_placement.clear_requests_seen()

    agent.views.flush(tree(agent.root, agent.child, agent.agg, vcpu=16), holder=handed)

    assert sent(real_placement) == [
        ("PUT", "/resource_providers/{rp}/inventories", 409),  # what it changed, at the
        ("GET", "/resource_providers/{rp}/inventories", 200),  # view's generation, which
        ("PUT", "/resource_providers/{rp}/inventories", 200),  # the trait moved; no traits PUT
    ]
    other = make_client(real_placement).providers
    assert other.get_traits(agent.root).traits == {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"}


def test_a_stale_tree_from_a_new_client_is_a_conflict_and_writes_nothing(
    real_placement: EmbeddedPlacement, agent: Agent
) -> None:
    """A tree this view did not hand out is judged by the generations it carries: older than
    Placement's provider, it cannot tell its own changes from another writer's."""
    handed = agent.views.ensure(agent.root)
    generations = {p.uuid: p.generation for p in handed}
    other = make_client(real_placement).providers
    other.set_traits(agent.root, ["HW_CPU_X86_SSE"])  # after the handout
    fresh = make_client(real_placement).providers.views(window=WINDOW)  # a new client

    with pytest.raises(reportclient.ProviderChanged):
        fresh.flush(tree(agent.root, agent.child, agent.agg, vcpu=16), generations=generations)

    assert other.get_traits(agent.root).traits == {"HW_CPU_X86_SSE"}
    assert other.get_inventories(agent.root).inventories["VCPU"].total == 8


def test_a_tree_a_new_client_carries_at_placements_generation_is_flushed(
    real_placement: EmbeddedPlacement, agent: Agent
) -> None:
    handed = agent.views.ensure(agent.root)
    generations = {p.uuid: p.generation for p in handed}
    fresh = make_client(real_placement).providers.views(window=WINDOW)

    fresh.flush(tree(agent.root, agent.child, agent.agg, vcpu=16), generations=generations)

    other = make_client(real_placement).providers
    assert other.get_inventories(agent.root).inventories["VCPU"].total == 16
