"""The write invariants (README.rst, "Write semantics"): no clobber, no resurrection, ABA.

Each scenario runs on requests-mock, asserting the exact wire sequence, and on
the fake Placement, asserting what Placement holds afterwards. Scenarios 4
and 5 (what ``mutate`` is called on) are in test_invariants_mutate.py.
"""

from __future__ import annotations

import pytest

import reportclient
from reportclient.fixture import FakePlacement
from tests.support.answers import MISSING, NO_CONTENT, allocations_body, consumer_conflict
from tests.support.clients import claim, client_on, update
from tests.support.hooks import is_get, once_after
from tests.support.wire import CACHE_TTL, PROJECT, URL, USER, calls, new_uuid, sent

A, B, X = new_uuid(), new_uuid(), new_uuid()


def path(consumer: str) -> str:
    return f"/allocations/{consumer}"


@pytest.fixture
def rps(fake: FakePlacement) -> tuple[str, str, str]:
    """Providers A, B and X on the fake."""
    return tuple(fake.create_provider(inventory={"VCPU": 16}) for _ in range(3))


def on_fake(fake, sleeps, clock, ttl=0.0):
    return client_on(fake, sleeps, cache_ttl=ttl, clock=clock)


def claimed_on_fake(fake, sleeps, clock, rp):
    """(client, consumer) after the client claimed VCPU 1 on ``rp``; requests reset."""
    client, consumer = on_fake(fake, sleeps, clock), new_uuid()
    claim(client, consumer, {rp: {"VCPU": 1}})
    fake.reset_requests()
    return client, consumer


def wire_log(fake: FakePlacement) -> list[tuple[str, int]]:
    return [(r.method, r.status) for r in fake.requests]


def holds(fake: FakePlacement, consumer: str) -> dict[str, dict[str, int]] | None:
    """What the fake holds for the consumer; None when it does not exist."""
    if fake.consumer_generation(consumer) is None:
        return None
    return fake.allocations(consumer)


# -- (1) no clobber: a claim never replaces what the client never saw ------------


def claimed_a_then_held(wire, client, consumer, allocs, generation):
    """The client claims {A: 1}; Placement then answers reads with ``allocs`` at ``generation``."""
    wire.put(f"{URL}{path(consumer)}", **NO_CONTENT)
    claim(client, consumer, {A: {"VCPU": 1}})
    wire.get(f"{URL}{path(consumer)}", json=allocations_body(allocs, generation))
    wire.reset_mock()


def knows_a_then_b_moves_in(wire, client, consumer):
    """The client claims {A: 1}; another service then moves C to {B: 4} (generation 2)."""
    claimed_a_then_held(wire, client, consumer, {B: {"VCPU": 4}}, 2)


def test_claim_over_a_consumer_moved_elsewhere_is_consumer_changed(wire, client, consumer):
    knows_a_then_b_moves_in(wire, client, consumer)

    with pytest.raises(reportclient.ConsumerChanged) as err:
        claim(client, consumer, {A: {"VCPU": 2}})

    assert calls(wire) == [("GET", path(consumer))]
    assert err.value.state.allocations == {B: {"VCPU": 4}}
    assert err.value.state.generation == 2
    assert err.value.known.allocations == {A: {"VCPU": 1}}
    assert err.value.consumer_uuid == consumer


def test_claim_with_overwrite_replaces_a_consumer_moved_elsewhere(wire, client, consumer):
    knows_a_then_b_moves_in(wire, client, consumer)

    state = claim(client, consumer, {A: {"VCPU": 2}}, overwrite=True)

    assert calls(wire) == [("GET", path(consumer)), ("PUT", path(consumer))]
    assert sent(wire, 1)["consumer_generation"] == 2
    assert sent(wire, 1)["allocations"] == {A: {"resources": {"VCPU": 2}}}
    assert state.generation == 3


