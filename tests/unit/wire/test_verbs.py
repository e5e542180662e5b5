"""The transport sends through keystoneauth's verb methods, as nova's report client does."""

from __future__ import annotations

import json
from unittest import mock

import pytest
import requests

import reportclient
from reportclient import errors
from tests.support.wire import PROJECT, URL, USER


def answered(status: int, body: dict[str, object]) -> requests.Response:
    """A requests.Response as a test double of nova's returns one (nova's FakeResponse)."""
    resp = requests.Response()
    resp.status_code = status
    resp._content = json.dumps(body).encode()
    resp.encoding = "utf-8"
    return resp


def test_a_patched_adapter_put_answers_the_clients_write(wire, consumer, rp):
    """nova's functional tests patch ``keystoneauth1.adapter.Adapter.put``; it reaches us."""
    conflict = {"errors": [{"code": "placement.concurrent_update", "detail": "conflict"}]}
    wire.get(f"{URL}/allocations/{consumer}", json={"allocations": {}})
    client = reportclient.PlacementClient.from_endpoint(URL, "admin", microversion="1.39")

    with mock.patch(
        "keystoneauth1.adapter.Adapter.put", return_value=answered(409, conflict)
    ) as put:
        with pytest.raises(errors.GenerationConflict):
            client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert put.call_count == 1
    assert put.call_args.args[0] == f"/allocations/{consumer}"
    assert put.call_args.kwargs["raise_exc"] is False  # the transport reads every answer


def test_reads_go_through_adapter_get(wire, consumer):
    wire.get(f"{URL}/allocations/{consumer}", json={"allocations": {}})
    client = reportclient.PlacementClient.from_endpoint(URL, "admin", microversion="1.39")
    with mock.patch(
        "keystoneauth1.adapter.Adapter.get",
        wraps=None,
        return_value=answered(200, {"allocations": {}}),
    ) as get:
        assert not client.get_allocations(consumer).exists
    assert get.call_count == 1
