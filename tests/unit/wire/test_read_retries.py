"""Typed reads are retried like reads should be; a GET's failure never "may have been applied".

Issue 37: with one 503 in front of Placement, ``get_allocations``,
``get_provider``, ``get_allocation_candidates`` and ``get_usages`` raised
where ``request("GET", ...)`` recovered under the policy. Every typed read
now goes again after no connection, a reset, a 502/503/504 (a read timeout
once), with the policy's wait and within the client's retry budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import requests
import requests_mock

import reportclient
from reportclient._wire.failures import Kind, read_again
from reportclient.fixture import FakeClock
from tests.support.answers import refused
from tests.support.wire import TOKEN, URL, new_uuid

RP = new_uuid()
CONSUMER = new_uuid()
PAGE_503 = "<html><body><h1>503 Service Unavailable</h1>No server is available</body></html>"

Read = Callable[[reportclient.PlacementClient], Any]

#: (name, the call, the path it GETs, Placement's answer)
READS: list[tuple[str, Read, str, dict[str, Any]]] = [
    (
        "get_allocations",
        lambda c: c.get_allocations(CONSUMER),
        f"/allocations/{CONSUMER}",
        {"allocations": {}},
    ),
    (
        "get_provider",
        lambda c: c.providers.get_provider(RP),
        f"/resource_providers/{RP}",
        {"uuid": RP, "name": "cn1", "generation": 1, "root_provider_uuid": RP},
    ),
    (
        "get_allocation_candidates",
        lambda c: c.get_allocation_candidates(resources={"VCPU": 1}),
        "/allocation_candidates",
        {"allocation_requests": [], "provider_summaries": {}},
    ),
    ("get_usages", lambda c: c.get_usages("p"), "/usages", {"usages": {}}),
    (
        "get_provider_usages",
        lambda c: c.get_provider_usages(RP),
        f"/resource_providers/{RP}/usages",
        {"resource_provider_generation": 1, "usages": {}},
    ),
    (
        "get_inventories",
        lambda c: c.providers.get_inventories(RP),
        f"/resource_providers/{RP}/inventories",
        {"resource_provider_generation": 1, "inventories": {}},
    ),
    (
        "get_traits",
        lambda c: c.providers.get_traits(RP),
        f"/resource_providers/{RP}/traits",
        {"resource_provider_generation": 1, "traits": []},
    ),
    (
        "get_aggregates",
        lambda c: c.providers.get_aggregates(RP),
        f"/resource_providers/{RP}/aggregates",
        {"resource_provider_generation": 1, "aggregates": []},
    ),
    (
        "get_provider_allocations",
        lambda c: c.providers.get_provider_allocations(RP),
        f"/resource_providers/{RP}/allocations",
        {"resource_provider_generation": 1, "allocations": {}},
    ),
    (
        "list_providers",
        lambda c: c.providers.list_providers(),
        "/resource_providers",
        {"resource_providers": []},
    ),
    ("list_traits", lambda c: c.providers.list_traits(), "/traits", {"traits": []}),
    (
        "list_resource_classes",
        lambda c: c.providers.list_resource_classes(),
        "/resource_classes",
        {"resource_classes": []},
    ),
]


def path_only(path: str) -> re.Pattern[str]:
    return re.compile(re.escape(URL + path) + r"(\?.*)?$")


def make(
    sleeps: list[float], budget: reportclient.RetryBudget | None = None
) -> reportclient.PlacementClient:
    settings: dict[str, Any] = {}
    if budget is not None:
        settings["retry_budget"] = budget
    return reportclient.PlacementClient.from_endpoint(
        URL,
        token=TOKEN,
        retry=reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5),
        microversion="1.39",
        clock=FakeClock(),
        **settings,
    )


@pytest.mark.parametrize(("name", "read", "path", "body"), READS, ids=[r[0] for r in READS])
def test_a_typed_read_recovers_from_one_503(
    wire: requests_mock.Mocker, name: str, read: Read, path: str, body: dict[str, Any]
) -> None:
    sleeps: list[float] = []
    wire.get(
        path_only(path),
        [{"status_code": 503, "text": PAGE_503}, {"status_code": 200, "json": body}],
    )

    read(make(sleeps))

    gets = [r for r in wire.request_history if r.path != "/"]
    assert len(gets) == 2
    assert sleeps == [1.5]  # half of the 3 s first backoff (retry_backoff_base), pinned


@pytest.mark.parametrize("status", [502, 503, 504])
def test_proxy_statuses_and_resets_are_retried_with_growing_jittered_waits(
    wire: requests_mock.Mocker, status: int
) -> None:
    sleeps: list[float] = []
    path = f"/allocations/{CONSUMER}"
    wire.get(
        path_only(path),
        [
            {"status_code": status, "text": "bad gateway"},
            {"exc": refused()},
            {"exc": requests.exceptions.ConnectionError("Connection reset by peer")},
            {"status_code": 200, "json": {"allocations": {}}},
        ],
    )

    make(sleeps).get_allocations(CONSUMER)

    assert sleeps == [1.5, 3.0, 4.0]  # 0.5 x min(8, 3 x 2^(n-1))


def test_a_read_gives_up_after_four_tries(wire: requests_mock.Mocker) -> None:
    sleeps: list[float] = []
    wire.get(path_only(f"/resource_providers/{RP}"), status_code=503, text=PAGE_503)

    with pytest.raises(reportclient.PlacementUnavailable) as caught:
        make(sleeps).providers.get_provider(RP)

    assert len([r for r in wire.request_history if r.path != "/"]) == 4
    assert caught.value.outcome_unknown is False


def test_placements_own_500_is_not_retried(wire: requests_mock.Mocker) -> None:
    """A 500 answers the same request the same way (a value the database refuses)."""
    sleeps: list[float] = []
    wire.get(path_only("/resource_providers"), status_code=500, text="boom")

    with pytest.raises(reportclient.PlacementUnavailable) as caught:
        make(sleeps).providers.list_providers()

    assert len([r for r in wire.request_history if r.path != "/"]) == 1
    assert caught.value.outcome_unknown is False  # a GET changed nothing


def test_a_read_timeout_is_retried_once(wire: requests_mock.Mocker) -> None:
    sleeps: list[float] = []
    wire.get(
        path_only("/allocation_candidates"),
        exc=requests.exceptions.ReadTimeout("read timed out"),
    )

    with pytest.raises(reportclient.PlacementUnavailable) as caught:
        make(sleeps).get_allocation_candidates(resources={"VCPU": 1})

    assert len([r for r in wire.request_history if r.path != "/"]) == 2
    assert caught.value.outcome_unknown is False
    assert "may have been applied" not in str(caught.value)


@pytest.mark.parametrize(
    ("status", "kind", "attempt", "timeouts", "again"),
    [
        (503, None, 1, 0, True),
        (502, None, 3, 0, True),
        (504, None, 4, 0, False),  # four tries in all
        (500, None, 1, 0, False),
        (404, None, 1, 0, False),
        (None, Kind.CONNECT, 1, 0, True),
        (None, Kind.LOST, 2, 0, True),
        (None, Kind.READ_TIMEOUT, 1, 1, True),
        (None, Kind.READ_TIMEOUT, 2, 2, False),
        (None, Kind.AUTH, 1, 0, False),
        (None, Kind.NOT_SENT, 1, 0, False),
    ],
)
def test_read_again_table(
    status: int | None, kind: Kind | None, attempt: int, timeouts: int, again: bool
) -> None:
    assert read_again(status=status, kind=kind, attempt=attempt, timeouts=timeouts) is again


def test_a_read_retry_spends_from_the_budget_and_an_empty_one_says_overloaded(
    wire: requests_mock.Mocker,
) -> None:
    sleeps: list[float] = []
    budget = reportclient.RetryBudget(ratio=0.0, floor=0.1, clock=FakeClock())  # one retry
    wire.get(path_only(f"/allocations/{CONSUMER}"), status_code=503, text=PAGE_503)
    wire.get(path_only(f"/resource_providers/{RP}"), status_code=503, text=PAGE_503)
    client = make(sleeps, budget)

    with pytest.raises(reportclient.PlacementOverloaded) as caught:
        client.get_allocations(CONSUMER)

    assert len([r for r in wire.request_history if r.path != "/"]) == 2
    assert caught.value.outcome_unknown is False and caught.value.last.status == 503
    assert str(caught.value).startswith("Request ")
    with pytest.raises(reportclient.PlacementOverloaded):
        client.providers.get_provider(RP)  # sent once: nothing left to retry with
    assert len([r for r in wire.request_history if r.path != "/"]) == 3


def test_a_5xx_answering_a_get_is_never_may_have_been_applied(
    wire: requests_mock.Mocker, client: reportclient.PlacementClient
) -> None:
    wire.get(path_only("/usages"), status_code=502, text="bad gateway")

    with pytest.raises(reportclient.PlacementUnavailable) as caught:
        client.get_usages("p")

    assert caught.value.outcome_unknown is False


def test_a_5xx_answering_a_write_still_may_have_been_applied(
    wire: requests_mock.Mocker, client: reportclient.PlacementClient
) -> None:
    wire.put(path_only(f"/resource_providers/{RP}/traits"), status_code=503, text=PAGE_503)

    with pytest.raises(reportclient.PlacementUnavailable) as caught:
        client.request("PUT", f"/resource_providers/{RP}/traits", json={"traits": []})

    assert caught.value.outcome_unknown is True
