"""A write whose outcome is unknown is checked before anything else (behaviour 4)."""

from __future__ import annotations

import pytest
import requests

import reportclient
from tests.support.answers import MISSING, NO_CONTENT, allocations_body, refused
from tests.support.clients import update
from tests.support.wire import PROJECT, URL, USER, calls, sent

VCPU_1 = {"VCPU": 1}


def test_reset_connection_after_write_that_landed_is_success_without_second_write(
    wire, client, consumer, rp
):
    wire.put(f"{URL}/allocations/{consumer}", exc=requests.exceptions.ConnectionError("reset"))
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 1))

    state = client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET"]
    assert state.generation == 1
    assert client.cached(consumer).generation == 1


def test_timeout_after_write_that_did_not_land_writes_again_from_what_was_read(
    wire, client, sleeps, consumer, rp
):
    wire.put(
        f"{URL}/allocations/{consumer}",
        [{"exc": requests.exceptions.ReadTimeout("slow")}, NO_CONTENT],
    )
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 1))

    state = update(client, consumer, reportclient.replace_allocations({rp: {"VCPU": 2}}))

    assert [m for m, _ in calls(wire)] == ["GET", "PUT", "GET", "PUT"]
    assert sent(wire, 3)["consumer_generation"] == 1
    assert state.generation == 2
    assert len(sleeps) == 1


def test_timeout_on_a_new_consumer_still_missing_is_outcome_unknown(wire, client, consumer, rp):
    """The create may have landed and been deleted since: nothing is written again."""
    wire.put(f"{URL}/allocations/{consumer}", exc=requests.exceptions.ReadTimeout("slow"))
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    with pytest.raises(reportclient.OutcomeUnknown):
        client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET"]


@pytest.mark.parametrize("status", [502, 503, 504])
def test_gateway_error_after_write_is_checked_by_reading(wire, client, consumer, rp, status):
    wire.put(f"{URL}/allocations/{consumer}", status_code=status, text="<html>Bad gateway</html>")
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 1))

    state = client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET"]
    assert state.allocations == {rp: VCPU_1}


def test_lost_answer_to_cached_update_does_not_double_claim(wire, cached_client, consumer, rp):
    """N+1 holding exactly what was sent: it may be ours or another's; an add is not re-sent."""
    wire.put(
        f"{URL}/allocations/{consumer}",
        [NO_CONTENT, {"exc": requests.exceptions.ConnectionError("reset")}],
    )
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 2}}, 2))
    cached_client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        update(cached_client, consumer, reportclient.add_allocations({rp: {"VCPU": 1}}))

    assert [m for m, _ in calls(wire)] == ["PUT", "PUT", "GET"]
    assert err.value.sent == reportclient.AllocationWrite(
        consumer, {rp: {"VCPU": 2}}, 1, PROJECT, USER, None
    )
    assert err.value.state.allocations == {rp: {"VCPU": 2}}
    assert err.value.state.generation == 2


def test_lost_answer_to_update_does_not_double_claim_by_default(wire, client, consumer, rp):
    wire.put(
        f"{URL}/allocations/{consumer}",
        [NO_CONTENT, {"exc": requests.exceptions.ConnectionError("reset")}],
    )
    wire.get(
        f"{URL}/allocations/{consumer}",
        [
            {"json": allocations_body({rp: VCPU_1}, 1)},
            {"json": allocations_body({rp: {"VCPU": 2}}, 2)},
        ],
    )
    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        update(client, consumer, reportclient.add_allocations({rp: {"VCPU": 1}}))

    assert [m for m, _ in calls(wire)] == ["PUT", "GET", "PUT", "GET"]
    assert err.value.sent.consumer_generation == 1
    assert err.value.sent.allocations == {rp: {"VCPU": 2}}
    assert err.value.state.generation == 2


