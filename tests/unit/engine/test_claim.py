"""Claims: round trips, the cache, and conflict recovery (behaviours 1-3, 5)."""

from __future__ import annotations

import pytest
import requests_mock

import reportclient
from reportclient._model.validation import validate_uuid
from tests.support.answers import (
    MISSING,
    NO_CONTENT,
    allocations_body,
    consumer_conflict,
    error_body,
)
from tests.support.wire import PROJECT, URL, USER, calls, on_consumer, sent

VCPU_1 = {"VCPU": 1, "MEMORY_MB": 512}


def test_fresh_claim_costs_one_request_sent_as_new_consumer(wire, client, consumer, rp):
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)

    state = client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert calls(wire) == [("PUT", f"/allocations/{consumer}")]
    body = sent(wire, 0)
    assert body["consumer_generation"] is None
    assert body["allocations"] == {rp: {"resources": VCPU_1}}
    assert (body["project_id"], body["user_id"], body["consumer_type"]) == (
        PROJECT,
        USER,
        "INSTANCE",
    )
    assert state.generation == 1
    assert state.exists
    assert state.allocations == {rp: VCPU_1}


def test_cached_claim_costs_one_request_carrying_the_cached_generation(
    wire, cached_client, consumer, rp
):
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    cached_client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    state = cached_client.claim(consumer, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)

    assert calls(wire) == [("PUT", f"/allocations/{consumer}")] * 2
    assert sent(wire, 1)["consumer_generation"] == 1
    assert state.generation == 2
    assert cached_client.cached(consumer) == state


def test_claim_of_a_seen_consumer_reads_first_by_default(wire, client, consumer, rp):
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 1))
    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    state = client.claim(consumer, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)

    assert calls(wire) == on_consumer(consumer, "PUT", "GET", "PUT")
    assert sent(wire, 2)["consumer_generation"] == 1
    assert sent(wire, 2)["allocations"] == {rp: {"resources": {"VCPU": 2}}}
    assert state.generation == 2
    assert client.cached(consumer) == state


def test_get_allocations_refreshes_the_cache(wire, client, consumer, rp):
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 4))

    state = client.get_allocations(consumer)

    assert state.generation == 4
    assert state.project_id == PROJECT
    assert client.cached(consumer) == state


def test_get_of_missing_consumer_is_generation_none(wire, client, consumer):
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    state = client.get_allocations(consumer)

    assert state.generation is None
    assert not state.exists
    assert state.allocations == {}
    assert state.project_id is None


def test_empty_claim_deletes_consumer_in_cache(wire, client, consumer, rp):
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 1))
    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    state = client.claim(consumer, {}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET", "PUT"]
    assert sent(wire, 2)["allocations"] == {}
    assert sent(wire, 2)["consumer_generation"] == 1
    assert not state.exists
    assert not client.cached(consumer).exists
    # the next write after a delete expects a new consumer, without a read
    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)
    assert [m for m, _ in calls(wire)] == ["PUT", "GET", "PUT", "PUT"]
    assert sent(wire, 3)["consumer_generation"] is None


def test_claim_retries_with_null_after_consumer_was_deleted(
    wire, cached_client, sleeps, consumer, rp
):
    """The shelve race: trusted cached generation 1, consumer deleted by another writer."""
    wire.put(
        f"{URL}/allocations/{consumer}",
        [NO_CONTENT, consumer_conflict("null", "1"), NO_CONTENT],
    )
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)
    cached_client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)
    wire.reset_mock()

    state = cached_client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert calls(wire) == on_consumer(consumer, "PUT", "GET", "PUT")
    assert sent(wire, 0)["consumer_generation"] == 1
    assert sent(wire, 2)["consumer_generation"] is None
    assert state.generation == 1
    assert sleeps == [0.0]  # a stale cache is re-read at once


def test_a_claim_whose_consumer_was_written_then_deleted_goes_as_new_at_once(
    wire, cached_client, sleeps, consumer, rp
):
    """Issue 49: X@1 known; the PUT at 1 meets "expected 2" (another writer); X is deleted
    before the re-read, which shows it missing. The next PUT is a create (null), never the
    conflict's 2, which no read showed and which would collide and wait as contention."""
    wire.put(
        f"{URL}/allocations/{consumer}",
        [NO_CONTENT, consumer_conflict("2", "1"), NO_CONTENT],
    )
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)
    cached_client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)
    wire.reset_mock()

    cached_client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert calls(wire) == on_consumer(consumer, "PUT", "GET", "PUT")
    assert sent(wire, 2)["consumer_generation"] is None
    assert sleeps == [0.0]


