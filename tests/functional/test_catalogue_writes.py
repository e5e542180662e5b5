"""Catalogue writes and what the proofs may assume about them (real Placement, issue 53).

A custom resource class renamed (``PUT /resource_classes/{name}`` with a body,
1.2-1.6) renames it in every inventory and moves no provider; an aggregate set
below 1.19 moves nothing at all. What this client sends itself is forgotten
at once (the forget rule hears the catalogue); what others send is seen within
the window unless the client's settings assume it never happens, and then,
exactly as :class:`reportclient.ProofAssumption` documents, it is not.
"""

from __future__ import annotations

import uuid as uuidlib

import pytest

from reportclient import PlacementClient, ProofAssumption, ProviderSpec
from reportclient.fixture import FakeClock
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import backdate, backdate_classes, make_client, new_id, wire

WINDOW = 300.0


def custom_class() -> str:
    return "CUSTOM_T53_" + uuidlib.uuid4().hex[:12].upper()


def test_a_class_this_client_renames_raw_forgets_the_inventories_that_named_it(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement, cache_ttl=60)  # trusts its cached inventories
    old, new = custom_class(), custom_class()
    rp = new_id()
    client.providers.create_provider(f"rp-{rp}", uuid=rp)
    client.providers.ensure_resource_class(old)
    client.providers.set_inventories(rp, {old: 4})

    client.request("PUT", f"/resource_classes/{old}", json={"name": new}, microversion="1.6")
    # Computed from the cached inventories, this write would name a class that no
    # longer exists (Placement's 400); forgotten, it is computed from a fresh read.
    client.providers.set_inventory(rp, "VCPU", 2)

    held = make_client(real_placement).providers.get_inventories(rp).inventories
    assert {rc: inv.total for rc, inv in held.items()} == {new: 4, "VCPU": 2}


def test_a_trait_this_client_deletes_forgets_the_traits_that_named_it(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement, cache_ttl=60)
    other = make_client(real_placement).providers
    trait = custom_class()
    rp = new_id()
    client.providers.create_provider(f"rp-{rp}", uuid=rp)
    client.providers.ensure_trait(trait)
    client.providers.set_traits(rp, [trait])  # cached
    other.set_traits(rp, [])  # another writer stops using it
    client.providers.delete_trait(trait)  # no provider has it: Placement deletes it
    real_placement.clear_requests_seen()

    client.providers.add_traits(rp, ["HW_CPU_X86_SSE"])

    assert wire(real_placement)[0][:2] == ("GET", f"/resource_providers/{rp}/traits")
    assert other.get_traits(rp).traits == {"HW_CPU_X86_SSE"}


def _agent(
    placement: EmbeddedPlacement, *assumed: ProofAssumption
) -> tuple[PlacementClient, FakeClock, list[ProviderSpec], str]:
    clock = FakeClock()
    agent = make_client(placement, clock=clock, proof_assumptions=list(assumed))
    root, agg, dev = new_id(), new_id(), custom_class()
    specs = [ProviderSpec(root, f"cn-{root}", None, {dev: 4}, {"HW_CPU_X86_AVX2"}, {agg})]
    agent.providers.reconcile(specs, max_staleness=WINDOW)
    backdate(placement, [root])
    backdate_classes(placement)
    clock.advance(WINDOW + 1)
    agent.providers.reconcile(specs, max_staleness=WINDOW)  # proven as of now
    backdate(placement, [root])
    backdate_classes(placement)
    return agent, clock, specs, root


@pytest.mark.parametrize(
    ("assumed", "requests"),
    [
        ((), 3),  # the listing, the class listing and the aggregates
        ((ProofAssumption.AGGREGATES_AT_1_19,), 2),
        ((ProofAssumption.NO_CLASS_RENAMES,), 2),
        ((ProofAssumption.AGGREGATES_AT_1_19, ProofAssumption.NO_CLASS_RENAMES), 1),
    ],
    ids=["sound", "aggregates-at-1.19", "no-class-renames", "both"],
)
def test_each_assumption_saves_its_request_per_window(
    real_placement: EmbeddedPlacement, assumed: tuple[ProofAssumption, ...], requests: int
) -> None:
    agent, clock, specs, _root = _agent(real_placement, *assumed)
    clock.advance(WINDOW + 1)
    assert agent.providers.reconcile(specs, max_staleness=WINDOW).requests == requests


def test_assuming_aggregates_at_1_19_misses_an_aggregate_set_below_it(
    real_placement: EmbeddedPlacement,
) -> None:
    """The risk the assumption names, shown: the agent does not put its aggregate back."""
    agent, clock, specs, root = _agent(real_placement, ProofAssumption.AGGREGATES_AT_1_19)
    theirs = new_id()
    make_client(real_placement).request(
        "PUT", f"/resource_providers/{root}/aggregates", json=[theirs], microversion="1.1"
    )
    clock.advance(WINDOW + 1)

    agent.providers.reconcile(specs, max_staleness=WINDOW)

    assert make_client(real_placement).providers.get_aggregates(root).aggregates == {theirs}


def test_assuming_no_class_renames_misses_a_rename(real_placement: EmbeddedPlacement) -> None:
    """The risk the assumption names, shown: the agent keeps the old class name."""
    agent, clock, specs, root = _agent(real_placement, ProofAssumption.NO_CLASS_RENAMES)
    dev = next(iter(specs[0].inventories or {}))
    make_client(real_placement).request(
        "PUT", f"/resource_classes/{dev}", json={"name": dev + "_X"}, microversion="1.6"
    )
    clock.advance(WINDOW + 1)

    agent.providers.reconcile(specs, max_staleness=WINDOW)

    held = make_client(real_placement).providers.get_inventories(root).inventories
    assert set(held) == {dev + "_X"}
