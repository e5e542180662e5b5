"""Which conflicts wait, and for how long: the engine's window, pinned.

The policy decides when (its wait takes a uniform share of the engine's
window, lent as ``contention_window``); the engine decides what and suggests how long,
from what the conflict and its own history on the subject tell it.
"""

from __future__ import annotations

import pytest

import reportclient
from reportclient._engine.contention import (
    HALF_LIFE,
    LATER_FLOOR,
    MIN_WINDOW,
    ContentionMemory,
)
from reportclient.fixture import FakeClock
from tests.support.answers import NO_CONTENT, allocations_body, consumer_conflict
from tests.support.clients import update
from tests.support.wire import PROJECT, URL, USER

S = "consumer 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def test_the_first_retry_waits_within_the_floor_or_five_cycles_if_longer():
    memory = ContentionMemory()
    assert memory.window(S, cycle=0.1, conflicts=1) == MIN_WINDOW
    assert memory.window(S, cycle=0.3, conflicts=1) == pytest.approx(1.5)


def test_the_first_window_makes_room_for_the_writers_that_landed_and_this_one():
    memory = ContentionMemory()
    assert memory.window(S, 0.1, 1, landed=3) == pytest.approx(4 * MIN_WINDOW)
    # One write landed while this one computed: two writers take turns.
    assert memory.window(S, 0.1, 1, landed=1) == pytest.approx(2 * MIN_WINDOW)
    # A long cycle already queued behind the writes that landed: five cycles
    # per write that landed, when that is more than the floor.
    assert memory.window(S, 0.3, 1, landed=1) == pytest.approx(2.0)
    assert memory.window(S, 0.6, 1, landed=2) == pytest.approx(6.0)


def test_a_conflict_that_does_not_say_what_landed_keeps_the_floor():
    """Placement's in-server race (no "expected N"), or a provider's conflict."""
    memory = ContentionMemory()
    assert memory.window(S, 0.1, 1, landed=None) == MIN_WINDOW
    assert memory.window(S, 0.1, 1, landed=0) == MIN_WINDOW


def test_from_the_second_collision_the_window_halves_down_to_a_floor():
    """The crowd the first window spread lands meanwhile: who is left waited longest."""
    memory = ContentionMemory()
    first = memory.window(S, cycle=1.6, conflicts=1, landed=1)
    assert first == pytest.approx(8.0)  # five cycles
    second = memory.window(S, 0.1, 2, landed=1, previous=first)
    third = memory.window(S, 0.1, 3, landed=1, previous=second)
    fourth = memory.window(S, 0.1, 4, landed=1, previous=third)
    assert [second, third, fourth] == pytest.approx([4.0, LATER_FLOOR, LATER_FLOOR])
    assert LATER_FLOOR == 3.0


def test_a_later_collision_after_a_narrow_first_window_waits_at_least_the_floor():
    memory = ContentionMemory()
    first = memory.window(S, 0.1, 1)
    assert first == MIN_WINDOW
    assert memory.window(S, 0.1, 2, previous=first) == LATER_FLOOR
    # Without the previous window (a caller of its own), the floor still holds.
    assert memory.window(S, 0.1, 2) == LATER_FLOOR


def test_a_subject_remembers_the_widest_window_an_operation_needed():
    clock = FakeClock()
    memory = ContentionMemory(clock)
    memory.done(S, needed=6.0, conflicts=3)
    memory.done(S, needed=1.0, conflicts=1)  # a narrower one does not replace it
    assert memory.window(S, 0.1, 1) == pytest.approx(6.0)
    assert memory.window("consumer other", 0.1, 1) == MIN_WINDOW


def test_a_remembered_window_fades_by_half_per_half_life():
    clock = FakeClock()
    memory = ContentionMemory(clock)
    memory.done(S, needed=8.0, conflicts=2)
    clock.advance(HALF_LIFE)
    assert memory.window(S, 0.1, 1) == pytest.approx(4.0)
    clock.advance(2 * HALF_LIFE)
    assert memory.window(S, 0.1, 1) == MIN_WINDOW  # 1.0 remembered: the floor again


def test_an_operation_without_a_collision_leaves_the_memory_to_fade():
    memory = ContentionMemory()
    memory.done(S, needed=None, conflicts=0)
    assert memory.window(S, 0.1, 1) == MIN_WINDOW


# -- end to end on requests-mock: which conflicts wait ------------------------------------


def test_a_stale_cache_is_re_read_at_once_and_carries_no_window(wire, cached_client, consumer, rp):
    wire.put(
        f"{URL}/allocations/{consumer}",
        [NO_CONTENT, consumer_conflict("2", "1"), NO_CONTENT],
    )
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 2))
    sleeps: list[float] = []
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 1.0)
    cached_client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    cached_client.update_allocations(
        consumer,
        reportclient.add_allocations({rp: {"VCPU": 1}}),
        project_id=PROJECT,
        user_id=USER,
        retry=policy,
    )

    assert sleeps == [0.0]


def test_contention_seen_by_a_conflict_scales_the_wait(wire, client, sleeps, consumer, rp):
    """Three writes landed between the read and the write: room for them and this one."""
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("4", "1"), NO_CONTENT])

    update(client, consumer, reportclient.add_allocations({rp: {"VCPU": 1}}))

    assert sleeps == [pytest.approx(0.5 * 4 * MIN_WINDOW)]  # rand pinned at 0.5


def test_a_policy_of_the_callers_own_decides_when_whatever_the_hint(wire, consumer, rp):
    sleeps: list[float] = []
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    mine = policy.copy(wait=reportclient.wait_full_jitter(base=2.0, rand=lambda: 0.5))
    client = reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=mine, clock=lambda: 0.0
    )
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("2", "1"), NO_CONTENT])

    client.update_allocations(
        consumer, reportclient.add_allocations({rp: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
    )

    assert sleeps == [1.0]


def test_an_operation_colliding_again_and_again_waits_less_each_time(
    wire, client, sleeps, consumer, rp
):
    """The windows of one operation, end to end: widest first, then halving to the floor.

    Each conflict says seven writes landed while this one computed: the first
    window makes room for them and this writer (8 s); each later one halves.
    """
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    wire.put(
        f"{URL}/allocations/{consumer}",
        [consumer_conflict("8", "1")] * 3 + [NO_CONTENT],
    )

    update(client, consumer, reportclient.add_allocations({rp: {"VCPU": 1}}))

    # rand pinned at 0.5: half of each window.
    assert sleeps == pytest.approx([0.5 * 8.0, 0.5 * 4.0, 0.5 * LATER_FLOOR])


def test_the_next_operation_starts_from_the_window_the_last_one_got_through_in(
    wire, client, sleeps, consumer, rp
):
    """What is remembered is the window an operation succeeded after, not its widest.

    An operation given 8 s, then 4 s, then 3 s got through after the 3 s one:
    the crowd had thinned by then, so the next writer of the subject that
    collides once (one write landed: 2 s of its own) starts at 3 s, not 8 s.
    The full runs of 2026-12-03 measured exactly this.
    """
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    add = reportclient.add_allocations({rp: {"VCPU": 1}})
    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("8", "1")] * 3 + [NO_CONTENT])
    client.update_allocations(consumer, add, project_id=PROJECT, user_id=USER)
    del sleeps[:]

    wire.put(f"{URL}/allocations/{consumer}", [consumer_conflict("2", "1"), NO_CONTENT])
    client.update_allocations(consumer, add, project_id=PROJECT, user_id=USER)

    assert sleeps == pytest.approx([0.5 * LATER_FLOOR])
