"""The calls nova, neutron and cyborg make, against the real Placement.

Raw requests, caller-generation (compare-and-swap) writes, subtraction, the
client's default consumer type and per-call retry policies: what Placement
holds afterwards, and every request it saw.
"""

from __future__ import annotations

import pytest

from reportclient import (
    NO_RETRY,
    AllocationsNotHeld,
    DuplicateName,
    GenerationConflict,
    MicroversionUnsupported,
    OutcomeUnknown,
    PlacementUnavailable,
    ProviderNotFound,
    subtract_allocations,
)
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import (
    PROJECT,
    USER,
    claim,
    fast_retry,
    held,
    make_cached_client,
    make_client,
    new_id,
    raw_body,
    update,
    wire,
)
from tests.functional.test_lost_response import LosingAdapter, _client_over


# -- subtract_allocations ------------------------------------------------------
def test_subtraction_leaves_the_rest_and_drops_classes_brought_to_zero(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement)
    consumer = new_id()
    claim(client, consumer, {compute_node: {"VCPU": 4, "MEMORY_MB": 512}})

    state = update(
        client, consumer, subtract_allocations({compute_node: {"VCPU": 1, "MEMORY_MB": 512}})
    )

    raw = placement_admin.get_allocations(consumer)
    assert held(raw) == state.allocations == {compute_node: {"VCPU": 3}}
    assert raw["consumer_generation"] == state.generation == 2
    assert placement_admin.usages(compute_node)["MEMORY_MB"] == 0


def test_subtracting_more_than_held_reads_writes_nothing_and_says_how_much_is_missing(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement)
    consumer = new_id()
    claim(client, consumer, {compute_node: {"VCPU": 2}})
    real_placement.clear_requests_seen()

    with pytest.raises(AllocationsNotHeld) as raised:
        update(client, consumer, subtract_allocations({compute_node: {"VCPU": 3}}))

    assert wire(real_placement) == [("GET", f"/allocations/{consumer}", 200)]
    assert raised.value.missing == {compute_node: {"VCPU": 1}}
    assert held(placement_admin.get_allocations(consumer)) == {compute_node: {"VCPU": 2}}


# -- default consumer type -------------------------------------------------------
def test_a_clients_default_consumer_type_is_what_placement_records(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement, default_consumer_type="ACCELERATOR")
    claimed, batched = new_id(), new_id()

    claim(client, claimed, {compute_node: {"VCPU": 1}})
    client.write_many({batched: {compute_node: {"VCPU": 1}}}, project_id=PROJECT, user_id=USER)

    assert placement_admin.get_allocations(claimed)["consumer_type"] == "ACCELERATOR"
    assert placement_admin.get_allocations(batched)["consumer_type"] == "ACCELERATOR"


# -- put_allocations (compare-and-swap) ------------------------------------------
def test_put_allocations_writes_at_the_callers_generation_in_one_request(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement)
    consumer = new_id()
    placement_admin.put_allocations(consumer, raw_body({compute_node: {"VCPU": 1}}, None))
    real_placement.clear_requests_seen()

    state = client.put_allocations(
        consumer,
        {compute_node: {"VCPU": 2}},
        consumer_generation=1,
        project_id=PROJECT,
        user_id=USER,
    )

    assert wire(real_placement) == [("PUT", f"/allocations/{consumer}", 204)]
    raw = placement_admin.get_allocations(consumer)
    assert raw["consumer_generation"] == state.generation == 2
    assert held(raw) == {compute_node: {"VCPU": 2}}
    assert raw["consumer_type"] == "INSTANCE"


def test_put_allocations_at_a_stale_generation_raises_what_placement_holds(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement, retry=fast_retry())
    consumer = new_id()
    placement_admin.put_allocations(consumer, raw_body({compute_node: {"VCPU": 1}}, None))
    placement_admin.put_allocations(consumer, raw_body({compute_node: {"VCPU": 3}}, 1))
    real_placement.clear_requests_seen()

    with pytest.raises(GenerationConflict) as raised:
        client.put_allocations(
            consumer,
            {compute_node: {"VCPU": 2}},
            consumer_generation=1,
            project_id=PROJECT,
            user_id=USER,
        )

    assert wire(real_placement) == [("PUT", f"/allocations/{consumer}", 409)]
    assert raised.value.server_generation == 2
    assert "expected 2 but got 1" in (raised.value.detail or "")
    assert held(placement_admin.get_allocations(consumer)) == {compute_node: {"VCPU": 3}}


