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
from tests.functional._helpers import (
    PROJECT,
    USER,
    Real,
    claim,
    fast_retry,
    held,
    new_id,
    raw_body,
    update,
)
from tests.functional.test_lost_response import LosingAdapter, _client_over


# -- subtract_allocations ------------------------------------------------------
def test_subtraction_leaves_the_rest_and_drops_classes_brought_to_zero(real: Real) -> None:
    client, consumer = real.claimed({real.node: {"VCPU": 4, "MEMORY_MB": 512}})

    state = update(
        client, consumer, subtract_allocations({real.node: {"VCPU": 1, "MEMORY_MB": 512}})
    )

    raw = real.admin.get_allocations(consumer)
    assert held(raw) == state.allocations == {real.node: {"VCPU": 3}}
    assert raw["consumer_generation"] == state.generation == 2
    assert real.admin.usages(real.node)["MEMORY_MB"] == 0


def test_subtracting_more_than_held_reads_writes_nothing_and_says_how_much_is_missing(
    real: Real,
) -> None:
    client, consumer = real.claimed({real.node: {"VCPU": 2}})
    real.placement.clear_requests_seen()

    with pytest.raises(AllocationsNotHeld) as raised:
        update(client, consumer, subtract_allocations({real.node: {"VCPU": 3}}))

    assert real.wire() == [("GET", f"/allocations/{consumer}", 200)]
    assert raised.value.missing == {real.node: {"VCPU": 1}}
    assert held(real.admin.get_allocations(consumer)) == {real.node: {"VCPU": 2}}


# -- default consumer type -------------------------------------------------------
def test_a_clients_default_consumer_type_is_what_placement_records(real: Real) -> None:
    client = real.client(default_consumer_type="ACCELERATOR")
    claimed, batched = new_id(), new_id()

    claim(client, claimed, {real.node: {"VCPU": 1}})
    client.write_many({batched: {real.node: {"VCPU": 1}}}, project_id=PROJECT, user_id=USER)

    assert real.admin.get_allocations(claimed)["consumer_type"] == "ACCELERATOR"
    assert real.admin.get_allocations(batched)["consumer_type"] == "ACCELERATOR"


# -- put_allocations (compare-and-swap) ------------------------------------------
def test_put_allocations_writes_at_the_callers_generation_in_one_request(real: Real) -> None:
    client = real.client()
    consumer = new_id()
    real.admin.put_allocations(consumer, raw_body({real.node: {"VCPU": 1}}, None))
    real.placement.clear_requests_seen()

    state = client.put_allocations(
        consumer,
        {real.node: {"VCPU": 2}},
        consumer_generation=1,
        project_id=PROJECT,
        user_id=USER,
    )

    assert real.wire() == [("PUT", f"/allocations/{consumer}", 204)]
    raw = real.admin.get_allocations(consumer)
    assert raw["consumer_generation"] == state.generation == 2
    assert held(raw) == {real.node: {"VCPU": 2}}
    assert raw["consumer_type"] == "INSTANCE"


def test_put_allocations_at_a_stale_generation_raises_what_placement_holds(real: Real) -> None:
    client = real.client(retry=fast_retry())
    consumer = new_id()
    real.admin.put_allocations(consumer, raw_body({real.node: {"VCPU": 1}}, None))
    real.admin.put_allocations(consumer, raw_body({real.node: {"VCPU": 3}}, 1))
    real.placement.clear_requests_seen()

    with pytest.raises(GenerationConflict) as raised:
        client.put_allocations(
            consumer,
            {real.node: {"VCPU": 2}},
            consumer_generation=1,
            project_id=PROJECT,
            user_id=USER,
        )

    assert real.wire() == [("PUT", f"/allocations/{consumer}", 409)]
    assert raised.value.server_generation == 2
    assert "expected 2 but got 1" in (raised.value.detail or "")
    assert held(real.admin.get_allocations(consumer)) == {real.node: {"VCPU": 3}}


def test_put_allocations_for_a_new_consumer_that_exists_is_a_conflict_naming_its_generation(
    real: Real,
) -> None:
    client = real.client()
    consumer = new_id()
    real.admin.put_allocations(consumer, raw_body({real.node: {"VCPU": 1}}, None))

    with pytest.raises(GenerationConflict) as raised:
        client.put_allocations(
            consumer,
            {real.node: {"VCPU": 2}},
            consumer_generation=None,
            project_id=PROJECT,
            user_id=USER,
        )

    assert raised.value.server_generation == 1


