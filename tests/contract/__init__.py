"""Contract suite: one set of raw-HTTP scenarios run against the fake and the real Placement.

Helpers shared by the scenarios live here (conftest holds only fixtures).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests

from reportclient.fixture import FakePlacement
from reportclient.testing import PlacementAdmin

LATEST = "1.39"


@dataclass
class Backend:
    """One Placement to run a scenario against, spoken to in raw HTTP."""

    name: str
    url: str
    session: requests.Session
    admin: PlacementAdmin | None = None
    fake: FakePlacement | None = None

    def request(
        self,
        method: str,
        path: str,
        json: Any = None,
        microversion: str | None = LATEST,
        headers: Mapping[str, str] | None = None,
    ) -> requests.Response:
        """Send one request with explicit headers; ``microversion=None`` sends none."""
        send = {"Accept": "application/json"}
        if microversion is not None:
            send["OpenStack-API-Version"] = f"placement {microversion}"
        send.update(headers or {})
        return self.session.request(method, self.url + path, json=json, headers=send)

    def create_provider(self, inventory: Mapping[str, Mapping[str, Any]] | None = None) -> str:
        """Arrange a provider with inventory (generation 1 afterwards if inventory given)."""
        name = f"contract-{uuid.uuid4()}"
        if self.fake is not None:
            return self.fake.create_provider(name=name, inventory=inventory)
        assert self.admin is not None
        return self.admin.create_provider(name=name, inventory=dict(inventory or {}))


def new_uuid() -> str:
    """A fresh consumer or provider uuid."""
    return str(uuid.uuid4())


def body(
    allocations: Mapping[str, Mapping[str, int]],
    generation: int | None = None,
    *,
    consumer_type: str | None = "INSTANCE",
    **extra: Any,
) -> dict[str, Any]:
    """A 1.38+ PUT /allocations body; ``consumer_type=None`` leaves the key out."""
    doc: dict[str, Any] = {
        "allocations": {rp: {"resources": dict(res)} for rp, res in allocations.items()},
        "project_id": "project-a",
        "user_id": "user-a",
        "consumer_generation": generation,
    }
    if consumer_type is not None:
        doc["consumer_type"] = consumer_type
    doc.update(extra)
    return doc


def outcome(response: requests.Response) -> tuple[int, str | None]:
    """(status, error code) — the pair callers branch on; code is None on success."""
    if response.status_code < 400:
        return response.status_code, None
    return response.status_code, response.json()["errors"][0].get("code")


def detail(response: requests.Response) -> str:
    """The first error's detail text."""
    text: str = response.json()["errors"][0]["detail"]
    return text


CONFLICT = "There was a conflict when trying to complete your request.\n\n {}  "
BAD_REQUEST = (
    "The server could not comply with the request since it is either malformed or "
    "otherwise incorrect.\n\n {}  "
)
NOT_FOUND = "The resource could not be found.\n\n {}  "