def test_shelve_race_with_the_default_client_is_a_read_then_a_new_consumer_write(
    wire, client, sleeps, consumer, rp
):
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)
    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)
    wire.reset_mock()

    state = client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert calls(wire) == on_consumer(consumer, "GET", "PUT")
    assert sent(wire, 1)["consumer_generation"] is None
    assert sent(wire, 1)["allocations"] == {rp: {"resources": VCPU_1}}
    assert state.generation == 1
    assert sleeps == []


def test_update_of_unknown_consumer_reads_first_and_mutate_sees_its_allocations(
    wire, client, consumer, rp
):
    other_rp = validate_uuid("0" * 8 + "-0000-4000-8000-" + "0" * 12)
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({other_rp: {"VCPU": 4}}, 3))
    seen: list[dict] = []

    def add_one_vcpu(current):
        seen.append({k: dict(v) for k, v in current.allocations.items()})
        return reportclient.add_allocations({rp: {"VCPU": 1}})(current)

    state = client.update_allocations(consumer, add_one_vcpu, project_id=PROJECT, user_id=USER)

    assert calls(wire) == on_consumer(consumer, "GET", "PUT")
    assert seen == [{other_rp: {"VCPU": 4}}]
    assert sent(wire, 1)["consumer_generation"] == 3
    assert sent(wire, 1)["allocations"] == {
        other_rp: {"resources": {"VCPU": 4}},
        rp: {"resources": {"VCPU": 1}},
    }
    assert state.generation == 4


def test_server_side_concurrent_update_is_also_retried(wire, client, consumer, rp):
    detail = (
        "There was a conflict when trying to complete your request.\n\n Inventory and/or "
        "allocations changed while attempting to allocate: Another thread concurrently "
        "updated the data. Please retry your update  "
    )
    wire.put(
        f"{URL}/allocations/{consumer}",
        [
            {"status_code": 409, "json": error_body(409, detail, "placement.concurrent_update")},
            NO_CONTENT,
        ],
    )
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    state = client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET", "PUT"]
    assert state.generation == 1


def test_reread_showing_desired_allocations_skips_the_write(wire, client, consumer, rp):
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("1", "None")])
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 1))

    state = client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET"]
    assert state.generation == 1
    assert state.allocations == {rp: VCPU_1}


def test_reread_with_other_owner_still_writes(wire, client, consumer, rp):
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("1", "None"), NO_CONTENT])
    wire.get(
        f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 1, project="other")
    )

    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET", "PUT"]
    assert sent(wire, 2)["project_id"] == PROJECT


def test_capacity_conflict_raises_after_one_request(wire, client, consumer, rp):
    detail = (
        "There was a conflict when trying to complete your request.\n\n Unable to allocate "
        f"inventory: Unable to create allocation for 'VCPU' on resource provider '{rp}'. "
        "The requested amount would exceed the capacity.  "
    )
    wire.put(f"{URL}/allocations/{consumer}", status_code=409, json=error_body(409, detail))

    with pytest.raises(reportclient.CapacityExceeded) as err:
        client.claim(consumer, {rp: {"VCPU": 99}}, project_id=PROJECT, user_id=USER)

    assert len(wire.request_history) == 1
    assert err.value.code == "placement.undefined_code"
    assert err.value.consumer_uuid == consumer
    assert "exceed the capacity" in err.value.detail


def test_cache_size_zero_always_writes_as_new_consumer(wire, sleeps, consumer, rp):
    client = reportclient.PlacementClient.from_endpoint(
        URL,
        token="t",
        microversion="1.39",
        cache_size=0,
        retry=reportclient.default_retry(sleep=sleeps.append),
    )
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)

    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)
    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert client.cached(consumer) is None
    assert sent(wire, 1)["consumer_generation"] is None


