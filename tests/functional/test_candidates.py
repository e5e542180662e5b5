"""Allocation candidates against the real Placement: each test fences its providers in a fresh
aggregate or tree, since the session's Placement holds every other test's providers too."""

from __future__ import annotations

import pytest

import reportclient
from reportclient import RequestGroup, any_of
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import claim, held, make_client, new_id
from tests.functional._scheduling import set_aggregates, set_traits


def test_candidates_honour_room_traits_and_aggregate(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    agg = new_id()
    fits = placement_admin.create_provider(inventory={"VCPU": {"total": 4}})
    full = placement_admin.create_provider(inventory={"VCPU": {"total": 1}})
    plain = placement_admin.create_provider(inventory={"VCPU": {"total": 4}})
    for rp in (fits, full, plain):
        set_aggregates(placement_admin, rp, [agg])
    set_traits(placement_admin, fits, ["CUSTOM_FAST"])
    set_traits(placement_admin, full, ["CUSTOM_FAST"])
    client = make_client(real_placement)

    found = client.get_allocation_candidates(
        resources={"VCPU": 2}, required=["CUSTOM_FAST"], member_of=[agg]
    )

    assert [r.allocations for r in found.allocation_requests] == [{fits: {"VCPU": 2}}]
    assert found.allocation_requests[0].mappings == {"": (fits,)}
    summary = found.provider_summaries[fits]
    assert summary.resources["VCPU"] == reportclient.ResourceSummary(4, 0)
    assert summary.traits == frozenset({"CUSTOM_FAST"})
    assert summary.root_provider_uuid == fits


def test_any_of_traits_and_forbidden_aggregates(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    agg, banned = new_id(), new_id()
    a = placement_admin.create_provider(inventory={"VCPU": {"total": 4}})
    b = placement_admin.create_provider(inventory={"VCPU": {"total": 4}})
    c = placement_admin.create_provider(inventory={"VCPU": {"total": 4}})
    set_aggregates(placement_admin, a, [agg])
    set_aggregates(placement_admin, b, [agg, banned])
    set_aggregates(placement_admin, c, [agg])
    set_traits(placement_admin, a, ["CUSTOM_GOLD"])
    set_traits(placement_admin, b, ["CUSTOM_SILVER"])
    client = make_client(real_placement)

    found = client.get_allocation_candidates(
        resources={"VCPU": 1},
        required=[any_of("CUSTOM_GOLD", "CUSTOM_SILVER")],
        member_of=[agg],
        not_member_of=[banned],
    )

    assert {rp for r in found.allocation_requests for rp in r.allocations} == {a}


def test_granular_group_in_a_tree_maps_to_the_child_and_claims_with_mappings(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    root = placement_admin.create_provider(inventory={"VCPU": {"total": 4}})
    nic = placement_admin.create_provider(
        parent=root, inventory={"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 1000}}
    )
    client = make_client(real_placement)

    found = client.get_allocation_candidates(
        resources={"VCPU": 1},
        groups={"_NET": RequestGroup(resources={"NET_BW_EGR_KILOBIT_PER_SEC": 100})},
        in_tree=root,
    )
    (request,) = found.allocation_requests
    consumer = new_id()
    state = claim(client, consumer, request)

    assert request.mappings == {"": (root,), "_NET": (nic,)}
    assert found.provider_summaries[nic].parent_provider_uuid == root
    assert held(placement_admin.get_allocations(consumer)) == {
        root: {"VCPU": 1},
        nic: {"NET_BW_EGR_KILOBIT_PER_SEC": 100},
    }
    assert state.generation == 1


def test_isolate_needs_distinct_providers_and_root_required_filters_roots(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    root = placement_admin.create_provider(inventory={"VCPU": {"total": 8}})
    set_traits(placement_admin, root, ["CUSTOM_ROOT_OK"])
    client = make_client(real_placement)
    groups = {s: RequestGroup({"VCPU": 1}, in_tree=root) for s in ("1", "2")}

    isolated = client.get_allocation_candidates(groups=groups, group_policy="isolate")
    shared = client.get_allocation_candidates(
        groups=groups, group_policy="none", root_required=["CUSTOM_ROOT_OK"]
    )
    refused = client.get_allocation_candidates(
        groups=groups, group_policy="none", root_forbidden=["CUSTOM_ROOT_OK"]
    )

    assert len(isolated) == 0
    assert [r.allocations for r in shared.allocation_requests] == [{root: {"VCPU": 2}}]
    assert len(refused) == 0


def test_unknown_resource_class_is_a_400_with_placements_words(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement)
    with pytest.raises(reportclient.PlacementError) as caught:
        client.get_allocation_candidates(resources={"CUSTOM_NOPE_NOT_THERE": 1})
    assert caught.value.status == 400
    assert caught.value.detail == (
        "Invalid resource class in resources parameter: No such resource class "
        "CUSTOM_NOPE_NOT_THERE."
    )