def test_blind_retry_after_consumer_changed_is_consumer_changed_again(wire, client, consumer):
    knows_a_then_b_moves_in(wire, client, consumer)
    with pytest.raises(reportclient.ConsumerChanged):
        claim(client, consumer, {A: {"VCPU": 2}})

    # the read that found the change did not become what the client knows
    assert client.cached(consumer).allocations == {A: {"VCPU": 1}}
    with pytest.raises(reportclient.ConsumerChanged):
        claim(client, consumer, {A: {"VCPU": 2}})
    assert calls(wire) == [("GET", path(consumer))] * 2


def test_claim_after_reading_the_change_replaces_it(wire, client, consumer):
    knows_a_then_b_moves_in(wire, client, consumer)
    with pytest.raises(reportclient.ConsumerChanged):
        claim(client, consumer, {A: {"VCPU": 2}})
    wire.reset_mock()

    client.get_allocations(consumer)  # the caller looks, and decides
    claim(client, consumer, {A: {"VCPU": 2}})

    assert calls(wire) == [("GET", path(consumer))] * 2 + [("PUT", path(consumer))]
    assert sent(wire, 2)["consumer_generation"] == 2


def test_cached_claim_over_a_consumer_moved_elsewhere_is_consumer_changed_after_one_reread(
    wire, cached_client, consumer, sleeps
):
    knows_a_then_b_moves_in(wire, cached_client, consumer)
    wire.put(f"{URL}{path(consumer)}", **consumer_conflict("2", "1"))

    with pytest.raises(reportclient.ConsumerChanged) as err:
        claim(cached_client, consumer, {A: {"VCPU": 2}})

    assert calls(wire) == [("PUT", path(consumer)), ("GET", path(consumer))]
    assert sent(wire, 0)["consumer_generation"] == 1
    assert err.value.state.allocations == {B: {"VCPU": 4}}
    assert err.value.known.allocations == {A: {"VCPU": 1}}
    assert sleeps == [0.0]


def test_cached_claim_with_overwrite_replaces_a_consumer_moved_elsewhere(
    wire, cached_client, consumer
):
    knows_a_then_b_moves_in(wire, cached_client, consumer)
    wire.put(f"{URL}{path(consumer)}", [consumer_conflict("2", "1"), NO_CONTENT])

    claim(cached_client, consumer, {A: {"VCPU": 2}}, overwrite=True)

    assert [m for m, _ in calls(wire)] == ["PUT", "GET", "PUT"]
    assert sent(wire, 2)["consumer_generation"] == 2
    assert sent(wire, 2)["allocations"] == {A: {"resources": {"VCPU": 2}}}


@pytest.mark.parametrize(
    ("ttl", "expected"), [(0.0, [("GET", 200)]), (CACHE_TTL, [("PUT", 409), ("GET", 200)])]
)
def test_fake_keeps_the_other_writers_allocations_when_a_claim_is_refused(
    fake, rps, sleeps, clock, ttl, expected
):
    a, b, _ = rps
    consumer = new_uuid()
    client = on_fake(fake, sleeps, clock, ttl)
    claim(client, consumer, {a: {"VCPU": 1}})
    fake.put_allocations(consumer, {b: {"VCPU": 4}}, project_id=PROJECT, user_id=USER)
    fake.reset_requests()

    with pytest.raises(reportclient.ConsumerChanged) as err:
        claim(client, consumer, {a: {"VCPU": 2}})

    assert wire_log(fake) == expected
    assert err.value.state.allocations == {b: {"VCPU": 4}}
    assert holds(fake, consumer) == {b: {"VCPU": 4}}


@pytest.mark.parametrize("ttl", [0.0, CACHE_TTL])
def test_fake_holds_the_claim_when_overwrite_is_asked(fake, rps, sleeps, clock, ttl):
    a, b, _ = rps
    consumer = new_uuid()
    client = on_fake(fake, sleeps, clock, ttl)
    claim(client, consumer, {a: {"VCPU": 1}})
    fake.put_allocations(consumer, {b: {"VCPU": 4}}, project_id=PROJECT, user_id=USER)

    claim(client, consumer, {a: {"VCPU": 2}}, overwrite=True)

    assert holds(fake, consumer) == {a: {"VCPU": 2}}
    assert fake.consumer_generation(consumer) == 3


