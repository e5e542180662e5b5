"""How retries are logged and slept, and how a user's policy ends an operation.

DEBUG for a routine re-read (a write computed from the cache or from the
guess that a consumer is new met a stale generation), WARNING for contention
(a write computed from a fresh read lost) or an unreachable Placement, one
ERROR when the policy gives up.
"""

from __future__ import annotations

import logging
import time

import pytest
import tenacity

import reportclient
from tests.support.answers import MISSING, NO_CONTENT, allocations_body, consumer_conflict, refused
from tests.support.clients import endpoint_client, update
from tests.support.wire import PROJECT, URL, USER

RETRY_LINE = "attempt 1 failed"


def retry_records(caplog, level=None):
    return [
        r
        for r in caplog.records
        if r.name == "reportclient.retry"
        and "failed:" in r.getMessage()
        and (level is None or r.levelno == level)
    ]


def at_least_warning(caplog):
    return [
        r
        for r in caplog.records
        if r.name.startswith("reportclient") and r.levelno >= logging.WARNING
    ]


def test_stale_cache_reread_is_logged_at_debug_and_not_slept(
    wire, cached_client, sleeps, consumer, rp, caplog
):
    wire.put(
        f"{URL}/allocations/{consumer}", [NO_CONTENT, consumer_conflict("null", "1"), NO_CONTENT]
    )
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)
    cached_client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        cached_client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    routine = retry_records(caplog)
    assert [r.levelno for r in routine] == [logging.DEBUG]
    assert consumer in routine[0].getMessage()
    assert RETRY_LINE in routine[0].getMessage()
    assert at_least_warning(caplog) == []
    assert sleeps == [0.0]


def test_wrong_guess_that_a_consumer_is_new_is_logged_at_debug(
    wire, client, sleeps, consumer, rp, caplog
):
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("1", "None"), NO_CONTENT])
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        client.claim(consumer, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER, overwrite=True)

    assert [r.levelno for r in retry_records(caplog)] == [logging.DEBUG]
    assert at_least_warning(caplog) == []
    assert sleeps == [0.0]


def test_conflict_on_a_write_from_a_fresh_read_is_logged_at_warning_and_backs_off(
    wire, client, sleeps, consumer, rp, caplog
):
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("2", "1"), NO_CONTENT])

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        update(client, consumer, reportclient.add_allocations({rp: {"VCPU": 1}}))

    assert [r.levelno for r in retry_records(caplog)] == [logging.WARNING]
    # Half the engine's first window: one write landed since the read ("expected
    # 1 but got 2"), so two writers take turns, 2 s.
    assert sleeps == [1.0]


def test_unreachable_placement_is_logged_at_warning(wire, client, sleeps, consumer, rp, caplog):
    wire.put(f"{URL}/allocations/{consumer}", [{"exc": refused()}, NO_CONTENT])

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    warned = retry_records(caplog, logging.WARNING)
    assert len(warned) == 1
    assert "PlacementUnavailable" in warned[0].getMessage()
    assert retry_records(caplog, logging.DEBUG) == []
    assert sleeps == [1.5]


def test_policy_giving_up_logs_one_error(wire, sleeps, consumer, rp, caplog):
    client = endpoint_client(sleeps, attempts=3)
    wire.put(f"{URL}/allocations/{consumer}", **consumer_conflict("null", "1"))
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        with pytest.raises(reportclient.GenerationConflict):
            client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert consumer in errors[0].getMessage()
    assert "giving up after 3 attempt(s)" in errors[0].getMessage()
    # attempt 1 (a guess) is routine; attempt 2 wrote from a fresh read: contention
    assert [r.levelno for r in retry_records(caplog)] == [logging.DEBUG, logging.WARNING]


def test_operation_that_succeeds_after_retries_logs_no_error(wire, client, consumer, rp, caplog):
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("null", "1"), NO_CONTENT])
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_retry_error_callback_value_is_returned(wire, sleeps, consumer, rp, caplog):
    def give_up(state: tenacity.RetryCallState):
        return ("gave up", state.attempt_number, type(state.outcome.exception()).__name__)

    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(2), sleep=sleeps.append, retry_error_callback=give_up
    )
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=policy
    )
    wire.put(f"{URL}/allocations/{consumer}", **consumer_conflict("null", "1"))
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        result = client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert result == ("gave up", 2, "GenerationConflict")
    assert [r.method for r in wire.request_history] == ["PUT", "GET", "PUT"]
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_default_sleep_is_looked_up_at_call_time(wire, consumer, rp, monkeypatch):
    client = reportclient.PlacementClient.from_endpoint(
        URL,
        token="t",
        microversion="1.39",
        retry=reportclient.default_retry(rand=lambda: 0.5),
        clock=lambda: 0.0,
    )
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # as eventlet would, after import
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("2", "1"), NO_CONTENT])

    client.update_allocations(
        consumer, reportclient.add_allocations({rp: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
    )

    assert slept == [1.0]  # half of 2 s: one write landed, two writers take turns
