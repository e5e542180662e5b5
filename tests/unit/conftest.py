"""Shared arrangements for unit tests: a scripted Placement on requests-mock."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import requests_mock
import urllib3

import reportclient
from reportclient.fixture import FakeClock

URL = "http://placement.test"
TOKEN = "s3cr3t-token-value"  # a test token; asserted absent from logs
PROJECT = "project-a"
USER = "user-a"


def root_document(max_version: str = "1.39", min_version: str = "1.0") -> dict[str, Any]:
    return {
        "versions": [
            {
                "id": "v1.0",
                "max_version": max_version,
                "min_version": min_version,
                "status": "CURRENT",
                # What Placement sends; keystoneauth's discovery needs the self link.
                "links": [{"rel": "self", "href": ""}],
            }
        ]
    }


def error_body(status: int, detail: str, code: str = "placement.undefined_code") -> dict[str, Any]:
    title = {400: "Bad Request", 404: "Not Found", 409: "Conflict", 500: "Internal Server Error"}
    return {
        "errors": [
            {
                "status": status,
                "title": title.get(status, "Error"),
                "detail": detail,
                "code": code,
                "request_id": "req-00000000-0000-4000-8000-000000000000",
            }
        ]
    }


def consumer_conflict(expected: str, got: str) -> dict[str, Any]:
    """A 409 response for a stale consumer generation, as Placement words it."""
    detail = (
        "There was a conflict when trying to complete your request.\n\n"
        f" consumer generation conflict - expected {expected} but got {got}  "
    )
    return {
        "status_code": 409,
        "json": error_body(409, detail, "placement.concurrent_update"),
        "headers": {"x-openstack-request-id": "req-11111111-1111-4111-8111-111111111111"},
    }


def allocations_body(
    allocations: dict[str, dict[str, int]], generation: int, project: str = PROJECT
) -> dict[str, Any]:
    return {
        "allocations": {rp: {"resources": res, "generation": 7} for rp, res in allocations.items()},
        "consumer_generation": generation,
        "project_id": project,
        "user_id": USER,
        "consumer_type": "INSTANCE",
    }


def refused() -> requests.exceptions.ConnectionError:
    """What requests raises when nothing listens: urllib3's NewConnectionError inside."""
    reason = urllib3.exceptions.NewConnectionError(None, "Connection refused")
    return requests.exceptions.ConnectionError(
        urllib3.exceptions.MaxRetryError(None, "/", reason=reason)
    )


NO_CONTENT = {"status_code": 204, "text": ""}
MISSING = {"status_code": 200, "json": {"allocations": {}}}


def new_uuid() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def wire() -> Iterator[requests_mock.Mocker]:
    """requests-mock standing in for Placement; unmatched URLs fail loudly."""
    with requests_mock.Mocker() as mocker:
        mocker.get(URL + "/", json=root_document())
        yield mocker


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(
    wire: requests_mock.Mocker, sleeps: list[float], clock: FakeClock
) -> reportclient.PlacementClient:
    """A client pinned to 1.39 (no negotiation request) that never really sleeps.

    Default ``cache_ttl`` (0): every update, release and claim of a consumer it
    has seen reads first. Its clock stands still unless a test moves it, so
    every write's cycle measures 0 s and the engine's contention windows start
    at their floor: the sleeps tests pin do not depend on the machine's speed.
    """
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    return reportclient.PlacementClient.from_endpoint(
        URL, token=TOKEN, retry=policy, microversion="1.39", clock=clock
    )


#: The trust window the cached_client fixture (and the fake-based equivalents) use.
CACHE_TTL = 60.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def cached_client(
    wire: requests_mock.Mocker, sleeps: list[float], clock: FakeClock
) -> reportclient.PlacementClient:
    """Like ``client``, but trusting a cached state for ``CACHE_TTL`` seconds of ``clock``."""
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    return reportclient.PlacementClient.from_endpoint(
        URL, token=TOKEN, retry=policy, microversion="1.39", cache_ttl=CACHE_TTL, clock=clock
    )


def calls(wire: requests_mock.Mocker) -> list[tuple[str, str]]:
    """(method, path) of every request on the wire, in order."""
    return [(r.method, r.path) for r in wire.request_history]


def sent(wire: requests_mock.Mocker, index: int) -> dict[str, Any]:
    body = wire.request_history[index].body
    assert body is not None
    return dict(json.loads(body))


@pytest.fixture
def rp() -> str:
    return new_uuid()


@pytest.fixture
def consumer() -> str:
    return new_uuid()
