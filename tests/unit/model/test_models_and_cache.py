"""Models parse Placement's JSON; the cache round-trips them exactly."""

from __future__ import annotations

import dataclasses

import pytest

import reportclient
from reportclient._gateway.consumer_cache import ConsumerCache
from tests.support.wire import new_uuid

RP1, RP2 = new_uuid(), new_uuid()


def test_from_json_reads_a_full_body():
    c = new_uuid()
    body = {
        "allocations": {RP1: {"resources": {"VCPU": 2}, "generation": 9}},
        "consumer_generation": 3,
        "project_id": "p",
        "user_id": "u",
        "consumer_type": "MIGRATION",
    }
    state = reportclient.ConsumerAllocations.from_json(c, body)
    assert state == reportclient.ConsumerAllocations(
        c, {RP1: {"VCPU": 2}}, 3, "p", "u", "MIGRATION"
    )
    assert state.to_json()["consumer_generation"] == 3
    assert state.to_json()["allocations"] == {RP1: {"resources": {"VCPU": 2}}}


def test_from_json_of_missing_consumer_has_no_generation():
    state = reportclient.ConsumerAllocations.from_json(new_uuid(), {"allocations": {}})
    assert not state.exists
    assert state.to_json() == {"allocations": {}}


def test_consumer_allocations_is_frozen():
    state = reportclient.ConsumerAllocations(new_uuid())
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.generation = 5  # type: ignore[misc]


def test_cache_round_trips_state_exactly():
    cache = ConsumerCache(10)
    state = reportclient.ConsumerAllocations(
        new_uuid(), {RP1: {"VCPU": 2, "MEMORY_MB": 2048}, RP2: {"DISK_GB": 20}}, 7, "p", "u", None
    )
    cache.put(state)
    assert cache.get(state.consumer_uuid) == state


def test_cache_evicts_least_recently_used():
    cache = ConsumerCache(2)
    a, b, c = (reportclient.ConsumerAllocations(new_uuid(), {}, 1) for _ in range(3))
    cache.put(a)
    cache.put(b)
    assert cache.get(a.consumer_uuid) == a  # a is now the most recent
    cache.put(c)
    assert cache.get(b.consumer_uuid) is None
    assert cache.get(a.consumer_uuid) == a
    assert cache.stats().evictions == 1


def test_cache_forget_and_clear():
    cache = ConsumerCache(5)
    a, b = (reportclient.ConsumerAllocations(new_uuid(), {}, 1) for _ in range(2))
    cache.put(a)
    cache.put(b)
    cache.forget(a.consumer_uuid)
    assert cache.get(a.consumer_uuid) is None
    cache.clear()
    assert len(cache) == 0


def test_full_cache_evicts_the_least_recently_used_sixty_fourth_at_once():
    cache = ConsumerCache(640)
    states = [reportclient.ConsumerAllocations(new_uuid(), {}, 1) for _ in range(641)]
    for state in states[:640]:
        cache.put(state)
    assert cache.get(states[0].consumer_uuid) == states[0]  # now most recently used

    cache.put(states[640])

    assert len(cache) == 631
    assert cache.stats().evictions == 10
    assert cache.get(states[0].consumer_uuid) == states[0]
    assert all(cache.get(s.consumer_uuid) is None for s in states[1:11])
    assert cache.get(states[11].consumer_uuid) == states[11]
