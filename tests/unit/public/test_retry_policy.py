"""The retry policy: exact sleeps, attempt counts, replaceability, logging (behaviour 6)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import tenacity

import reportclient
from tests.support.answers import (
    MISSING,
    NO_CONTENT,
    allocations_body,
    consumer_conflict,
    error_body,
)
from tests.support.clients import update
from tests.support.wire import PROJECT, URL, USER, new_uuid


def always_conflicting(wire, consumer):
    wire.put(f"{URL}/allocations/{consumer}", **consumer_conflict("null", "1"))
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)


def test_spent_retries_raise_generation_conflict_with_attempts_and_exact_sleeps(
    wire, client, sleeps, consumer, rp
):
    always_conflicting(wire, consumer)

    with pytest.raises(reportclient.GenerationConflict) as err:
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert err.value.attempts == 12
    assert "after 12 attempt(s)" in str(err.value)
    # the first stale generation re-reads at once; then full jitter pinned at
    # 0.5 over the engine's window: 1 s for the first contended conflict, then
    # half the window before, never under the 3 s floor
    assert sleeps == pytest.approx([0.0, 0.5] + [1.5] * 9)
    assert err.value.consumer_conflict
    assert err.value.code == "placement.concurrent_update"
    assert [r.method for r in wire.request_history].count("PUT") == 12


def in_server_race(moved: str) -> dict[str, Any]:
    """Placement's 409 for an allocation write that lost a race inside its transaction.

    ``moved`` is what Placement says moved: "the resource provider data" (its
    provider-generation bump lost more often than it retries) or "the data"
    (the consumer's own bump lost: another writer of the consumer landed).
    """
    detail = (
        "There was a conflict when trying to complete your request.\n\n Inventory and/or "
        "allocations changed while attempting to allocate: Another thread concurrently "
        f"updated {moved}. Please retry your update  "
    )
    return {"status_code": 409, "json": error_body(409, detail, "placement.concurrent_update")}


def test_an_in_server_race_with_the_consumer_untouched_is_retried_at_once(
    wire, client, sleeps, consumer, rp
):
    wire.put(
        f"{URL}/allocations/{consumer}",
        [in_server_race("the resource provider data"), NO_CONTENT],
    )
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    # Placement's provider-generation bump lost to other allocations; the
    # re-read shows the consumer as the claim took it (missing): nobody
    # contends on it, so the claim goes again at once
    assert sleeps == [0.0]
    assert [r.method for r in wire.request_history] == ["PUT", "GET", "PUT"]


def test_an_in_server_race_on_the_consumer_waits_without_a_look(wire, client, sleeps, rp):
    """The consumer's own bump lost inside the write: writers contend on it.

    No re-read at once (it would be stale after the wait: 16 writers on one
    consumer, every such look came back touched); the policy waits within
    the engine's first window and the next attempt reads after the wait.
    """
    consumer = new_uuid()
    path = f"{URL}/allocations/{consumer}"
    wire.get(
        path,
        [
            {"status_code": 200, "json": allocations_body({rp: {"VCPU": 1}}, 3)},
            {"status_code": 200, "json": allocations_body({rp: {"VCPU": 2}}, 4)},
        ],
    )
    wire.put(path, [in_server_race("the data"), NO_CONTENT])

    client.update_allocations(
        consumer, reportclient.add_allocations({rp: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
    )

    assert [r.method for r in wire.request_history] == ["GET", "PUT", "GET", "PUT"]
    assert sleeps == [0.5]  # full jitter pinned at 0.5 over the first window (1 s)
    assert wire.request_history[-1].json()["consumer_generation"] == 4
    assert wire.request_history[-1].json()["allocations"][rp]["resources"] == {"VCPU": 3}


def test_user_policy_replaces_the_default(wire, sleeps, consumer, rp):
    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_fixed(0.25), sleep=sleeps.append
    )
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=policy
    )
    always_conflicting(wire, consumer)

    with pytest.raises(reportclient.GenerationConflict) as err:
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert err.value.attempts == 3
    # the first stale generation re-reads at once; the user's wait after that
    assert sleeps == [0.0, 0.25]


def test_user_policy_that_retries_everything_still_never_retries_capacity(
    wire, sleeps, consumer, rp
):
    policy = tenacity.Retrying(stop=tenacity.stop_after_attempt(5), sleep=sleeps.append)
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=policy
    )
    wire.put(
        f"{URL}/allocations/{consumer}",
        status_code=409,
        json={
            "errors": [
                {
                    "status": 409,
                    "title": "Conflict",
                    "code": "placement.undefined_code",
                    "detail": "Unable to allocate inventory: would exceed the capacity.",
                }
            ]
        },
    )

    with pytest.raises(reportclient.CapacityExceeded):
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert len(wire.request_history) == 1
    assert sleeps == []


def test_no_retry_surfaces_the_first_conflict(wire, consumer, rp):
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=reportclient.NO_RETRY
    )
    always_conflicting(wire, consumer)

    with pytest.raises(reportclient.GenerationConflict) as err:
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert err.value.attempts == 1
    assert len(wire.request_history) == 1


def test_retries_are_logged_at_warning_with_consumer_and_attempt(
    wire, client, consumer, rp, caplog
):
    """A write computed from a state just read lost a race: writers contend."""
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("2", "1"), NO_CONTENT])

    with caplog.at_level(logging.WARNING, logger="reportclient"):
        update(client, consumer, reportclient.add_allocations({rp: {"VCPU": 1}}))

    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.levelno for r in warnings] == [logging.WARNING]
    assert consumer in warnings[0].getMessage()
    assert "attempt 1" in warnings[0].getMessage()


def test_user_before_sleep_hook_still_runs(wire, sleeps, consumer, rp):
    seen: list[int] = []
    policy = reportclient.default_retry(sleep=sleeps.append).copy(
        before_sleep=lambda state: seen.append(state.attempt_number)
    )
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=policy
    )
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("null", "1"), NO_CONTENT])
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert seen == [1]


def test_deadline_stops_retrying(wire, consumer, rp, monkeypatch):
    clock = [0.0]

    def fake_sleep(seconds: float) -> None:
        clock[0] += seconds

    # tenacity measures the deadline on time.monotonic; drive it by our sleeps
    monkeypatch.setattr(tenacity.time, "monotonic", lambda: clock[0])
    policy = reportclient.default_retry(
        attempts=100, deadline=1.0, base=0.4, cap=0.4, sleep=fake_sleep, rand=lambda: 1.0
    )
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=policy, clock=lambda: 0.0
    )
    always_conflicting(wire, consumer)

    with pytest.raises(reportclient.GenerationConflict) as err:
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    # sleeps 0 (stale generation), then the engine's window capped at 0.4:
    # 0.4, 0.4, 0.4; the attempt failing at 1.2 is past the deadline
    assert err.value.attempts == 5
    assert clock[0] == pytest.approx(1.2)


def test_wait_full_jitter_grows_and_caps():
    wait = reportclient.wait_full_jitter(base=0.1, cap=0.5, rand=lambda: 1.0)
    delays = []
    for n in range(1, 6):
        state = tenacity.RetryCallState(None, None, (), {})
        state.attempt_number = n
        delays.append(wait(state))
    assert delays == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])