def test_put_allocations_for_a_new_consumer_that_exists_is_a_conflict_naming_its_generation(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement)
    consumer = new_id()
    placement_admin.put_allocations(consumer, raw_body({compute_node: {"VCPU": 1}}, None))

    with pytest.raises(GenerationConflict) as raised:
        client.put_allocations(
            consumer,
            {compute_node: {"VCPU": 2}},
            consumer_generation=None,
            project_id=PROJECT,
            user_id=USER,
        )

    assert raised.value.server_generation == 1


def test_put_allocations_lost_answer_is_outcome_unknown_and_never_sent_again(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    adapter = LosingAdapter("PUT", deliver=True)
    client = _client_over(real_placement.url, adapter, retry=fast_retry())
    consumer = new_id()
    real_placement.clear_requests_seen()

    with pytest.raises(OutcomeUnknown) as raised:
        client.put_allocations(
            consumer,
            {compute_node: {"VCPU": 1}},
            consumer_generation=None,
            project_id=PROJECT,
            user_id=USER,
        )

    assert wire(real_placement) == [("PUT", f"/allocations/{consumer}", 204)]
    assert raised.value.sent.consumer_generation is None
    assert placement_admin.get_allocations(consumer)["consumer_generation"] == 1


# -- per-call retry ---------------------------------------------------------------
def test_a_per_call_policy_surfaces_the_first_conflict_the_clients_recovers(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_cached_client(real_placement, retry=fast_retry())
    consumer = new_id()
    claim(client, consumer, {compute_node: {"VCPU": 1}})
    # Another writer: the cached generation (1) is stale now.
    placement_admin.put_allocations(consumer, raw_body({compute_node: {"VCPU": 1}}, 1))
    real_placement.clear_requests_seen()

    with pytest.raises(GenerationConflict):
        claim(client, consumer, {compute_node: {"VCPU": 2}}, retry=NO_RETRY)
    assert wire(real_placement) == [("PUT", f"/allocations/{consumer}", 409)]

    placement_admin.put_allocations(consumer, raw_body({compute_node: {"VCPU": 1}}, 2))
    client.get_allocations(consumer)
    placement_admin.put_allocations(consumer, raw_body({compute_node: {"VCPU": 1}}, 3))
    state = claim(client, consumer, {compute_node: {"VCPU": 2}})
    assert state.generation == 5


# -- raw requests -----------------------------------------------------------------
def test_raw_requests_reach_untyped_routes_with_the_clients_token_and_version(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement)
    name = f"CUSTOM_ADOPT_{new_id()[:8].upper()}"

    created = client.request("PUT", f"/resource_classes/{name}")
    again = client.request("PUT", f"/resource_classes/{name}")
    listed = client.request("GET", f"/resource_providers?uuid={compute_node}")
    old = client.request("GET", f"/resource_providers/{compute_node}", microversion="1.0")

    assert (created.status, again.status) == (201, 204)
    assert created.location is not None and created.location.endswith(name)
    assert created.request_id is not None and created.request_id.startswith("req-")
    assert [rp["uuid"] for rp in listed.body["resource_providers"]] == [compute_node]
    assert listed.microversion == "1.39"
    assert "parent_provider_uuid" in listed.body["resource_providers"][0]
    assert old.microversion == "1.0"
    assert "parent_provider_uuid" not in old.body  # the 1.0 document


def test_raw_request_errors_are_the_typed_errors(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement)
    name = placement_admin.provider(compute_node)["name"]

    with pytest.raises(ProviderNotFound):
        client.request("GET", f"/resource_providers/{new_id()}")
    with pytest.raises(DuplicateName):
        client.request("POST", "/resource_providers", json={"name": name})
    with pytest.raises(MicroversionUnsupported):
        client.request("GET", "/resource_providers", microversion="1.99")


def test_a_raw_write_whose_answer_is_lost_is_sent_once(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    adapter = LosingAdapter("PUT", deliver=True)
    client = _client_over(real_placement.url, adapter, retry=fast_retry())
    name = f"CUSTOM_LOST_{new_id()[:8].upper()}"
    real_placement.clear_requests_seen()

    with pytest.raises(PlacementUnavailable) as raised:
        client.request("PUT", f"/resource_classes/{name}")

    assert raised.value.outcome_unknown
    assert wire(real_placement) == [("PUT", f"/resource_classes/{name}", 201)]


def test_a_raw_read_whose_answer_is_lost_is_read_again(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    adapter = LosingAdapter("GET", deliver=True)
    client = _client_over(real_placement.url, adapter, retry=fast_retry())
    real_placement.clear_requests_seen()

    answer = client.request("GET", f"/resource_providers/{compute_node}")

    assert answer.body["uuid"] == compute_node
    path = f"/resource_providers/{compute_node}"
    assert wire(real_placement) == [("GET", path, 200), ("GET", path, 200)]
