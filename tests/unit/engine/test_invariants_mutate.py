"""The write invariants, continued: what ``mutate`` sees, and what a claim may replace.

(4) ``mutate`` is never called on a made-up state; (5) editing the state it
is given in place is harmless. Then the claims that must go on: a consumer
found missing (the shelve race) and one holding what the client knew.
"""

from __future__ import annotations

import pytest

import reportclient
from reportclient.fixture import FakePlacement
from tests.support.answers import MISSING, NO_CONTENT, allocations_body
from tests.support.clients import claim, client_on, update
from tests.support.wire import CACHE_TTL, PROJECT, URL, USER, calls, new_uuid, sent

A, B = new_uuid(), new_uuid()


class MadeUpState(Exception):
    """Raised by a mutate that refuses to work on a consumer that does not exist."""


def path(consumer: str) -> str:
    return f"/allocations/{consumer}"


def strict_add_one(provider, seen):
    """Adds one VCPU on ``provider``; raises on a missing consumer; records its input."""

    def mutate(current):
        seen.append(
            (current.generation, {rp: dict(res) for rp, res in current.allocations.items()})
        )
        if not current.exists:
            raise MadeUpState(current.consumer_uuid)
        result = {rp: dict(res) for rp, res in current.allocations.items()}
        result.setdefault(provider, {})["VCPU"] = result.get(provider, {}).get("VCPU", 0) + 1
        return result

    return mutate


def edit_in_place(provider, amount):
    """Sets VCPU on ``provider`` by editing ``current.allocations`` itself, and returns it."""

    def mutate(current):
        current.allocations[provider]["VCPU"] = amount
        return current.allocations

    return mutate


@pytest.fixture
def rps(fake: FakePlacement) -> tuple[str, str]:
    return tuple(fake.create_provider(inventory={"VCPU": 16}) for _ in range(2))


def on_fake(fake, sleeps, clock, ttl=0.0):
    return client_on(fake, sleeps, cache_ttl=ttl, clock=clock)


def wire_log(fake: FakePlacement) -> list[tuple[str, int]]:
    return [(r.method, r.status) for r in fake.requests]


# -- (4) mutate is called on the real state, never on a made-up one --------------


def test_mutate_of_an_uncached_existing_consumer_runs_once_on_the_state_read(
    wire, client, consumer
):
    wire.get(f"{URL}{path(consumer)}", json=allocations_body({B: {"VCPU": 2}}, 5))
    wire.put(f"{URL}{path(consumer)}", **NO_CONTENT)
    seen: list = []

    state = update(client, consumer, strict_add_one(A, seen))

    assert calls(wire) == [("GET", path(consumer)), ("PUT", path(consumer))]
    assert seen == [(5, {B: {"VCPU": 2}})]
    assert sent(wire, 1)["consumer_generation"] == 5
    assert sent(wire, 1)["allocations"] == {
        B: {"resources": {"VCPU": 2}},
        A: {"resources": {"VCPU": 1}},
    }
    assert state.generation == 6