def test_put_allocations_lost_answer_is_outcome_unknown_and_never_sent_again(real: Real) -> None:
    adapter = LosingAdapter("PUT", deliver=True)
    client = _client_over(real.placement.url, adapter, retry=fast_retry())
    consumer = new_id()
    real.placement.clear_requests_seen()

    with pytest.raises(OutcomeUnknown) as raised:
        client.put_allocations(
            consumer,
            {real.node: {"VCPU": 1}},
            consumer_generation=None,
            project_id=PROJECT,
            user_id=USER,
        )

    assert real.wire() == [("PUT", f"/allocations/{consumer}", 204)]
    assert raised.value.sent.consumer_generation is None
    assert real.admin.get_allocations(consumer)["consumer_generation"] == 1


# -- per-call retry ---------------------------------------------------------------
def test_a_per_call_policy_surfaces_the_first_conflict_the_clients_recovers(real: Real) -> None:
    client = real.cached_client(retry=fast_retry())
    consumer = new_id()
    claim(client, consumer, {real.node: {"VCPU": 1}})
    # Another writer: the cached generation (1) is stale now.
    real.admin.put_allocations(consumer, raw_body({real.node: {"VCPU": 1}}, 1))
    real.placement.clear_requests_seen()

    with pytest.raises(GenerationConflict):
        claim(client, consumer, {real.node: {"VCPU": 2}}, retry=NO_RETRY)
    assert real.wire() == [("PUT", f"/allocations/{consumer}", 409)]

    real.admin.put_allocations(consumer, raw_body({real.node: {"VCPU": 1}}, 2))
    client.get_allocations(consumer)
    real.admin.put_allocations(consumer, raw_body({real.node: {"VCPU": 1}}, 3))
    state = claim(client, consumer, {real.node: {"VCPU": 2}})
    assert state.generation == 5


# -- raw requests -----------------------------------------------------------------
def test_raw_requests_reach_untyped_routes_with_the_clients_token_and_version(real: Real) -> None:
    client = real.client()
    name = f"CUSTOM_ADOPT_{new_id()[:8].upper()}"

    created = client.request("PUT", f"/resource_classes/{name}")
    again = client.request("PUT", f"/resource_classes/{name}")
    listed = client.request("GET", f"/resource_providers?uuid={real.node}")
    old = client.request("GET", f"/resource_providers/{real.node}", microversion="1.0")

    assert (created.status, again.status) == (201, 204)
    assert created.location is not None and created.location.endswith(name)
    assert created.request_id is not None and created.request_id.startswith("req-")
    assert [rp["uuid"] for rp in listed.body["resource_providers"]] == [real.node]
    assert listed.microversion == "1.39"
    assert "parent_provider_uuid" in listed.body["resource_providers"][0]
    assert old.microversion == "1.0"
    assert "parent_provider_uuid" not in old.body  # the 1.0 document


def test_raw_request_errors_are_the_typed_errors(real: Real) -> None:
    client = real.client()
    name = real.admin.provider(real.node)["name"]

    with pytest.raises(ProviderNotFound):
        client.request("GET", f"/resource_providers/{new_id()}")
    with pytest.raises(DuplicateName):
        client.request("POST", "/resource_providers", json={"name": name})
    with pytest.raises(MicroversionUnsupported):
        client.request("GET", "/resource_providers", microversion="1.99")


def test_a_raw_write_whose_answer_is_lost_is_sent_once(real: Real) -> None:
    adapter = LosingAdapter("PUT", deliver=True)
    client = _client_over(real.placement.url, adapter, retry=fast_retry())
    name = f"CUSTOM_LOST_{new_id()[:8].upper()}"
    real.placement.clear_requests_seen()

    with pytest.raises(PlacementUnavailable) as raised:
        client.request("PUT", f"/resource_classes/{name}")

    assert raised.value.outcome_unknown
    assert real.wire() == [("PUT", f"/resource_classes/{name}", 201)]


def test_a_raw_read_whose_answer_is_lost_is_read_again(real: Real) -> None:
    adapter = LosingAdapter("GET", deliver=True)
    client = _client_over(real.placement.url, adapter, retry=fast_retry())
    real.placement.clear_requests_seen()

    answer = client.request("GET", f"/resource_providers/{real.node}")

    assert answer.body["uuid"] == real.node
    path = f"/resource_providers/{real.node}"
    assert real.wire() == [("GET", path, 200), ("GET", path, 200)]
