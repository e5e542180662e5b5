"""Raw-HTTP Placement helper for arranging and inspecting state in tests.

Deliberately independent of reportclient's own client: a test must not arrange its fixtures
with the code it is testing. Isolation between tests comes from fresh uuid4 providers and
consumers, never fixed names, so tests can share one Placement.
"""

from __future__ import annotations

import enum
import uuid as uuid_mod
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import requests

__all__ = ["DEFAULT_MICROVERSION", "Inventory", "PlacementAdmin", "PlacementAdminError"]

DEFAULT_MICROVERSION = "1.39"
_ARRANGE_ATTEMPTS = 5

#: Inventory as accepted by :meth:`PlacementAdmin.set_inventory`: either full records
#: (``{"VCPU": {"total": 8, "max_unit": 8}}``; omitted fields are defaulted by Placement) or the
#: shorthand ``{"VCPU": 8}`` meaning ``total=8``.
Inventory = Mapping[str, int | Mapping[str, Any]]


class _Default(enum.Enum):
    """Sentinel type: "use the helper's configured microversion"."""

    MICROVERSION = 0


class PlacementAdminError(AssertionError):
    """An arranging call to Placement failed; the message carries the response body.

    An ``AssertionError`` so pytest reports it as a failed precondition with its full text.
    """

    def __init__(self, what: str, response: requests.Response) -> None:
        """Describe the failed ``what`` using ``response``'s request, status and body."""
        request = response.request
        super().__init__(
            f"{what} failed: {request.method} {request.path_url} -> "
            f"{response.status_code}: {response.text}"
        )
        self.response = response


def _normalise_inventory(inventory: Inventory) -> dict[str, dict[str, Any]]:
    records: dict[str, dict[str, Any]] = {}
    for rc, value in inventory.items():
        records[rc] = {"total": value} if isinstance(value, int) else dict(value)
    return records


def _is_generation_conflict(response: requests.Response) -> bool:
    if response.status_code != 409:
        return False
    try:
        errors = response.json().get("errors", [])
    except ValueError:
        return False
    return any(e.get("code") == "placement.concurrent_update" for e in errors)


class PlacementAdmin:
    """Tiny admin client over ``requests.Session`` for tests; every call is one raw request."""

    def __init__(
        self,
        url: str,
        token: str = "admin",  # noqa: S107 - noauth2 user name, not a secret
        microversion: str = DEFAULT_MICROVERSION,
        timeout: float = 30.0,
    ) -> None:
        """Talk to Placement at ``url`` (no trailing slash needed) as ``token``."""
        self.url = url.rstrip("/")
        self.token = token
        self.microversion = microversion
        self.timeout = timeout
        self.session = requests.Session()

    def close(self) -> None:
        """Close the underlying HTTP session."""
        self.session.close()

    def __enter__(self) -> PlacementAdmin:
        """Return ``self``."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the session."""
        self.close()

    # -- raw ---------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        microversion: str | _Default | None = _Default.MICROVERSION,
    ) -> requests.Response:
        """Send one request and return the response whatever its status.

        ``microversion`` defaults to the helper's; ``None`` sends no version header (so
        Placement answers as 1.0). ``headers`` are added last and win.
        """
        send: dict[str, str] = {"X-Auth-Token": self.token, "Accept": "application/json"}
        version = self.microversion if microversion is _Default.MICROVERSION else microversion
        if version is not None:
            send["OpenStack-API-Version"] = f"placement {version}"
        if headers:
            send.update(headers)
        return self.session.request(
            method, self.url + path, json=json, headers=send, timeout=self.timeout
        )

    def _ok(self, what: str, method: str, path: str, json: Any = None) -> requests.Response:
        response = self.request(method, path, json=json)
        if not 200 <= response.status_code < 300:
            raise PlacementAdminError(what, response)
        return response

    # -- providers ---------------------------------------------------------------------------

    def create_provider(
        self,
        name: str | None = None,
        uuid: str | None = None,
        inventory: Inventory | None = None,
        parent: str | None = None,
    ) -> str:
        """Create a provider (optionally a child of ``parent``, with inventory); return its uuid.

        ``name`` defaults to a unique name derived from the uuid.
        """
        rp_uuid = uuid or str(uuid_mod.uuid4())
        body: dict[str, Any] = {"uuid": rp_uuid, "name": name or f"rp-{rp_uuid}"}
        if parent is not None:
            body["parent_provider_uuid"] = parent
        self._ok("create provider", "POST", "/resource_providers", body)
        if inventory:
            self.set_inventory(rp_uuid, inventory)
        return rp_uuid

    def provider(self, rp: str) -> dict[str, Any]:
        """Return ``GET /resource_providers/{rp}`` (includes ``generation``)."""
        body: dict[str, Any] = self._ok("get provider", "GET", f"/resource_providers/{rp}").json()
        return body

    def delete_provider(self, rp: str) -> requests.Response:
        """``DELETE /resource_providers/{rp}``; returns the raw response."""
        return self.request("DELETE", f"/resource_providers/{rp}")

    def set_inventory(self, rp: str, inventory: Inventory) -> None:
        """Replace all of ``rp``'s inventory (``{}`` clears it).

        Re-reads the provider generation and retries a few times on a generation conflict, so
        arranging state still works while a client under test is writing to the provider.
        """
        records = _normalise_inventory(inventory)
        for _ in range(_ARRANGE_ATTEMPTS):
            generation = self.provider(rp)["generation"]
            response = self.request(
                "PUT",
                f"/resource_providers/{rp}/inventories",
                json={"resource_provider_generation": generation, "inventories": records},
            )
            if not _is_generation_conflict(response):
                break
        if not 200 <= response.status_code < 300:
            raise PlacementAdminError("set inventory", response)

    def inventory(self, rp: str) -> dict[str, dict[str, Any]]:
        """Return ``rp``'s inventory records by resource class."""
        body = self._ok("get inventory", "GET", f"/resource_providers/{rp}/inventories").json()
        inventories: dict[str, dict[str, Any]] = body["inventories"]
        return inventories

    def usages(self, rp: str) -> dict[str, int]:
        """Return ``rp``'s usages by resource class, e.g. ``{"VCPU": 2, "MEMORY_MB": 0}``."""
        body = self._ok("get usages", "GET", f"/resource_providers/{rp}/usages").json()
        usages: dict[str, int] = body["usages"]
        return usages

    def provider_allocations(self, rp: str) -> dict[str, Any]:
        """Return ``rp``'s allocations: ``{consumer_uuid: {"resources": {rc: amount}}}``."""
        body = self._ok(
            "get provider allocations", "GET", f"/resource_providers/{rp}/allocations"
        ).json()
        allocations: dict[str, Any] = body["allocations"]
        return allocations

    # -- consumers ---------------------------------------------------------------------------

    def get_allocations(self, consumer: str) -> dict[str, Any]:
        """Return the raw ``GET /allocations/{consumer}`` body.

        For an unknown consumer this is ``{"allocations": {}}`` without generation keys.
        """
        body: dict[str, Any] = self._ok("get allocations", "GET", f"/allocations/{consumer}").json()
        return body

    def put_allocations(self, consumer: str, body: Mapping[str, Any]) -> requests.Response:
        """``PUT /allocations/{consumer}`` with exactly ``body``; returns the raw response."""
        return self.request("PUT", f"/allocations/{consumer}", json=dict(body))

    def delete_allocations(self, consumer: str) -> requests.Response:
        """``DELETE /allocations/{consumer}`` (no generation check); returns the raw response."""
        return self.request("DELETE", f"/allocations/{consumer}")
