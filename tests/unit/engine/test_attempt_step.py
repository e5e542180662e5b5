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

# (why, premise read, stale generation, ends, looks, the look showed, next)
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
