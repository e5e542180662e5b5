"""Malformed input is refused with InvalidInput before any request."""

from __future__ import annotations

import pytest

import reportclient
from tests.unit.conftest import PROJECT, USER, new_uuid

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
    with pytest.raises(reportclient.InvalidInput):
        client.update_allocations(
            new_uuid(), lambda current: {RP: {"VCPU": -2}}, project_id=PROJECT, user_id=USER
        )
    assert wire.request_history == []


def test_bad_global_request_id():
    with pytest.raises(reportclient.InvalidInput, match="global_request_id"):
        reportclient.PlacementClient.from_endpoint(
            "http://x", token="t", global_request_id="my-request"
        )


def test_bad_cache_size():
    with pytest.raises(ValueError, match="cache_size"):
        reportclient.PlacementClient.from_endpoint("http://x", token="t", cache_size=-1)
