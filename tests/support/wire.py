"""The client's side of a scripted wire: where it points, who it writes for, what it sent."""

from __future__ import annotations

import json
import uuid
from typing import Any

import requests_mock

__all__ = [
    "CACHE_TTL",
    "PROJECT",
    "TOKEN",
    "URL",
    "USER",
    "calls",
    "new_uuid",
    "on_consumer",
    "sent",
]

URL = "http://placement.test"
TOKEN = "s3cr3t-token-value"  # a test token; asserted absent from logs
PROJECT = "project-a"
USER = "user-a"
#: The trust window the cached_client fixture (and the fake-based equivalents) use.
CACHE_TTL = 60.0


def new_uuid() -> str:
    return str(uuid.uuid4())


def calls(wire: requests_mock.Mocker) -> list[tuple[str, str]]:
    """(method, path) of every request on the wire, in order."""
    return [(r.method, r.path) for r in wire.request_history]


def sent(wire: requests_mock.Mocker, index: int) -> dict[str, Any]:
    body = wire.request_history[index].body
    assert body is not None
    return dict(json.loads(body))


def on_consumer(consumer: str, *methods: str) -> list[tuple[str, str]]:
    """``calls(wire)`` of requests that all went to ``/allocations/{consumer}``, in order."""
    return [(method, f"/allocations/{consumer}") for method in methods]
