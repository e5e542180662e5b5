"""The attempt step as a table: what a conflict leads to (like test_fate.py for the fate rule)."""

from __future__ import annotations

import pytest
import tenacity

import reportclient
from reportclient import errors
from reportclient._engine.attempt_step import Conflict, Next, after_conflict, look
from tests.support.answers import allocations_body, consumer_conflict
from tests.support.wire import PROJECT, URL, USER

U, W, C = Next.UNTOUCHED, Next.WRONG_GUESS, Next.CONTENDED

# (why, premise read, stale generation, ends, looks, the look showed, next); Placement's wording
ROWS = [
    ("ConsumerChanged ends the operation", True, True, True, False, None, None),
    ("from a read, stale, untouched", True, True, False, True, False, U),
    ("from a read, stale, touched", True, True, False, True, True, C),
    ("from a read, stale, no look possible", True, True, False, True, None, C),
    ("from a cache or a guess, stale", False, True, False, False, None, W),
    ("in-server race from a read, untouched", True, False, False, True, False, U),
    ("in-server race from a read, touched", True, False, False, True, True, C),
    ("in-server race from a cache, untouched", False, False, False, True, False, U),
    ("in-server race from a cache, touched", False, False, False, True, True, C),
]  # fmt: skip

# A conflict worded as none of Placement's (nova's tests stub one): (why, premise read,
# looks, the look showed, next). Only a read showing the subject changed explains it.
UNEXPLAINED = [
    ("unexplained from a read, untouched: ends", True, True, False, None),
    ("unexplained from a guess, untouched: ends", False, True, False, None),
    ("unexplained, no look possible: ends", True, True, None, None),
    ("unexplained, the read shows a change: contended", True, True, True, C),
]  # fmt: skip


@pytest.mark.parametrize(
    ("premise_read", "stale", "ends", "looks", "touched", "expected"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_attempt_step(premise_read, stale, ends, looks, touched, expected):
    conflict = Conflict(premise_read=premise_read, stale=stale, ends=ends)
    assert look(conflict) is looks
    assert after_conflict(conflict, touched) is expected


@pytest.mark.parametrize(
    ("premise_read", "looks", "touched", "expected"),
    [row[1:] for row in UNEXPLAINED],
    ids=[row[0] for row in UNEXPLAINED],
)
def test_an_unexplained_conflict_ends_unless_a_read_explains_it(
    premise_read, looks, touched, expected
):
    conflict = Conflict(premise_read=premise_read, stale=False, explained=False)
    assert look(conflict) is looks
    assert after_conflict(conflict, touched) is expected


@pytest.mark.parametrize(
    ("detail", "explained"),
    [
        ("consumer generation conflict - expected 2 but got 1", True),
        ("consumer generation conflict - expected null but got None", True),
        ("resource provider generation conflict", True),
        ("Resource provider's generation already changed. Please update ...", True),
        (
            "Inventory and/or allocations changed while attempting to allocate: Another "
            "thread concurrently updated the data. Please retry your update",
            True,
        ),
        ("... because the inventory was updated by another process. Please retry", True),
        ("consumer generation conflict", False),  # what nova's functional tests stub
        ("conflict", False),
        (None, False),
    ],
)
def test_a_conflict_is_explained_when_placement_worded_it(detail, explained):
    exc = errors.GenerationConflict("409", status=409, detail=detail)
    assert exc.explained is explained


def test_a_claim_meeting_an_unexplained_conflict_ends_after_one_write_and_one_read(
    wire, consumer, rp
):
    wire.put(
        f"{URL}/allocations/{consumer}",
        status_code=409,
        json={
            "errors": [{"status": 409, "code": "placement.concurrent_update", "detail": "conflict"}]
        },
    )
    wire.get(f"{URL}/allocations/{consumer}", json={"allocations": {}})
    client = reportclient.PlacementClient.from_endpoint(URL, "admin", microversion="1.39")

    with pytest.raises(errors.GenerationConflict) as caught:
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert [r.method for r in wire.request_history] == ["PUT", "GET"]
    assert caught.value.status == 409 and caught.value.detail == "conflict"


@pytest.mark.parametrize(
    ("step", "at_once", "counted"),
    [(U, True, False), (W, True, True), (C, False, True)],
)
def test_what_each_next_step_means_to_the_policy(step, at_once, counted):
    assert (step.at_once, step.counted) == (at_once, counted)


def test_the_window_reaches_the_policys_wait_not_the_callers_exception(wire, consumer, rp):
    """A custom wait sees ``contention_window``; the conflict a caller catches carries none."""
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    wire.put(f"{URL}/allocations/{consumer}", **consumer_conflict("2", "1"))
    lent = []

    def wait(state: tenacity.RetryCallState) -> float:
        lent.append(getattr(state, "contention_window", None))
        return 0.0

    policy = tenacity.Retrying(stop=tenacity.stop_after_attempt(2), wait=wait, sleep=lambda _: None)
    client = reportclient.PlacementClient.from_endpoint(URL, "admin", microversion="1.39")

    with pytest.raises(errors.GenerationConflict) as caught:
        client.update_allocations(
            consumer, lambda s: {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER, retry=policy
        )

    assert lent and all(window is not None and window > 0 for window in lent)
    assert not hasattr(caught.value, "backoff_hint")
    assert not hasattr(caught.value, "contention_window")
