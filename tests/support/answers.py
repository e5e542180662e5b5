"""What Placement answers, scripted for requests-mock: bodies, errors, a refused connection."""

from __future__ import annotations

from typing import Any

import requests
import urllib3

from tests.support.wire import PROJECT, USER

__all__ = [
    "MISSING",
    "NO_CONTENT",
    "allocations_body",
    "consumer_conflict",
    "error_body",
    "refused",
    "root_document",
]

NO_CONTENT = {"status_code": 204, "text": ""}
MISSING = {"status_code": 200, "json": {"allocations": {}}}


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
