"""force_release: one unguarded DELETE, for callers that mean "whatever it holds, now"."""

from __future__ import annotations

import pytest

import reportclient
from reportclient.fixture import make_client
from tests.support.answers import error_body
from tests.support.wire import PROJECT, URL, USER, calls, new_uuid


@pytest.fixture
def held(fake):
    """(provider, consumer holding VCPU 3 on it, a client of the fake), requests reset."""
    rp = fake.create_provider(inventory={"VCPU": 8})
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 3}}, project_id=PROJECT, user_id=USER)
    fake.reset_requests()
    return rp, consumer, make_client(fake, microversion="1.39")


def test_force_release_is_one_delete_and_removes_what_others_wrote(fake, held):
    rp, consumer, client = held

    assert client.force_release(consumer) is True

    assert [(r.method, r.status) for r in fake.requests] == [("DELETE", 204)]
    assert fake.consumer_generation(consumer) is None
    assert fake.usages(rp) == {"VCPU": 0}
    assert not client.cached(consumer).exists


def test_force_release_of_a_consumer_holding_nothing_returns_false(fake):
    client = make_client(fake, microversion="1.39")

    assert client.force_release(new_uuid()) is False

    assert [(r.method, r.status) for r in fake.requests] == [("DELETE", 404)]


def test_force_release_does_not_take_an_unrelated_404_for_an_empty_consumer(wire, client):
    consumer = new_uuid()
    wire.delete(
        f"{URL}/allocations/{consumer}",
        status_code=404,
        json=error_body(404, "The resource could not be found."),
    )

    with pytest.raises(reportclient.PlacementError) as caught:
        client.force_release(consumer)

    assert caught.value.status == 404
    assert calls(wire) == [("DELETE", f"/allocations/{consumer}")]


def test_force_release_whose_answer_is_lost_is_not_sent_again(fake, held):
    _rp, consumer, client = held
    fake.lose_next_response(consumer)

    with pytest.raises(reportclient.PlacementUnavailable) as caught:
        client.force_release(consumer)

    assert caught.value.outcome_unknown is True
    assert [r.method for r in fake.requests] == ["DELETE"]


def test_force_release_refuses_a_malformed_uuid_before_the_wire(wire, client):
    with pytest.raises(reportclient.InvalidInput):
        client.force_release("not-a-uuid")

    assert calls(wire) == []
