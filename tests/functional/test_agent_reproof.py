"""Past its window the agent setting re-proves a field by its tree's Last-Modified (real Placement).

What the rule rests on is Placement's own behaviour, shown first: the listing's
``Last-Modified`` (1.15+, the newest ``updated_at``/``created_at`` of the listed
providers) moves on an allocation, on a field write and on a re-creation under the
same uuid. The server's time is made controllable by moving the embedded database's
timestamps back (no sleeping for the clock): a tree last changed in 2001 is unchanged
since any proof this run makes.
"""

from __future__ import annotations

from typing import Any

import pytest
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from reportclient import PlacementClient, ProviderSpec
from reportclient._gateway.gateway import server_time
from reportclient.fixture import FakeClock
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import (
    LONG_AGO,
    backdate,
    backdate_classes,
    claim,
    make_client,
    new_id,
    stamp_later,
    wire,
)

WINDOW = 300.0


def tree_modified(placement: EmbeddedPlacement, root: str) -> float:
    client = make_client(placement)
    reply = client._core.transport.request("GET", f"/resource_providers?in_tree={root}")
    modified = server_time(reply, "last-modified")
    assert modified is not None
    return modified


def test_placements_listing_moves_its_last_modified_on_every_change_the_rule_relies_on(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement)
    root = new_id()
    client.providers.create_provider(f"cn-{root}", uuid=root)
    client.providers.set_inventories(root, {"VCPU": 8})
    old = LONG_AGO.timestamp()

    backdate(real_placement, [root])
    assert tree_modified(real_placement, root) == old
    claim(client, new_id(), {root: {"VCPU": 1}})
    assert tree_modified(real_placement, root) > old + 86400  # an allocation

    backdate(real_placement, [root])
    client.providers.set_traits(root, ["HW_CPU_X86_AVX2"])
    assert tree_modified(real_placement, root) > old + 86400  # a field write

    other = make_client(real_placement).providers
    client.providers.delete_provider(root, cascade=True)
    other.create_provider(f"cn-{root}", uuid=root)
    assert tree_modified(real_placement, root) > old + 86400  # a re-creation


def _tree(root: str, child: str) -> list[ProviderSpec]:
    return [
        ProviderSpec(root, f"cn-{root}", inventories={"VCPU": 16}, traits={"HW_CPU_X86_AVX2"}),
        ProviderSpec(child, f"dev-{child}", parent=root, inventories={"CUSTOM_FUNCTIONAL_DEV": 2}),
    ]


def test_a_steady_agent_past_its_window_pays_its_tree_listing_and_the_class_listing(
    real_placement: EmbeddedPlacement,
) -> None:
    """Nothing changed since its proofs: one listing of the tree proves the generations, and
    one of the resource classes proves that the child's custom class was not renamed (issue
    53: a rename moves no provider). The description manages no aggregates: none is read."""
    clock = FakeClock()
    agent = make_client(real_placement, clock=clock).providers
    root, child = new_id(), new_id()
    agent.reconcile(_tree(root, child), max_staleness=WINDOW)
    backdate(real_placement, [root, child])  # the tree's last change predates every proof
    backdate_classes(real_placement)  # and so does every class's

    for _period in range(3):  # each window, then every period inside the next one
        clock.advance(WINDOW + 1)
        real_placement.clear_requests_seen()
        report = agent.reconcile(_tree(root, child), max_staleness=WINDOW)
        assert [p.split("?")[0] for _m, p, _s in wire(real_placement)] == [
            "/resource_providers",
            "/resource_classes",
        ]
        assert report.requests == 2
        clock.advance(60)
        assert agent.reconcile(_tree(root, child), max_staleness=WINDOW).requests == 0


@pytest.mark.parametrize("tree_was_quiet", [False, True], ids=["just-proven", "quiet-since-2001"])
def test_a_provider_re_created_at_its_cached_generation_is_restored_within_one_window(
    real_placement: EmbeddedPlacement, tree_was_quiet: bool
) -> None:
    """Bug 7 of issue 35: another writer deletes the provider and re-creates it under its uuid
    at our generation. Whether the tree changed just before our proof or long before it, the
    re-creation moves the listing's Last-Modified past the proof, and the field is read."""
    clock = FakeClock()
    agent = make_client(real_placement, clock=clock).providers
    other = make_client(real_placement).providers
    root = new_id()
    specs = [ProviderSpec(root, f"cn-{root}", inventories={"VCPU": 16}, traits={"HW_CPU_X86_AVX2"})]
    ours = agent.reconcile(specs, max_staleness=WINDOW).generations[root]
    if tree_was_quiet:
        backdate(real_placement, [root])
    other.delete_provider(root)
    other.create_provider(f"cn-{root}", uuid=root)
    other.set_inventories(root, {"VCPU": 4})
    assert other.set_traits(root, ["COMPUTE_TRUSTED_CERTS"]).generation == ours

    clock.advance(WINDOW + 1)
    report = agent.reconcile(specs, max_staleness=WINDOW)

    assert other.get_inventories(root).inventories["VCPU"].total == 16
    assert other.get_traits(root).traits == frozenset({"HW_CPU_X86_AVX2"})
    assert set(report.written) == {(root, "inventories"), (root, "traits")}


