"""Malformed input is refused with InvalidInput before any request."""

from __future__ import annotations

import pytest

import reportclient
from tests.support.answers import NO_CONTENT, allocations_body
from tests.support.wire import PROJECT, URL, USER, calls, new_uuid, sent

RP = new_uuid()


@pytest.mark.parametrize(
    "consumer",
    ["not-a-uuid", "", None, 42, new_uuid()[:-1], new_uuid() + "0", new_uuid().replace("-", "")],
)
def test_malformed_consumer_uuid(wire, client, consumer):
    with pytest.raises(reportclient.InvalidInput, match="consumer_uuid"):
        client.claim(consumer, {RP: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    with pytest.raises(reportclient.InvalidInput):
        client.get_allocations(consumer)
    with pytest.raises(reportclient.InvalidInput):
        client.release(consumer)
    assert wire.request_history == []


@pytest.mark.parametrize(
    "allocations",
    [
        {RP: {"VCPU": 0}},
        {RP: {"VCPU": -1}},
        {RP: {"VCPU": 1.5}},
        {RP: {"VCPU": "1"}},
        {RP: {"VCPU": True}},
        {RP: {"VCPU": 2**31}},
        {RP: {"vcpu": 1}},
        {RP: {"VCPU-X": 1}},
        {RP: {}},
        {"not-a-provider": {"VCPU": 1}},
        [("x", 1)],
    ],
)
def test_malformed_allocations(wire, client, allocations):
    with pytest.raises(reportclient.InvalidInput):
        client.claim(new_uuid(), allocations, project_id=PROJECT, user_id=USER)
    assert wire.request_history == []


@pytest.mark.parametrize(
    ("project_id", "user_id"), [("", USER), (PROJECT, ""), (None, USER), ("p" * 256, USER)]
)
def test_missing_or_oversized_owner(wire, client, project_id, user_id):
    with pytest.raises(reportclient.InvalidInput, match="_id"):
        client.claim(new_uuid(), {RP: {"VCPU": 1}}, project_id=project_id, user_id=user_id)
    assert wire.request_history == []


def test_bad_consumer_type(wire, client):
    with pytest.raises(reportclient.InvalidInput, match="consumer_type"):
        client.claim(
            new_uuid(), {RP: {"VCPU": 1}}, project_id=PROJECT, user_id=USER, consumer_type="vm"
        )
    assert wire.request_history == []


def test_mutate_returning_bad_allocations_is_refused_before_the_write(wire, client):
    consumer = new_uuid()
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({RP: {"VCPU": 1}}, 1))

    with pytest.raises(reportclient.InvalidInput):
        client.update_allocations(
            consumer, lambda current: {RP: {"VCPU": -2}}, project_id=PROJECT, user_id=USER
        )
    assert calls(wire) == [("GET", f"/allocations/{consumer}")]


def test_bad_global_request_id():
    with pytest.raises(reportclient.InvalidInput, match="global_request_id"):
        reportclient.PlacementClient.from_endpoint(
            "http://x", token="t", global_request_id="my-request"
        )


def test_bad_cache_size():
    with pytest.raises(ValueError, match="cache_size"):
        reportclient.PlacementClient.from_endpoint("http://x", token="t", cache_size=-1)


def test_uuid_with_a_trailing_newline_is_refused(wire, client):
    with pytest.raises(reportclient.InvalidInput, match="consumer_uuid"):
        client.get_allocations(new_uuid() + "\n")
    with pytest.raises(reportclient.InvalidInput, match="resource provider"):
        client.claim(new_uuid(), {RP + "\n": {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    assert wire.request_history == []


def test_upper_case_consumer_and_provider_uuids_are_sent_in_lower_case(wire, client):
    consumer = new_uuid()
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)

    state = client.claim(
        consumer.upper(), {RP.upper(): {"VCPU": 1}}, project_id=PROJECT, user_id=USER
    )

    assert calls(wire) == [("PUT", f"/allocations/{consumer}")]
    assert sent(wire, 0)["allocations"] == {RP: {"resources": {"VCPU": 1}}}
    assert state.consumer_uuid == consumer
    assert client.cached(consumer.upper()) == state


def test_a_provider_given_twice_in_two_spellings_is_refused(wire, client):
    with pytest.raises(reportclient.InvalidInput, match="given twice"):
        client.claim(
            new_uuid(),
            {RP: {"VCPU": 1}, RP.upper(): {"VCPU": 2}},
            project_id=PROJECT,
            user_id=USER,
        )
    assert wire.request_history == []


def test_allocations_in_placements_own_shape_are_accepted(wire, client):
    consumer = new_uuid()
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)

    client.claim(
        consumer,
        {RP: {"resources": {"VCPU": 2}, "generation": 7}},
        project_id=PROJECT,
        user_id=USER,
    )

    assert sent(wire, 0)["allocations"] == {RP: {"resources": {"VCPU": 2}}}


def test_consumer_type_of_255_characters_is_the_longest_accepted(wire, client):
    consumer = new_uuid()
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    longest = "T" * 255

    with pytest.raises(reportclient.InvalidInput, match="consumer_type"):
        client.claim(
            consumer,
            {RP: {"VCPU": 1}},
            project_id=PROJECT,
            user_id=USER,
            consumer_type=longest + "T",
        )
    assert wire.request_history == []
    client.claim(
        consumer, {RP: {"VCPU": 1}}, project_id=PROJECT, user_id=USER, consumer_type=longest
    )
    assert sent(wire, 0)["consumer_type"] == longest


def test_remove_providers_given_a_single_string_is_refused():
    with pytest.raises(reportclient.InvalidInput, match="single provider in a list"):
        reportclient.remove_providers(RP)


@pytest.mark.parametrize("mutate", [None, {RP: {"VCPU": 1}}, "replace"])
def test_a_mutate_that_is_not_callable_is_refused_before_any_request(wire, client, mutate):
    with pytest.raises(reportclient.InvalidInput, match="mutate must be a function"):
        client.update_allocations(new_uuid(), mutate, project_id=PROJECT, user_id=USER)
    assert wire.request_history == []