def test_claim_racing_a_move_between_its_read_and_write_is_consumer_changed(
    fake, rps, sleeps, clock
):
    a, b, _ = rps
    client, consumer = claimed_on_fake(fake, sleeps, clock, a)

    owner = {"project_id": PROJECT, "user_id": USER}
    once_after(fake, is_get, lambda f: f.put_allocations(consumer, {b: {"VCPU": 4}}, **owner))

    with pytest.raises(reportclient.ConsumerChanged):
        claim(client, consumer, {a: {"VCPU": 2}})

    assert wire_log(fake) == [("GET", 200), ("PUT", 409), ("GET", 200)]
    assert holds(fake, consumer) == {b: {"VCPU": 4}}


# -- (2) no resurrection: updates never create a consumer ------------------------

MUTATORS = {
    "add_allocations": lambda: reportclient.add_allocations({B: {"VCPU": 1}}),
    "remove_providers": lambda: reportclient.remove_providers([A]),
    "replace_allocations": lambda: reportclient.replace_allocations({B: {"VCPU": 1}}),
}


@pytest.mark.parametrize("name", sorted(MUTATORS))
def test_update_of_a_consumer_deleted_elsewhere_is_consumer_gone(wire, client, consumer, name):
    wire.put(f"{URL}{path(consumer)}", **NO_CONTENT)
    claim(client, consumer, {A: {"VCPU": 1}, B: {"VCPU": 1}})
    wire.get(f"{URL}{path(consumer)}", **MISSING)  # deleted by another service
    wire.reset_mock()

    with pytest.raises(reportclient.ConsumerGone) as err:
        update(client, consumer, MUTATORS[name]())

    assert calls(wire) == [("GET", path(consumer))]
    assert not err.value.state.exists
    assert err.value.consumer_uuid == consumer


def test_custom_mutate_is_never_called_for_a_consumer_deleted_elsewhere(wire, client, consumer):
    wire.put(f"{URL}{path(consumer)}", **NO_CONTENT)
    claim(client, consumer, {A: {"VCPU": 1}})
    wire.get(f"{URL}{path(consumer)}", **MISSING)
    wire.reset_mock()
    called = []

    with pytest.raises(reportclient.ConsumerGone):
        update(client, consumer, lambda current: called.append(current) or {B: {"VCPU": 1}})

    assert called == []
    assert calls(wire) == [("GET", path(consumer))]


def test_update_of_a_consumer_never_created_is_consumer_gone(wire, client, consumer):
    wire.get(f"{URL}{path(consumer)}", **MISSING)
    called = []

    with pytest.raises(reportclient.ConsumerGone):
        update(client, consumer, lambda current: called.append(current) or {B: {"VCPU": 1}})

    assert called == []
    assert calls(wire) == [("GET", path(consumer))]


def test_cached_update_of_a_consumer_deleted_elsewhere_is_consumer_gone_after_one_reread(
    wire, cached_client, consumer
):
    wire.put(f"{URL}{path(consumer)}", [NO_CONTENT, consumer_conflict("null", "1")])
    claim(cached_client, consumer, {A: {"VCPU": 1}})
    wire.get(f"{URL}{path(consumer)}", **MISSING)
    wire.reset_mock()
    seen = []

    def mutate(current):
        seen.append((current.exists, dict(current.allocations)))
        return {**current.allocations, B: {"VCPU": 1}}

    with pytest.raises(reportclient.ConsumerGone):
        update(cached_client, consumer, mutate)

    assert calls(wire) == [("PUT", path(consumer)), ("GET", path(consumer))]
    assert sent(wire, 0)["consumer_generation"] == 1
    assert seen == [(True, {A: {"VCPU": 1}})]  # the trusted cache, never a made-up state


@pytest.mark.parametrize("name", sorted(MUTATORS))
@pytest.mark.parametrize("ttl", [0.0, CACHE_TTL])
def test_fake_consumer_deleted_elsewhere_stays_deleted_after_an_update(
    fake, rps, sleeps, clock, ttl, name
):
    a, b, _ = rps
    consumer = new_uuid()
    client = on_fake(fake, sleeps, clock, ttl)
    claim(client, consumer, {a: {"VCPU": 1}, b: {"VCPU": 1}})
    fake.delete_allocations(consumer)

    with pytest.raises(reportclient.ConsumerGone):
        update(client, consumer, MUTATORS[name]())

    assert fake.consumer(consumer) is None


