"""``claim(start=...)``: the caller's premise in place of what the client last knew."""

from __future__ import annotations

from typing import Any

import pytest

import reportclient
from reportclient import ConsumerAllocations
from reportclient.fixture import FakePlacement
from tests.support.clients import client_on
from tests.support.wire import PROJECT, USER, new_uuid


@pytest.fixture
def rp(fake: FakePlacement) -> str:
    return fake.create_provider(inventory={"VCPU": 16})


def claim(
    client: reportclient.PlacementClient, consumer: str, vcpu: int, rp: str, **kw: Any
) -> ConsumerAllocations:
    return client.claim(consumer, {rp: {"VCPU": vcpu}}, project_id=PROJECT, user_id=USER, **kw)


def test_a_claim_started_as_new_is_one_put_whatever_the_client_saw_before(
    fake: FakePlacement, rp: str
) -> None:
    """What the client last saw is stale: another service emptied the consumer since."""
    client = client_on(fake)
    consumer = new_uuid()
    claim(client, consumer, 2, rp)
    fake.delete_allocations(consumer)
    fake.reset_requests()

    state = claim(client, consumer, 1, rp, start=ConsumerAllocations.missing(consumer))

    assert state.allocations == {rp: {"VCPU": 1}}
    assert [(r.method, r.status) for r in fake.requests] == [("PUT", 204)]
    assert fake.requests[0].json["consumer_generation"] is None


def test_without_start_the_same_claim_pays_for_what_the_client_saw(
    fake: FakePlacement, rp: str
) -> None:
    """The control: the client's stale knowledge costs a read before the write."""
    client = client_on(fake)
    consumer = new_uuid()
    claim(client, consumer, 2, rp)
    fake.delete_allocations(consumer)
    fake.reset_requests()

    claim(client, consumer, 1, rp)

    assert len(fake.requests) > 1


def test_a_claim_started_as_new_never_replaces_what_the_consumer_holds(
    fake: FakePlacement, rp: str
) -> None:
    """Even allocations this client claimed itself: ``start`` is the whole premise."""
    client = client_on(fake)
    consumer = new_uuid()
    claim(client, consumer, 2, rp)

    with pytest.raises(reportclient.ConsumerChanged) as caught:
        claim(client, consumer, 1, rp, start=ConsumerAllocations.missing(consumer))

    assert caught.value.state.allocations == {rp: {"VCPU": 2}}
    assert fake.allocations(consumer) == {rp: {"VCPU": 2}}


def test_a_start_of_another_consumer_is_refused_before_any_request(
    fake: FakePlacement, rp: str
) -> None:
    client = client_on(fake)
    with pytest.raises(reportclient.InvalidInput, match="start must be consumer"):
        claim(client, new_uuid(), 1, rp, start=ConsumerAllocations.missing(new_uuid()))
    assert fake.requests == []
