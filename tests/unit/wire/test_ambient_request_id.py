"""A request with no global_request_id carries the id of the oslo.context in force."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests_mock
from oslo_context import context as oslo_context
from oslo_context import fixture as oslo_fixture

import reportclient
from reportclient._wire import ambient
from tests.support.answers import MISSING
from tests.support.wire import URL, new_uuid

SERVICE_ID = "req-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
CALLER_ID = "req-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
CLIENT_ID = "req-cccccccc-cccc-4ccc-8ccc-cccccccccccc"
HEADER = "X-OpenStack-Request-ID"


@pytest.fixture(autouse=True)
def no_context_left() -> Iterator[None]:
    """Every test starts and ends with no current oslo.context (oslo's own fixture)."""
    with oslo_fixture.ClearRequestContext():
        yield


@pytest.fixture
def in_context() -> oslo_context.RequestContext:
    """An oslo.context made current, as a service's middleware does."""
    return oslo_context.RequestContext(global_request_id=SERVICE_ID, overwrite=True)


def sent_id(
    client: reportclient.PlacementClient, wire: requests_mock.Mocker, **kwargs: str
) -> str | None:
    """Reads a new consumer's allocations; the request id that read carried, if any."""
    consumer = new_uuid()
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)
    client.get_allocations(consumer, **kwargs)
    return wire.request_history[-1].headers.get(HEADER)


def test_the_current_context_global_request_id_is_sent(
    client: reportclient.PlacementClient,
    wire: requests_mock.Mocker,
    in_context: oslo_context.RequestContext,
) -> None:
    assert sent_id(client, wire) == SERVICE_ID


def test_the_context_own_request_id_when_it_has_no_global_one(
    client: reportclient.PlacementClient, wire: requests_mock.Mocker
) -> None:
    ctx = oslo_context.RequestContext(overwrite=True)  # request_id req-<uuid4>, no global one
    assert sent_id(client, wire) == ctx.request_id


def test_the_callers_id_wins_over_the_context(
    client: reportclient.PlacementClient,
    wire: requests_mock.Mocker,
    in_context: oslo_context.RequestContext,
) -> None:
    assert sent_id(client, wire, global_request_id=CALLER_ID) == CALLER_ID


def test_the_clients_own_id_wins_over_the_context(
    wire: requests_mock.Mocker, in_context: oslo_context.RequestContext
) -> None:
    client = reportclient.PlacementClient.from_endpoint(
        URL, "admin", microversion="1.39", global_request_id=CLIENT_ID
    )
    assert sent_id(client, wire) == CLIENT_ID


def test_no_context_no_id(client: reportclient.PlacementClient, wire: requests_mock.Mocker) -> None:
    assert oslo_context.get_current() is None
    assert sent_id(client, wire) is None


def test_a_context_id_not_of_placements_form_is_not_sent(
    client: reportclient.PlacementClient, wire: requests_mock.Mocker
) -> None:
    oslo_context.RequestContext(global_request_id="not-a-request-id", overwrite=True)
    assert sent_id(client, wire) is None


def test_without_oslo_context_installed_nothing_is_sent(
    client: reportclient.PlacementClient,
    wire: requests_mock.Mocker,
    in_context: oslo_context.RequestContext,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ambient, "_oslo_context", None)  # as after a failed import
    assert sent_id(client, wire) is None
