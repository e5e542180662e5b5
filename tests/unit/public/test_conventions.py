"""OpenStack conventions: JSON asked for, a logger per concern, errors that say where they arose."""

from __future__ import annotations

import logging
import socket

import pytest
import requests
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

import reportclient
from tests.support.answers import MISSING, NO_CONTENT, allocations_body, consumer_conflict
from tests.support.clients import endpoint_client
from tests.support.wire import PROJECT, URL, USER

VCPU_1 = {"VCPU": 1}


# -- Accept: application/json --------------------------------------------------------------------


def test_every_request_asks_for_json(wire, client, consumer, rp):
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)

    client.get_allocations(consumer)
    client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert [r.headers["Accept"] for r in wire.request_history] == ["application/json"] * 2


def test_json_is_asked_for_through_the_adapter_and_the_callers_adapter_is_left_alone(wire):
    adapter = ks_adapter.Adapter(ks_session.Session(), endpoint_override=URL)
    wire.get(
        f"{URL}/", json={"versions": [{"id": "v1.0", "min_version": "1.0", "max_version": "1.39"}]}
    )

    client = reportclient.PlacementClient(adapter)
    client.microversion  # noqa: B018 - negotiates: one request

    assert wire.request_history[0].headers["Accept"] == "application/json"
    assert adapter.additional_headers == {}


def test_an_accept_header_the_caller_set_on_the_adapter_is_kept(wire):
    adapter = ks_adapter.Adapter(
        ks_session.Session(),
        endpoint_override=URL,
        additional_headers={"accept": "application/json;q=1"},
    )
    wire.get(f"{URL}/allocations/{'0' * 8}-0000-4000-8000-{'0' * 12}", **MISSING)

    reportclient.PlacementClient(adapter, microversion="1.39").get_allocations(
        f"{'0' * 8}-0000-4000-8000-{'0' * 12}"
    )

    assert wire.request_history[0].headers["Accept"] == "application/json;q=1"


# -- one logger per concern ----------------------------------------------------------------------


def names(caplog: pytest.LogCaptureFixture, text: str) -> set[str]:
    return {r.name for r in caplog.records if text in r.getMessage()}


def test_requests_are_logged_under_reportclient_wire(wire, client, consumer, caplog):
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        client.get_allocations(consumer)

    assert names(caplog, f"GET /allocations/{consumer} -> 200") == {"reportclient.wire"}


def test_retries_and_give_ups_are_logged_under_reportclient_retry(
    wire, sleeps, consumer, rp, caplog
):
    client = endpoint_client(sleeps, attempts=2)
    wire.put(f"{URL}/allocations/{consumer}", **consumer_conflict("null", "1"))
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        with pytest.raises(reportclient.GenerationConflict):
            client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert names(caplog, "retrying in") == {"reportclient.retry"}
    assert names(caplog, "giving up after") == {"reportclient.retry"}


def test_a_lost_answer_settled_by_a_read_is_logged_under_reportclient_engine(
    wire, client, consumer, rp, caplog
):
    wire.put(f"{URL}/allocations/{consumer}", exc=requests.exceptions.ConnectionError("reset"))
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: VCPU_1}, 1))

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        client.claim(consumer, {rp: VCPU_1}, project_id=PROJECT, user_id=USER)

    assert names(caplog, "answer lost, but Placement holds") == {"reportclient.engine"}


# -- errors say where they arose -----------------------------------------------------------------


def test_invalid_input_says_it_was_refused_locally_before_any_request(wire, client):
    with pytest.raises(reportclient.InvalidInput) as err:
        client.get_allocations("not-a-uuid")

    assert str(err.value).startswith("Refused locally, before any request: ")
    assert "Request" not in str(err.value)
    assert wire.call_count == 0


def test_an_error_decided_without_a_request_of_its_own_names_none():
    error = reportclient.PlacementError("the consumer changed", consumer_uuid="c-1")

    assert str(error) == "the consumer changed (consumer c-1)"


def test_an_error_answered_without_a_request_id_still_names_the_request():
    error = reportclient.PlacementError("boom", status=500, method="GET", url="/x")

    assert str(error) == "Request (no request id): GET /x -> 500 boom"


def closed_port() -> str:
    """A 127.0.0.1 URL nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_keystone_unreachable_is_told_apart_from_placement_unreachable(consumer):
    keystone = closed_port()
    auth = v3.Password(
        auth_url=f"{keystone}/v3",
        username="nova",
        password="pw",  # never sent: Keystone is unreachable
        project_name="service",
        user_domain_name="Default",
        project_domain_name="Default",
    )
    client = reportclient.PlacementClient(
        ks_adapter.Adapter(ks_session.Session(auth=auth), service_type="placement"),
        microversion="1.39",
        retry=reportclient.NO_RETRY,
    )

    with pytest.raises(reportclient.PlacementUnavailable) as err:
        client.claim(
            consumer,
            {"a" * 8 + "-1111-4111-8111-" + "1" * 12: VCPU_1},
            project_id=PROJECT,
            user_id=USER,
        )

    assert f"could not reach Keystone at {keystone}/v3 to authenticate" in str(err.value)
    assert "nothing was sent to Placement" in str(err.value)
    assert err.value.outcome_unknown is False


def test_placement_unreachable_names_placement(consumer):
    client = reportclient.PlacementClient.from_endpoint(
        closed_port(), token="admin", microversion="1.39", retry=reportclient.NO_RETRY
    )

    with pytest.raises(reportclient.PlacementUnavailable) as err:
        client.get_allocations(consumer)

    assert "could not connect to Placement" in str(err.value)
    assert "Keystone" not in str(err.value)