def test_fake_mutate_of_an_uncached_existing_consumer_runs_once_on_the_state_read(
    fake, rps, sleeps, clock
):
    a, b = rps
    consumer = new_uuid()
    fake.put_allocations(consumer, {b: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    client = on_fake(fake, sleeps, clock)
    seen: list = []

    update(client, consumer, strict_add_one(a, seen))

    assert wire_log(fake) == [("GET", 200), ("PUT", 204)]
    assert seen == [(1, {b: {"VCPU": 2}})]
    assert fake.allocations(consumer) == {b: {"VCPU": 2}, a: {"VCPU": 1}}


# -- (5) editing the given state in place is harmless ----------------------------


def test_in_place_edit_of_current_is_written(wire, client, consumer):
    wire.get(f"{URL}{path(consumer)}", json=allocations_body({A: {"VCPU": 1}}, 1))
    wire.put(f"{URL}{path(consumer)}", **NO_CONTENT)

    state = update(client, consumer, edit_in_place(A, 3))

    assert calls(wire) == [("GET", path(consumer)), ("PUT", path(consumer))]
    assert sent(wire, 1)["allocations"] == {A: {"resources": {"VCPU": 3}}}
    assert sent(wire, 1)["consumer_generation"] == 1
    assert state.allocations == {A: {"VCPU": 3}}


@pytest.mark.parametrize("ttl", [0.0, CACHE_TTL])
def test_fake_holds_what_an_in_place_mutate_returned(fake, rps, sleeps, clock, ttl):
    a, _ = rps
    consumer = new_uuid()
    client = on_fake(fake, sleeps, clock, ttl)
    claim(client, consumer, {a: {"VCPU": 1}})

    update(client, consumer, edit_in_place(a, 3))

    assert fake.allocations(consumer) == {a: {"VCPU": 3}}
    assert fake.consumer_generation(consumer) == 2
    assert client.cached(consumer).allocations == {a: {"VCPU": 3}}


def test_in_place_edit_by_a_failing_mutate_leaves_the_cache_untouched(
    wire, cached_client, consumer
):
    wire.put(f"{URL}{path(consumer)}", **NO_CONTENT)
    before = claim(cached_client, consumer, {A: {"VCPU": 1}})

    def edit_then_fail(current):
        current.allocations[A]["VCPU"] = 99
        raise MadeUpState("changed my mind")

    with pytest.raises(MadeUpState):
        update(cached_client, consumer, edit_then_fail)

    assert cached_client.cached(consumer) == before
    assert cached_client.cached(consumer).allocations == {A: {"VCPU": 1}}
    assert len(wire.request_history) == 1


def test_update_whose_fresh_read_already_holds_the_result_sends_no_write(wire, client, consumer):
    wire.get(f"{URL}{path(consumer)}", json=allocations_body({A: {"VCPU": 1}}, 3))

    state = update(client, consumer, reportclient.replace_allocations({A: {"VCPU": 1}}))

    assert calls(wire) == [("GET", path(consumer))]
    assert state.generation == 3


def test_update_from_a_trusted_cache_is_written_even_when_it_changes_nothing(
    wire, cached_client, consumer
):
    wire.put(f"{URL}{path(consumer)}", **NO_CONTENT)
    claim(cached_client, consumer, {A: {"VCPU": 1}})

    state = update(cached_client, consumer, reportclient.replace_allocations({A: {"VCPU": 1}}))

    # the cache is what the write verifies, never proof that nothing is needed
    assert calls(wire) == [("PUT", path(consumer))] * 2
    assert sent(wire, 1)["consumer_generation"] == 1
    assert state.generation == 2


# -- claims that go on: a missing consumer, or one holding what was known --------


@pytest.mark.parametrize(
    ("ttl", "expected"),
    [
        pytest.param(0.0, [("GET", 200), ("PUT", 204)], id="default-reads-first"),
        pytest.param(CACHE_TTL, [("PUT", 409), ("GET", 200), ("PUT", 204)], id="cached"),
    ],
)
def test_fake_shelve_race_claim_recreates_the_deleted_consumer(
    fake, rps, sleeps, clock, ttl, expected
):
    a, _ = rps
    consumer = new_uuid()
    client = on_fake(fake, sleeps, clock, ttl)
    claim(client, consumer, {a: {"VCPU": 1}})
    fake.put_allocations(consumer, {}, project_id=PROJECT, user_id=USER)  # shelve-offload
    fake.reset_requests()

    state = claim(client, consumer, {a: {"VCPU": 1}})

    assert wire_log(fake) == expected
    assert fake.requests[-1].json["consumer_generation"] is None
    assert state.generation == fake.consumer_generation(consumer) == 1
    assert fake.allocations(consumer) == {a: {"VCPU": 1}}


def test_claim_of_a_consumer_known_missing_is_one_new_consumer_write(wire, client, consumer):
    wire.get(f"{URL}{path(consumer)}", **MISSING)
    wire.put(f"{URL}{path(consumer)}", **NO_CONTENT)
    client.get_allocations(consumer)
    wire.reset_mock()

    claim(client, consumer, {A: {"VCPU": 1}})

    assert calls(wire) == [("PUT", path(consumer))]
    assert sent(wire, 0)["consumer_generation"] is None


@pytest.mark.parametrize("knows", ["wrote", "read"])
def test_fake_consumer_holding_what_the_client_wrote_or_read_is_replaced(
    fake, rps, sleeps, clock, knows
):
    a, b = rps
    consumer = new_uuid()
    client = on_fake(fake, sleeps, clock)
    if knows == "wrote":
        claim(client, consumer, {a: {"VCPU": 1}})
    else:
        fake.put_allocations(consumer, {a: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
        client.get_allocations(consumer)
    fake.reset_requests()

    claim(client, consumer, {b: {"VCPU": 2}})

    assert wire_log(fake) == [("GET", 200), ("PUT", 204)]
    assert fake.allocations(consumer) == {b: {"VCPU": 2}}


def test_fake_claim_over_a_consumer_never_seen_is_consumer_changed(fake, rps, sleeps, clock):
    a, b = rps
    consumer = new_uuid()
    fake.put_allocations(consumer, {a: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    client = on_fake(fake, sleeps, clock)

    with pytest.raises(reportclient.ConsumerChanged) as err:
        claim(client, consumer, {b: {"VCPU": 2}})

    assert wire_log(fake) == [("PUT", 409), ("GET", 200)]
    assert err.value.known is None
    assert client.cached(consumer) is None  # still never seen: a retry is refused again
    assert fake.allocations(consumer) == {a: {"VCPU": 1}}


def test_claim_of_what_the_consumer_already_holds_needs_no_premise(fake, rps, sleeps, clock):
    a, _ = rps
    consumer = new_uuid()
    fake.put_allocations(consumer, {a: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    client = on_fake(fake, sleeps, clock)

    state = claim(client, consumer, {a: {"VCPU": 1}})

    # sent as new, refused, re-read: it already holds the claim, nothing to write
    assert wire_log(fake) == [("PUT", 409), ("GET", 200)]
    assert state.generation == fake.consumer_generation(consumer) == 1
