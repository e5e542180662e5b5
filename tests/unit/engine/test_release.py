"""Releases: an empty write guarded by the generation, never the unsafe DELETE."""

from __future__ import annotations

import pytest

import reportclient
from tests.support.answers import MISSING, NO_CONTENT, allocations_body, consumer_conflict
from tests.support.wire import PROJECT, URL, USER, calls, new_uuid, on_consumer, sent

VCPU_1 = {"VCPU": 1, "MEMORY_MB": 512}


def emptied(wire, index):
    """(allocations, consumer_generation, project_id, user_id) of the ``index``-th request."""
    body = sent(wire, index)
    return body["allocations"], body["consumer_generation"], body["project_id"], body["user_id"]


def test_release_of_cached_consumer_sends_empty_write_with_generation(
    wire, cached_client, consumer, rp
):
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    cached_client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    cached_client.release(consumer)

    assert calls(wire) == [("PUT", f"/allocations/{consumer}")] * 2
    assert emptied(wire, 1) == ({}, 1, PROJECT, USER)
    assert not cached_client.cached(consumer).exists


def test_release_of_a_seen_consumer_reads_first_by_default(wire, client, consumer, rp):
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 3}}, 2))
    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    client.release(consumer)

    assert calls(wire) == on_consumer(consumer, "PUT", "GET", "PUT")
    assert emptied(wire, 2) == ({}, 2, PROJECT, USER)
    assert not client.cached(consumer).exists


def test_release_of_unknown_consumer_reads_owner_then_writes(wire, client, consumer, rp):
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 5))
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)

    client.release(consumer)

    assert [m for m, _ in calls(wire)] == ["GET", "PUT"]
    assert sent(wire, 1)["consumer_generation"] == 5


def test_release_of_consumer_already_gone_is_not_an_error(wire, client, consumer):
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    client.release(consumer)

    assert [m for m, _ in calls(wire)] == ["GET"]


def test_release_that_loses_to_a_delete_stops_after_reread(wire, cached_client, consumer, rp):
    wire.put(f"{URL}/allocations/{consumer}", [NO_CONTENT, consumer_conflict("null", "1")])
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)
    cached_client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    cached_client.release(consumer)

    assert [m for m, _ in calls(wire)] == ["PUT", "PUT", "GET"]
    assert not cached_client.cached(consumer).exists


def test_release_of_a_seen_consumer_deleted_meanwhile_is_one_read_by_default(
    wire, client, consumer, rp
):
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)
    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    client.release(consumer)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET"]
    assert not client.cached(consumer).exists


def test_release_that_meets_an_invisible_consumer_has_nothing_left_to_do(
    wire, cached_client, consumer, rp
):
    wire.put(f"{URL}/allocations/{consumer}", [NO_CONTENT, consumer_conflict("0", "1")])
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)
    cached_client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    cached_client.release(consumer)

    assert [m for m, _ in calls(wire)] == ["PUT", "PUT", "GET"]


def test_release_that_loses_to_another_writer_refuses_what_it_never_saw(wire, client, consumer, rp):
    """No clobber: after a conflict the re-read shows an addition; nothing is emptied."""
    other = new_uuid()
    wire.get(
        f"{URL}/allocations/{consumer}",
        [
            {"json": allocations_body({rp: VCPU_1}, 1)},
            {"json": allocations_body({rp: VCPU_1, other: {"VCPU": 1}}, 2)},
        ],
    )
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("2", "1")])

    with pytest.raises(reportclient.ConsumerChanged) as err:
        client.release(consumer)

    assert [m for m, _ in calls(wire)] == ["GET", "PUT", "GET"]
    assert err.value.state.allocations == {rp: VCPU_1, other: {"VCPU": 1}}


def test_release_that_loses_to_a_same_content_write_empties_it(wire, client, consumer, rp):
    """A conflict whose re-read holds what the release saw is no change of premise."""
    wire.get(
        f"{URL}/allocations/{consumer}",
        [
            {"json": allocations_body({rp: VCPU_1}, 1)},
            {"json": allocations_body({rp: VCPU_1}, 2)},
        ],
    )
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("2", "1"), NO_CONTENT])

    client.release(consumer)

    assert [m for m, _ in calls(wire)] == ["GET", "PUT", "GET", "PUT"]
    assert sent(wire, 3)["consumer_generation"] == 2