def _evict_first_of_three(wire, sleeps, rp):
    """A two-entry cache that claimed three consumers: the first one is forgotten."""
    client = reportclient.PlacementClient.from_endpoint(
        URL,
        token="t",
        microversion="1.39",
        cache_size=2,
        retry=reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.0),
    )
    consumers = [validate_uuid(f"{i:08d}-0000-4000-8000-000000000000") for i in range(3)]
    wire.put(requests_mock.ANY, **NO_CONTENT)
    for c in consumers:
        client.claim(c, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)
    assert client.cached(consumers[0]) is None
    assert client.cached(consumers[1]) is not None
    assert client.cache_stats().evictions == 1
    wire.put(f"{URL}/allocations/{consumers[0]}", [consumer_conflict("1", "None"), NO_CONTENT])
    wire.get(f"{URL}/allocations/{consumers[0]}", json=allocations_body({rp: VCPU_1}, 1))
    wire.reset_mock()
    return client, consumers[0]


def test_evicted_consumer_is_forgotten_so_a_claim_over_it_is_consumer_changed(wire, sleeps, rp):
    client, evicted = _evict_first_of_three(wire, sleeps, rp)

    with pytest.raises(reportclient.ConsumerChanged) as err:
        client.claim(evicted, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)

    # sent as new (nothing known), refused, re-read: nothing else written
    assert [m for m, _ in calls(wire)] == ["PUT", "GET"]
    assert sent(wire, 0)["consumer_generation"] is None
    assert err.value.known is None
    assert err.value.state.allocations == {rp: VCPU_1}
    assert err.value.state.generation == 1


def test_evicted_consumer_is_replaced_with_overwrite(wire, sleeps, rp):
    client, evicted = _evict_first_of_three(wire, sleeps, rp)

    state = client.claim(
        evicted, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER, overwrite=True
    )

    assert [m for m, _ in calls(wire)] == ["PUT", "GET", "PUT"]
    assert sent(wire, 2)["consumer_generation"] == 1
    assert sent(wire, 2)["allocations"] == {rp: {"resources": {"VCPU": 2}}}
    assert state.generation == 2


def test_emptying_an_unknown_consumer_reads_instead_of_writing(wire, client, consumer):
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    state = client.claim(consumer, {}, project_id=PROJECT, user_id=USER)

    assert calls(wire) == [("GET", f"/allocations/{consumer}")]
    assert not state.exists


def test_invisible_generation_zero_consumer_is_written_with_the_generation_from_the_conflict(
    wire, client, consumer, rp
):
    """Placement keeps generation 0 for a consumer written empty while missing; GET hides it."""
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("0", "None"), NO_CONTENT])
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    state = client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET", "PUT"]
    assert sent(wire, 2)["consumer_generation"] == 0
    assert state.generation == 1


def test_update_without_consumer_type_keeps_the_consumers_own(wire, client, consumer, rp):
    body = allocations_body({rp: VCPU_1}, 2)
    body["consumer_type"] = "MIGRATION"
    wire.get(f"{URL}/allocations/{consumer}", json=body)
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)

    client.update_allocations(
        consumer, reportclient.add_allocations({rp: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
    )

    assert [m for m, _ in calls(wire)] == ["GET", "PUT"]
    # No type is sent, so Placement keeps MIGRATION; both requests go at the
    # lowest version with consumer generations (cheaper for Placement).
    assert "consumer_type" not in sent(wire, 1)
    versions = [r.headers["OpenStack-API-Version"] for r in wire.request_history]
    assert versions == ["placement 1.28", "placement 1.28"]


def test_update_naming_a_consumer_type_reads_and_writes_it_at_1_38_or_later(
    wire, client, consumer, rp
):
    body = allocations_body({rp: VCPU_1}, 2)
    body["consumer_type"] = "INSTANCE"
    wire.get(f"{URL}/allocations/{consumer}", json=body)
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)

    state = client.update_allocations(
        consumer,
        reportclient.add_allocations({rp: {"VCPU": 1}}),
        project_id=PROJECT,
        user_id=USER,
        consumer_type="MIGRATION",
    )

    assert sent(wire, 1)["consumer_type"] == "MIGRATION"
    versions = [r.headers["OpenStack-API-Version"] for r in wire.request_history]
    assert versions == ["placement 1.39", "placement 1.39"]
    assert state.consumer_type == "MIGRATION"


def test_pre_138_unknown_type_is_not_carried_into_a_write(wire, client, consumer, rp):
    body = allocations_body({rp: VCPU_1}, 2)
    body["consumer_type"] = "unknown"
    wire.get(f"{URL}/allocations/{consumer}", json=body)
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    client.get_allocations(consumer)

    client.claim(consumer, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["GET", "GET", "PUT"]
    # Placement refuses "unknown" on a write; sending no type keeps it as is.
    assert "consumer_type" not in sent(wire, 2)