def test_past_its_window_a_child_the_roots_allocations_did_not_move_costs_one_read_of_itself(
    real_placement: EmbeddedPlacement,
) -> None:
    """Issue 49: a compute node's tree moves with every allocation on its root. The root's
    fields are read (an allocation and a field write move the generation alike); a child
    still at its generation is proven by its own Last-Modified, one read for all its fields."""
    clock = FakeClock()
    agent = make_client(real_placement, clock=clock).providers
    root, child = new_id(), new_id()
    child_spec = ProviderSpec(
        child,
        f"dev-{child}",
        parent=root,
        inventories={"CUSTOM_FUNCTIONAL_DEV": 2},
        traits={"CUSTOM_FUNCTIONAL_GOLD"},
    )
    specs = [_tree(root, child)[0], child_spec]
    agent.reconcile(specs, max_staleness=WINDOW)
    backdate(real_placement, [root, child])
    backdate_classes(real_placement)
    clock.advance(WINDOW + 1)
    agent.reconcile(specs, max_staleness=WINDOW)  # proven again as of now
    claim(make_client(real_placement), new_id(), {root: {"VCPU": 1}})
    stamp_later(real_placement, [root])  # the claim, well after that proof
    real_placement.clear_requests_seen()
    clock.advance(WINDOW + 1)

    report = agent.reconcile(specs, max_staleness=WINDOW)

    paths = sorted(
        p.split("?")[0].replace(root, "{root}").replace(child, "{child}")
        for _m, p, _s in wire(real_placement)
    )
    assert paths == sorted(
        [
            "/resource_providers",
            "/resource_providers/{root}/inventories",
            "/resource_providers/{root}/traits",
            "/resource_providers/{child}",
            "/resource_classes",  # the child's custom class not renamed since its proof
        ]
    )
    assert report.requests == 5


class _SlowAdapter(ks_adapter.Adapter):  # type: ignore[misc]
    """A keystoneauth Adapter on which every request takes one second of the agent's clock."""

    def __init__(self, *args: Any, clock: FakeClock, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.clocks = [clock]  # a list: a client may copy its Adapter, the copies share it

    def request(self, url: str, method: str, **kwargs: Any) -> Any:
        try:
            return super().request(url, method, **kwargs)
        finally:
            self.clocks[0].advance(1)


def test_a_field_read_after_the_listing_is_proven_again_by_the_next_listing_however_young(
    real_placement: EmbeddedPlacement,
) -> None:
    """The listing that ends a window proves every field it can, young or not.

    A field read after its tree's listing (each read takes a second here) is
    younger than the tree's proof. When the next window ends, that listing
    proves the field unchanged but found it still young by its own stamp,
    so it was not stamped again; the field then outlived the window the
    listing opened, and the next period, inside that window, read every
    field (measured at 200 real-time agents: a steady period after a listing
    cost 4 reads for the root's and the child's fields).
    """
    clock = FakeClock()
    session = ks_session.Session(auth=token_endpoint.Token(real_placement.url, "admin"))
    adapter = _SlowAdapter(
        session, service_type="placement", endpoint_override=real_placement.url, clock=clock
    )
    agent = PlacementClient(adapter, microversion="1.39", clock=clock).providers
    root, child = new_id(), new_id()
    agent.reconcile(_tree(root, child), max_staleness=WINDOW)
    clock.advance(WINDOW + 1)
    # Just written: the listing cannot prove the fields (the 5 s margin); each is read,
    # a second apart, after the listing.
    assert agent.reconcile(_tree(root, child), max_staleness=WINDOW).requests == 1 + 3
    backdate(real_placement, [root, child])  # from now on, the listing proves them
    backdate_classes(real_placement)  # and the class listing their class names
    tree_proven = clock.now - 4  # when that call began (each request took a second)

    clock.now = tree_proven + WINDOW + 0.5  # the tree's window ended, its fields' not yet
    assert agent.reconcile(_tree(root, child), max_staleness=WINDOW).requests == 2
    clock.advance(60)  # inside the window that listing opened

    real_placement.clear_requests_seen()
    assert agent.reconcile(_tree(root, child), max_staleness=WINDOW).requests == 0
    assert wire(real_placement) == []
