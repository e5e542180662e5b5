"""Request logging (behaviour 8) and tokens kept out of logs, errors and reprs."""

from __future__ import annotations

import logging

import pytest
import requests

import reportclient
from tests.support.answers import MISSING, NO_CONTENT, error_body
from tests.support.wire import PROJECT, TOKEN, URL, USER

REQ = "req-33333333-3333-4333-8333-333333333333"


def test_each_request_is_logged_at_debug_with_method_path_status_version_and_id(
    wire, client, consumer, caplog
):
    wire.get(f"{URL}/allocations/{consumer}", headers={"x-openstack-request-id": REQ}, **MISSING)

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        client.get_allocations(consumer)

    lines = [r.getMessage() for r in caplog.records if r.name == "reportclient.wire"]
    assert len(lines) == 1
    line = lines[0]
    assert f"GET /allocations/{consumer} -> 200" in line
    assert "placement 1.39" in line
    assert REQ in line
    assert " ms)" in line


def test_token_never_appears_in_logs_errors_or_reprs(wire, client, consumer, rp, caplog):
    wire.put(
        f"{URL}/allocations/{consumer}",
        [
            {"status_code": 400, "json": error_body(400, "bad")},
            {"exc": requests.exceptions.ConnectionError("reset")},
        ],
    )
    wire.get(f"{URL}/allocations/{consumer}", exc=requests.exceptions.ConnectionError("reset"))
    errors = []
    with caplog.at_level(logging.DEBUG):
        for _ in range(2):
            with pytest.raises(reportclient.PlacementError) as err:
                client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
            errors.append(err.value)

    # the token did go on the wire ...
    assert wire.request_history[0].headers["X-Auth-Token"] == TOKEN
    # ... and nowhere else
    assert TOKEN not in caplog.text
    for exc in errors:
        assert TOKEN not in str(exc)
        assert TOKEN not in repr(exc)
        assert TOKEN not in repr(vars(exc))
    assert TOKEN not in repr(client)


def test_global_request_id_is_sent_with_every_request(wire, consumer, rp):
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", global_request_id=REQ
    )

    client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert wire.request_history[0].headers["X-OpenStack-Request-ID"] == REQ


def test_per_call_global_request_id_overrides_the_clients(wire, consumer, rp):
    other = "req-44444444-4444-4444-8444-444444444444"
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", global_request_id=REQ
    )

    client.claim(
        consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER, global_request_id=other
    )
    client.get_allocations(consumer)

    assert wire.request_history[0].headers["X-OpenStack-Request-ID"] == other
    assert wire.request_history[1].headers["X-OpenStack-Request-ID"] == REQ


def test_malformed_per_call_global_request_id_is_invalid_input(wire, client, consumer):
    with pytest.raises(reportclient.InvalidInput, match="global_request_id"):
        client.get_allocations(consumer, global_request_id="abc")
    assert wire.request_history == []
