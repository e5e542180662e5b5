"""Placement's PUT .../traits answers its in-server generation race with a 500 that wrote nothing.

``placement/handlers/trait.py`` (16.0.0) does not catch the
``ResourceProviderConcurrentUpdateDetected`` its generation bump raises, so it
escapes the write's transaction (rolled back) and the fault wrapper answers 500
(shown on the real Placement in ``tests/functional/test_in_server_races.py``).
Beside claims the re-read after it usually found the generation moved twice,
which no read can settle: ``set_traits`` ended in ``OutcomeUnknown`` in issue
37's saturation benchmark. Only that answer to a traits write is a conflict;
every other 5xx to a write stays an unknown outcome.
"""

from __future__ import annotations

import json
import re

import pytest
import requests_mock

import reportclient
from reportclient._engine.field_write import TRAITS_RACE_500, traits_race
from reportclient._wire.responses import error_from_response
from tests.support.wire import URL, new_uuid

RP = new_uuid()
TRAITS = f"/resource_providers/{RP}/traits"


def _fault(detail: str) -> str:
    """The body Placement's fault wrapper sends: webob's stock sentence, then the exception."""
    stock = "The server has either erred or is incapable of performing the requested operation."
    error = {
        "status": 500,
        "title": "Internal Server Error",
        "detail": f"{stock}\n\n {detail}  ",
        "code": "placement.undefined_code",
        "request_id": "req-00000000-0000-4000-8000-000000000000",
    }
    return json.dumps({"errors": [error]})


def _answer(status: int, detail: str) -> reportclient.PlacementError:
    return error_from_response(
        status=status, text=_fault(detail), request_id=None, method="PUT", url=TRAITS
    )


def test_the_traits_race_500_is_a_race_inside_the_server() -> None:
    answer = _answer(500, TRAITS_RACE_500)
    assert isinstance(answer, reportclient.PlacementUnavailable) and answer.outcome_unknown
    race = traits_race(answer)
    assert type(race) is reportclient.GenerationConflict
    assert not race.provider_conflict and not race.consumer_conflict  # not a stale generation
    assert (race.status, race.request_id, race.url) == (500, answer.request_id, TRAITS)


@pytest.mark.parametrize(
    ("status", "detail"),
    [
        (500, "(pymysql.err.OperationalError) (1213, 'Deadlock found')"),
        (500, f"{TRAITS_RACE_500} and more"),
        (502, TRAITS_RACE_500),  # not Placement's own answer
        (503, TRAITS_RACE_500),
    ],
)
def test_any_other_5xx_stays_a_lost_answer(status: int, detail: str) -> None:
    answer = _answer(status, detail)
    assert isinstance(answer, reportclient.PlacementUnavailable)
    assert traits_race(answer) is None


def _traits(generation: int, traits: list[str]) -> dict[str, object]:
    return {"resource_provider_generation": generation, "traits": traits}


def test_set_traits_retries_the_500_race_instead_of_reporting_an_unknown_outcome(
    wire: requests_mock.Mocker, client: reportclient.PlacementClient, sleeps: list[float]
) -> None:
    """Two claims moved the generation inside the PUT: the re-read alone could not tell."""
    path = re.compile(re.escape(URL + TRAITS) + "$")
    wire.get(
        path,
        [
            {"json": _traits(5, ["HW_CPU_X86_SSE"])},
            {"json": _traits(7, ["HW_CPU_X86_SSE"])},  # the look: traits untouched
        ],
    )
    wire.put(
        path,
        [
            {"status_code": 500, "text": _fault(TRAITS_RACE_500)},
            {"json": _traits(8, ["HW_CPU_X86_AVX2"])},
        ],
    )

    done = client.providers.set_traits(RP, ["HW_CPU_X86_AVX2"])

    puts = [r.json() for r in wire.request_history if r.method == "PUT"]
    assert [p["resource_provider_generation"] for p in puts] == [5, 7]
    assert done.generation == 8 and done.traits == frozenset({"HW_CPU_X86_AVX2"})
    assert sleeps == [0.0]  # untouched: at once


def test_set_inventories_keeps_a_500_with_the_same_words_a_lost_answer(
    wire: requests_mock.Mocker, client: reportclient.PlacementClient
) -> None:
    """The inventory routes catch the race (409); a 500 there proves nothing."""
    path = re.compile(re.escape(f"{URL}/resource_providers/{RP}/inventories") + "$")
    body = {"resource_provider_generation": 5, "inventories": {}}
    wire.get(path, [{"json": body}, {"json": dict(body, resource_provider_generation=7)}])
    wire.put(path, status_code=500, text=_fault(TRAITS_RACE_500))

    with pytest.raises(reportclient.OutcomeUnknown):
        client.providers.set_inventory(RP, "VCPU", reportclient.Inventory(total=8))