def test_update_racing_a_delete_between_its_read_and_write_is_consumer_gone(
    fake, rps, sleeps, clock
):
    a, _, x = rps
    client, consumer = claimed_on_fake(fake, sleeps, clock, a)

    once_after(fake, is_get, lambda f: f.delete_allocations(consumer))

    with pytest.raises(reportclient.ConsumerGone):
        update(client, consumer, reportclient.add_allocations({x: {"VCPU": 1}}))

    assert wire_log(fake) == [("GET", 200), ("PUT", 409), ("GET", 200)]
    assert fake.consumer(consumer) is None


# -- (3) ABA: deleted and re-created at the same generation ----------------------


def aba(wire, client, consumer):
    """The client claims {A: 1} (generation 1); another writer deletes C and re-creates
    it at generation 1 holding {B: 1}."""
    claimed_a_then_held(wire, client, consumer, {B: {"VCPU": 1}}, 1)


def test_aba_update_reads_first_and_adds_to_the_recreated_consumer(wire, client, consumer):
    aba(wire, client, consumer)

    update(client, consumer, reportclient.add_allocations({X: {"VCPU": 1}}))

    assert calls(wire) == [("GET", path(consumer)), ("PUT", path(consumer))]
    assert sent(wire, 1)["consumer_generation"] == 1
    assert sent(wire, 1)["allocations"] == {
        B: {"resources": {"VCPU": 1}},
        X: {"resources": {"VCPU": 1}},
    }


def test_aba_within_cache_ttl_is_the_documented_window_the_cached_write_is_accepted(
    wire, cached_client, clock, consumer
):
    aba(wire, cached_client, consumer)
    clock.advance(CACHE_TTL / 2)

    update(cached_client, consumer, reportclient.add_allocations({X: {"VCPU": 1}}))

    # computed from the cache: the re-created consumer's {B: 1} is overwritten
    assert calls(wire) == [("PUT", path(consumer))]
    assert sent(wire, 0)["consumer_generation"] == 1
    assert sent(wire, 0)["allocations"] == {
        A: {"resources": {"VCPU": 1}},
        X: {"resources": {"VCPU": 1}},
    }


def test_aba_past_cache_ttl_reads_first_again(wire, cached_client, clock, consumer):
    aba(wire, cached_client, consumer)
    clock.advance(CACHE_TTL + 1)

    update(cached_client, consumer, reportclient.add_allocations({X: {"VCPU": 1}}))

    assert calls(wire) == [("GET", path(consumer)), ("PUT", path(consumer))]
    assert sent(wire, 1)["allocations"] == {
        B: {"resources": {"VCPU": 1}},
        X: {"resources": {"VCPU": 1}},
    }


@pytest.mark.parametrize(
    ("ttl", "elapsed", "held_after"),
    [
        pytest.param(0.0, 0.0, "BX", id="default-reads-first"),
        pytest.param(CACHE_TTL, CACHE_TTL / 2, "AX", id="within-ttl-documented-window"),
        pytest.param(CACHE_TTL, CACHE_TTL + 1, "BX", id="past-ttl-reads-first"),
    ],
)
def test_fake_aba_update_result(fake, rps, sleeps, clock, ttl, elapsed, held_after):
    a, b, x = rps
    consumer = new_uuid()
    client = on_fake(fake, sleeps, clock, ttl)
    claim(client, consumer, {a: {"VCPU": 1}})
    fake.delete_allocations(consumer)
    assert fake.put_allocations(consumer, {b: {"VCPU": 1}}, project_id=PROJECT, user_id=USER) == 1
    clock.advance(elapsed)

    update(client, consumer, reportclient.add_allocations({x: {"VCPU": 1}}))

    named = {"A": a, "B": b, "X": x}
    assert holds(fake, consumer) == {named[n]: {"VCPU": 1} for n in held_after}
    assert fake.consumer_generation(consumer) == 2