def test_unreachable_placement_raises_unavailable_once_retries_are_spent(
    wire, sleeps, consumer, rp
):
    policy = reportclient.default_retry(attempts=3, sleep=sleeps.append, rand=lambda: 1.0)
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=policy
    )
    wire.put(f"{URL}/allocations/{consumer}", exc=requests.exceptions.ConnectionError("refused"))
    wire.get(f"{URL}/allocations/{consumer}", exc=requests.exceptions.ConnectionError("refused"))

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    # attempt 1: PUT, GET (both fail); attempts 2 and 3: the GET comes first
    assert [m for m, _ in calls(wire)] == ["PUT", "GET", "GET", "GET"]
    assert sleeps == [3.0, 6.0]
    assert err.value.consumer_uuid == consumer
    # the PUT whose answer was lost may still land: the error says which write
    assert err.value.sent.consumer_generation is None
    assert err.value.sent.allocations == {rp: VCPU_1}
    assert err.value.state is None
    assert isinstance(err.value.__cause__, reportclient.PlacementUnavailable)


def test_server_error_on_read_is_retried(wire, client, sleeps, consumer, rp):
    wire.get(
        f"{URL}/allocations/{consumer}",
        [
            {"status_code": 500, "text": "Internal Server Error"},
            {"json": allocations_body({rp: VCPU_1}, 2)},
        ],
    )
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)

    client.release(consumer)

    assert [m for m, _ in calls(wire)] == ["GET", "GET", "PUT"]
    assert sent(wire, 2)["consumer_generation"] == 2


def test_refused_connection_keeps_the_cache_and_rewrites_without_reading(
    wire, cached_client, sleeps, consumer, rp
):
    wire.put(f"{URL}/allocations/{consumer}", [NO_CONTENT, {"exc": refused()}, NO_CONTENT])
    cached_client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    state = cached_client.claim(consumer, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "PUT", "PUT"]
    assert sent(wire, 2)["consumer_generation"] == 1
    assert state.generation == 2
    assert sleeps == [1.5]


def test_refused_connection_rewrites_after_reading_again_by_default(
    wire, client, sleeps, consumer, rp
):
    wire.put(f"{URL}/allocations/{consumer}", [NO_CONTENT, {"exc": refused()}, NO_CONTENT])
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 1))
    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    state = client.claim(consumer, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET", "PUT", "GET", "PUT"]
    assert sent(wire, 4)["consumer_generation"] == 1
    assert state.generation == 2
    assert sleeps == [1.5]


def test_refused_connection_until_retries_are_spent_is_unavailable_not_unknown(
    wire, sleeps, consumer, rp
):
    policy = reportclient.default_retry(attempts=3, sleep=sleeps.append, rand=lambda: 1.0)
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=policy
    )
    wire.put(f"{URL}/allocations/{consumer}", exc=refused())

    with pytest.raises(reportclient.PlacementUnavailable) as err:
        client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert type(err.value) is reportclient.PlacementUnavailable
    assert err.value.outcome_unknown is False
    assert [m for m, _ in calls(wire)] == ["PUT", "PUT", "PUT"]


def test_refused_connection_is_unavailable_with_outcome_known(wire, client, consumer, rp):
    wire.get(f"{URL}/allocations/{consumer}", exc=refused())

    with pytest.raises(reportclient.PlacementUnavailable) as err:
        client.get_allocations(consumer)

    assert err.value.outcome_unknown is False
    assert "could not connect" in str(err.value)


def test_when_the_check_after_a_lost_answer_fails_and_no_retry_is_left_it_is_outcome_unknown(
    wire, sleeps, consumer, rp
):
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=reportclient.NO_RETRY
    )
    wire.put(f"{URL}/allocations/{consumer}", exc=requests.exceptions.ConnectionError("reset"))
    wire.get(f"{URL}/allocations/{consumer}", exc=requests.exceptions.ConnectionError("reset"))

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET"]
    assert err.value.method == "PUT"
    assert err.value.outcome_unknown is True
    assert err.value.sent.consumer_generation is None
    assert err.value.state is None
    # the write's own error, with the failed check as its context
    write_error = err.value.__cause__
    assert isinstance(write_error, reportclient.PlacementUnavailable)
    assert write_error.method == "PUT"
    assert isinstance(write_error.__context__, reportclient.PlacementUnavailable)
    assert write_error.__context__.method == "GET"
