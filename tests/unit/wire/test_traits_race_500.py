"""Placement's PUT .../traits answers its in-server generation race with a 500 that wrote nothing.

``placement/handlers/trait.py`` (16.0.0) does not catch the
``ResourceProviderConcurrentUpdateDetected`` its generation bump raises, so it
escapes the write's transaction (rolled back) and the fault wrapper answers 500
(shown on the real Placement in ``tests/functional/test_in_server_races.py``).
Only that answer, on that route, is a conflict; every other 5xx to a write
stays an unknown outcome.
"""

from __future__ import annotations

import json

import pytest

from reportclient import GenerationConflict, PlacementUnavailable
from reportclient._wire.responses import error_from_response
from tests.support.wire import new_uuid

RACE = "Another thread concurrently updated the resource provider data. Please retry your update"
RP = new_uuid()


def _fault(detail: str) -> str:
    """The body Placement's fault wrapper sends (webob's stock sentence, then the exception)."""
    stock = "The server has either erred or is incapable of performing the requested operation."
    return json.dumps(
        {
            "errors": [
                {
                    "status": 500,
                    "title": "Internal Server Error",
                    "detail": f"{stock}\n\n {detail}  ",
                    "code": "placement.undefined_code",
                    "request_id": "req-00000000-0000-4000-8000-000000000000",
                }
            ]
        }
    )


def test_the_traits_race_500_is_a_conflict_nothing_landed() -> None:
    error = error_from_response(
        status=500,
        text=_fault(RACE),
        request_id=None,
        method="PUT",
        url=f"/resource_providers/{RP}/traits",
    )
    assert type(error) is GenerationConflict
    assert not error.provider_conflict  # a race inside the server, not a stale generation
    assert not error.consumer_conflict


@pytest.mark.parametrize(
    ("status", "method", "path", "detail"),
    [
        (500, "PUT", f"/resource_providers/{RP}/inventories", RACE),  # that route answers 409
        (500, "PUT", f"/resource_providers/{RP}/traits", "(pymysql.err.OperationalError) 1213"),
        (500, "PUT", f"/resource_providers/{RP}/traits", f"{RACE} and more"),
        (502, "PUT", f"/resource_providers/{RP}/traits", RACE),  # a proxy's word proves nothing
        (500, "POST", "/allocations", RACE),
    ],
)
def test_every_other_5xx_to_a_write_is_an_unknown_outcome(
    status: int, method: str, path: str, detail: str
) -> None:
    error = error_from_response(
        status=status, text=_fault(detail), request_id=None, method=method, url=path
    )
    assert type(error) is PlacementUnavailable
    assert error.outcome_unknown
