"""Allocation candidates: the query as sent, validation before the wire, typed results."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

import reportclient
from reportclient import AllocationCandidates, CandidatesQuery, RequestGroup, any_of
from reportclient.fixture import make_client
from tests.support.wire import PROJECT, URL, USER, calls, new_uuid, sent

AGG = "5d0a3f4e-3a8e-4b8c-9e57-0f4a1f0a2b11"
AGG2 = "0b6f2c5e-8f6b-4a36-9a0b-4b7f1e2d3c44"


def _query(wire) -> dict[str, list[str]]:
    return parse_qs(urlsplit(wire.request_history[-1].url).query)


def _body(rp: str) -> dict:
    return {
        "allocation_requests": [
            {
                "allocations": {rp: {"resources": {"VCPU": 1}}},
                "mappings": {"": [rp]},
            }
        ],
        "provider_summaries": {
            rp: {
                "resources": {"VCPU": {"capacity": 8, "used": 3}},
                "traits": ["HW_CPU_X86_AVX2"],
                "parent_provider_uuid": None,
                "root_provider_uuid": rp,
            }
        },
    }


# -- the query on the wire -----------------------------------------------------------


def test_query_sends_resources_traits_aggregates_and_limit(wire, client, rp):
    wire.get(f"{URL}/allocation_candidates", json=_body(rp))

    client.get_allocation_candidates(
        resources={"VCPU": 1, "MEMORY_MB": 512},
        required=["HW_CPU_X86_AVX2", any_of("CUSTOM_A", "CUSTOM_B")],
        forbidden=["CUSTOM_SLOW"],
        member_of=[any_of(AGG, AGG2)],
        not_member_of=[AGG2],
        limit=5,
    )

    assert _query(wire) == {
        "resources": ["VCPU:1,MEMORY_MB:512"],
        "required": ["HW_CPU_X86_AVX2,!CUSTOM_SLOW", "in:CUSTOM_A,CUSTOM_B"],
        "member_of": [f"in:{min(AGG, AGG2)},{max(AGG, AGG2)}", f"!in:{AGG2}"],
        "limit": ["5"],
    }


def test_granular_groups_carry_their_suffix_policy_subtree_and_root_traits(wire, client, rp):
    wire.get(f"{URL}/allocation_candidates", json=_body(rp))
    query = CandidatesQuery(
        resources={"VCPU": 2},
        groups={
            "_NET": RequestGroup(resources={"NET_BW_EGR_KILOBIT_PER_SEC": 10}, in_tree=rp),
            "_ACCEL": RequestGroup(required=["CUSTOM_FPGA"]),
        },
        group_policy="isolate",
        same_subtree=[("_NET", "_ACCEL")],
        root_required=["COMPUTE_STATUS_ENABLED"],
        root_forbidden=["COMPUTE_STATUS_DISABLED"],
    )

    client.get_allocation_candidates(query)

    assert _query(wire) == {
        "resources": ["VCPU:2"],
        "resources_NET": ["NET_BW_EGR_KILOBIT_PER_SEC:10"],
        "in_tree_NET": [rp],
        "required_ACCEL": ["CUSTOM_FPGA"],
        "group_policy": ["isolate"],
        "same_subtree": ["_NET,_ACCEL"],
        "root_required": ["COMPUTE_STATUS_ENABLED,!COMPUTE_STATUS_DISABLED"],
    }
    assert query.version() == (1, 36)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"resources": {"vcpu": 1}},
        {"resources": {"VCPU": 0}},
        {"resources": {"VCPU": -1}},
        {"resources": {"VCPU": True}},
        {"resources": {"VCPU": 1}, "member_of": ["not-a-uuid"]},
        {"resources": {"VCPU": 1}, "in_tree": "nope"},
        {"resources": {"VCPU": 1}, "required": "HW_CPU_X86_AVX2"},
        {"resources": {"VCPU": 1}, "required": ["lower"]},
        {"resources": {"VCPU": 1}, "required": ["A"], "forbidden": ["A"]},
        {"resources": {"VCPU": 1}, "limit": 0},
        {"resources": {"VCPU": 1}, "group_policy": "random"},
        {"groups": {"1": RequestGroup({"VCPU": 1}), "2": RequestGroup({"VCPU": 1})}},
        {"groups": {"bad suffix": RequestGroup({"VCPU": 1})}},
        {"groups": {"_A": RequestGroup(required=["CUSTOM_X"])}, "resources": {"VCPU": 1}},
        {"resources": {"VCPU": 1}, "same_subtree": [("_MISSING",)]},
        {"required": ["HW_CPU_X86_AVX2"]},
        {},
    ],
)
def test_malformed_queries_are_invalid_input_before_any_request(wire, client, kwargs):
    with pytest.raises(reportclient.InvalidInput):
        client.get_allocation_candidates(**kwargs)
    assert calls(wire) == []


def test_a_query_needing_a_newer_microversion_is_refused_before_the_wire(wire, sleeps):
    old = reportclient.PlacementClient.from_endpoint(URL, token="admin", microversion="1.35")
    with pytest.raises(reportclient.MicroversionUnsupported):
        old.get_allocation_candidates(resources={"VCPU": 1}, required=[any_of("A", "B")])
    assert calls(wire) == []


# -- results ------------------------------------------------------------------------


def test_results_parse_into_frozen_requests_and_summaries(wire, client, rp):
    wire.get(f"{URL}/allocation_candidates", json=_body(rp))

    found = client.get_allocation_candidates(resources={"VCPU": 1})

    assert isinstance(found, AllocationCandidates)
    assert len(found) == 1
    request = found.allocation_requests[0]
    assert request.allocations == {rp: {"VCPU": 1}}
    assert request.mappings == {"": (rp,)}
    summary = found.provider_summaries[rp]
    assert summary.resources["VCPU"].free == 5
    assert summary.traits == frozenset({"HW_CPU_X86_AVX2"})
    assert summary.root_provider_uuid == rp and summary.parent_provider_uuid is None
    with pytest.raises(AttributeError):
        request.allocations = {}  # type: ignore[misc]


def test_a_candidate_goes_straight_into_claim_with_its_mappings(wire, client, rp):
    consumer = new_uuid()
    wire.get(f"{URL}/allocation_candidates", json=_body(rp))
    wire.put(f"{URL}/allocations/{consumer}", status_code=204, text="")

    found = client.get_allocation_candidates(resources={"VCPU": 1})
    state = client.claim(consumer, found.allocation_requests[0], project_id=PROJECT, user_id=USER)

    body = sent(wire, 1)
    assert body["allocations"] == {rp: {"resources": {"VCPU": 1}}}
    assert body["mappings"] == {"": [rp]}
    assert state.allocations == {rp: {"VCPU": 1}}


def test_mappings_are_left_out_below_microversion_1_34(wire, rp):
    consumer = new_uuid()
    old = reportclient.PlacementClient.from_endpoint(URL, token="admin", microversion="1.33")
    wire.put(f"{URL}/allocations/{consumer}", status_code=204, text="")

    old.claim(consumer, {rp: {"VCPU": 1}}, mappings={"": [rp]}, project_id=PROJECT, user_id=USER)

    assert "mappings" not in sent(wire, 0)


# -- against the fake ------------------------------------------------------------------


def test_fake_finds_only_providers_with_room_traits_and_aggregate(fake):
    fits = fake.create_provider(inventory={"VCPU": 4})
    full = fake.create_provider(inventory={"VCPU": 1})
    no_trait = fake.create_provider(inventory={"VCPU": 4})
    outside = fake.create_provider(inventory={"VCPU": 4})
    for rp in (fits, full, no_trait):
        fake.set_aggregates(rp, [AGG])
    fake.set_traits(fits, ["HW_CPU_X86_AVX2"])
    fake.set_traits(full, ["HW_CPU_X86_AVX2"])
    fake.set_traits(outside, ["HW_CPU_X86_AVX2"])
    client = make_client(fake, microversion="1.39")

    found = client.get_allocation_candidates(
        resources={"VCPU": 2}, required=["HW_CPU_X86_AVX2"], member_of=[AGG]
    )

    assert [r.allocations for r in found.allocation_requests] == [{fits: {"VCPU": 2}}]
    assert set(found.provider_summaries) == {fits}


def test_fake_spreads_the_unsuffixed_group_over_a_tree_and_maps_granular_groups(fake):
    root = fake.create_provider(inventory={"VCPU": 4, "MEMORY_MB": 1024})
    nic = fake.create_provider(parent=root, inventory={"NET_BW_EGR_KILOBIT_PER_SEC": 100})
    client = make_client(fake, microversion="1.39")

    found = client.get_allocation_candidates(
        resources={"VCPU": 1},
        groups={"_NET": RequestGroup(resources={"NET_BW_EGR_KILOBIT_PER_SEC": 10})},
        in_tree=root,
    )

    (request,) = found.allocation_requests
    assert request.allocations == {root: {"VCPU": 1}, nic: {"NET_BW_EGR_KILOBIT_PER_SEC": 10}}
    assert request.mappings == {"": (root,), "_NET": (nic,)}
    assert found.provider_summaries[nic].parent_provider_uuid == root


def test_fake_isolate_keeps_granular_groups_on_different_providers(fake):
    only = fake.create_provider(inventory={"VCPU": 8})
    client = make_client(fake, microversion="1.39")
    groups = {"1": RequestGroup({"VCPU": 1}), "2": RequestGroup({"VCPU": 1})}

    isolated = client.get_allocation_candidates(groups=groups, group_policy="isolate")
    shared = client.get_allocation_candidates(groups=groups, group_policy="none")

    assert len(isolated) == 0
    assert [r.allocations for r in shared.allocation_requests] == [{only: {"VCPU": 2}}]


def test_fake_refuses_an_unknown_resource_class_with_placements_words(fake):
    fake.create_provider(inventory={"VCPU": 8})
    client = make_client(fake, microversion="1.39")

    with pytest.raises(reportclient.PlacementError) as caught:
        client.get_allocation_candidates(resources={"CUSTOM_NOPE": 1})

    assert caught.value.status == 400
    assert caught.value.detail == (
        "Invalid resource class in resources parameter: No such resource class CUSTOM_NOPE."
    )


def test_fake_root_required_filters_on_the_root_provider(fake):
    root = fake.create_provider(inventory={"VCPU": 8})
    other = fake.create_provider(inventory={"VCPU": 8})
    fake.set_traits(root, ["COMPUTE_STATUS_DISABLED"])
    client = make_client(fake, microversion="1.39")

    found = client.get_allocation_candidates(
        resources={"VCPU": 1}, root_forbidden=["COMPUTE_STATUS_DISABLED"]
    )

    assert [list(r.allocations) for r in found.allocation_requests] == [[other]]
