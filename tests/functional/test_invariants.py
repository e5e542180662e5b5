"""The write invariants (README.rst, "Write semantics") against the real Placement.

No clobber, no resurrection, ABA, mutate only on a state Placement returned, in-place mutate,
and the shelve race. "Another writer" is raw HTTP straight to Placement; every outcome is a
typed error or what Placement holds, read back with ``placement_admin`` (never the cache of
the client under test). Each runs with the default ``cache_ttl=0`` and, where the cache
changes the path, with ``cache_ttl=60`` on a fake clock.
"""

from __future__ import annotations

from typing import cast

import pytest

from reportclient import (
    ConsumerAllocations,
    ConsumerChanged,
    ConsumerGone,
    Mutator,
    PlacementClient,
    add_allocations,
)
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import PROJECT, USER, holds, new_id, wire
from tests.functional._outcome_helpers import (
    Allocs,
    FakeClock,
    client_for,
    other_writer_deletes,
    other_writer_puts,
)

pytestmark = pytest.mark.functional

TTL = 60.0
#: Default (every write reads first) and a trusted cache (writes from the cache).
TTLS = pytest.mark.parametrize("ttl", [0.0, TTL], ids=["cache_ttl=0", "cache_ttl=60"])


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def providers(placement_admin: PlacementAdmin, compute_node: str) -> tuple[str, str, str]:
    """Providers A (the compute node), B and X, each with 8 VCPU."""
    others = [placement_admin.create_provider(inventory={"VCPU": 8}) for _ in range(2)]
    return compute_node, others[0], others[1]


def make(placement: EmbeddedPlacement, clock: FakeClock, ttl: float = 0.0) -> PlacementClient:
    return client_for(placement.url, cache_ttl=ttl, clock=clock)


def claim(
    client: PlacementClient, consumer: str, allocs: Allocs, *, overwrite: bool = False
) -> ConsumerAllocations:
    return client.claim(consumer, allocs, project_id=PROJECT, user_id=USER, overwrite=overwrite)


def update(client: PlacementClient, consumer: str, mutate: Mutator) -> ConsumerAllocations:
    return client.update_allocations(consumer, mutate, project_id=PROJECT, user_id=USER)


def successful_puts(placement: EmbeddedPlacement) -> list[tuple[str, str, int]]:
    return [r for r in wire(placement) if r[0] == "PUT" and r[2] < 300]


# -- (1) no clobber -------------------------------------------------------------------------


def knows_a_then_b_moves_in(
    placement: EmbeddedPlacement, admin: PlacementAdmin, client: PlacementClient, a: str, b: str
) -> str:
    """The client claims {A: 1}; another writer moves the consumer to {B: 4} (generation 2)."""
    consumer = new_id()
    claim(client, consumer, {a: {"VCPU": 1}})
    other_writer_puts(admin, consumer, {b: {"VCPU": 4}}, 1)
    placement.clear_requests_seen()
    return consumer


@TTLS
def test_claim_over_allocations_another_writer_moved_is_consumer_changed_and_writes_nothing(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
    ttl: float,
) -> None:
    a, b, _ = providers
    client = make(real_placement, clock, ttl)
    consumer = knows_a_then_b_moves_in(real_placement, placement_admin, client, a, b)

    with pytest.raises(ConsumerChanged) as caught:
        claim(client, consumer, {a: {"VCPU": 2}})
    seen = wire(real_placement)

    assert caught.value.state.allocations == {b: {"VCPU": 4}}
    assert caught.value.state.generation == 2
    assert caught.value.known is not None
    assert caught.value.known.allocations == {a: {"VCPU": 1}}
    assert holds(placement_admin, consumer) == (2, {b: {"VCPU": 4}})
    path = f"/allocations/{consumer}"
    expected = [("GET", path, 200)] if ttl == 0 else [("PUT", path, 409), ("GET", path, 200)]
    assert seen == expected


@TTLS
def test_claim_with_overwrite_replaces_allocations_another_writer_moved(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
    ttl: float,
) -> None:
    a, b, _ = providers
    client = make(real_placement, clock, ttl)
    consumer = knows_a_then_b_moves_in(real_placement, placement_admin, client, a, b)

    claim(client, consumer, {a: {"VCPU": 2}}, overwrite=True)

    assert holds(placement_admin, consumer) == (3, {a: {"VCPU": 2}})
    assert placement_admin.usages(b)["VCPU"] == 0


# -- (2) no resurrection --------------------------------------------------------------------


@TTLS
def test_update_of_a_consumer_another_writer_deleted_is_consumer_gone_and_creates_nothing(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
    ttl: float,
) -> None:
    a, b, _ = providers
    client = make(real_placement, clock, ttl)
    consumer = new_id()
    claim(client, consumer, {a: {"VCPU": 1}})
    other_writer_deletes(placement_admin, consumer)
    real_placement.clear_requests_seen()

    with pytest.raises(ConsumerGone) as caught:
        update(client, consumer, add_allocations({b: {"VCPU": 2}}))
    writes = successful_puts(real_placement)

    assert not caught.value.state.exists
    assert holds(placement_admin, consumer) == (None, {})
    assert placement_admin.usages(b)["VCPU"] == 0
    assert placement_admin.usages(a)["VCPU"] == 0
    assert writes == []


def test_custom_mutate_is_never_called_for_a_consumer_another_writer_deleted(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
) -> None:
    a, b, _ = providers
    client = make(real_placement, clock)
    consumer = new_id()
    claim(client, consumer, {a: {"VCPU": 1}})
    other_writer_deletes(placement_admin, consumer)
    calls: list[ConsumerAllocations] = []

    def mutate(current: ConsumerAllocations) -> Allocs:
        calls.append(current)
        return {b: {"VCPU": 1}}

    with pytest.raises(ConsumerGone):
        update(client, consumer, mutate)

    assert calls == []
    assert holds(placement_admin, consumer) == (None, {})


# -- (3) ABA: deleted and re-created at generation 1 ---------------------------------------


def cached_a_then_recreated_with_b(
    admin: PlacementAdmin, client: PlacementClient, a: str, b: str
) -> str:
    """The client caches {A: 1} at generation 1; another writer deletes the consumer and
    re-creates it holding {B: 2}, at generation 1 again."""
    consumer = new_id()
    claim(client, consumer, {a: {"VCPU": 1}})
    other_writer_deletes(admin, consumer)
    other_writer_puts(admin, consumer, {b: {"VCPU": 2}}, None)
    assert holds(admin, consumer) == (1, {b: {"VCPU": 2}})
    cached = client.cached(consumer)
    assert cached is not None and cached.generation == 1
    return consumer


def test_aba_update_adds_to_the_recreated_consumer_and_keeps_its_allocations(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
) -> None:
    a, b, x = providers
    client = make(real_placement, clock)
    consumer = cached_a_then_recreated_with_b(placement_admin, client, a, b)

    update(client, consumer, add_allocations({x: {"VCPU": 3}}))

    assert holds(placement_admin, consumer) == (2, {b: {"VCPU": 2}, x: {"VCPU": 3}})
    assert placement_admin.usages(a)["VCPU"] == 0


def test_aba_update_past_cache_ttl_reads_first_and_keeps_the_recreated_allocations(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
) -> None:
    a, b, x = providers
    client = make(real_placement, clock, TTL)
    consumer = cached_a_then_recreated_with_b(placement_admin, client, a, b)
    clock.advance(TTL + 1)
    real_placement.clear_requests_seen()

    update(client, consumer, add_allocations({x: {"VCPU": 3}}))

    assert [r[0] for r in wire(real_placement)] == ["GET", "PUT"]
    assert holds(placement_admin, consumer) == (2, {b: {"VCPU": 2}, x: {"VCPU": 3}})


def test_aba_update_within_cache_ttl_overwrites_the_recreated_consumer_documented_risk(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
) -> None:
    """README "Cache": the window ``cache_ttl`` buys its saved GET with. Pinned so that a
    change to it is a decision, not an accident."""
    a, b, x = providers
    client = make(real_placement, clock, TTL)
    consumer = cached_a_then_recreated_with_b(placement_admin, client, a, b)

    update(client, consumer, add_allocations({x: {"VCPU": 3}}))

    assert holds(placement_admin, consumer) == (2, {a: {"VCPU": 1}, x: {"VCPU": 3}})
    assert placement_admin.usages(b)["VCPU"] == 0


# -- (4) mutate only ever sees a state Placement returned -----------------------------------


@TTLS
def test_mutate_of_a_consumer_this_client_never_saw_is_called_once_on_the_real_state(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
    ttl: float,
) -> None:
    a, b, _ = providers
    consumer = new_id()
    other_writer_puts(placement_admin, consumer, {a: {"VCPU": 2}}, None)
    client = make(real_placement, clock, ttl)
    seen: list[tuple[int | None, Allocs]] = []

    def add_b_to_an_existing_consumer(current: ConsumerAllocations) -> Allocs:
        held = {rp: dict(res) for rp, res in current.allocations.items()}
        seen.append((current.generation, held))
        if not current.exists:
            raise AssertionError("mutate called on a made-up state of a missing consumer")
        return {**held, b: {"VCPU": 1}}

    update(client, consumer, add_b_to_an_existing_consumer)

    assert seen == [(1, {a: {"VCPU": 2}})]
    assert holds(placement_admin, consumer) == (2, {a: {"VCPU": 2}, b: {"VCPU": 1}})


# -- (5) a mutate that edits its argument in place ------------------------------------------


@TTLS
def test_mutate_editing_current_in_place_is_written(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
    ttl: float,
) -> None:
    a, _, _ = providers
    client = make(real_placement, clock, ttl)
    consumer = new_id()
    claim(client, consumer, {a: {"VCPU": 1}})

    def bump_in_place(current: ConsumerAllocations) -> Allocs:
        held = cast(Allocs, current.allocations)  # a plain dict, the caller's to edit
        held[a]["VCPU"] += 2
        return held

    state = update(client, consumer, bump_in_place)

    assert holds(placement_admin, consumer) == (2, {a: {"VCPU": 3}})
    assert state.allocations == {a: {"VCPU": 3}}
    assert client.cached(consumer) == state


# -- the shelve race: another writer emptied the consumer before a claim --------------------


def claimed_then_emptied_elsewhere(
    placement: EmbeddedPlacement, admin: PlacementAdmin, client: PlacementClient, a: str
) -> str:
    consumer = new_id()
    claim(client, consumer, {a: {"VCPU": 1}})
    other_writer_puts(admin, consumer, {}, 1)  # shelve-offload: an empty write deletes it
    assert holds(admin, consumer) == (None, {})
    placement.clear_requests_seen()
    return consumer


def test_shelve_race_claim_recovers_with_get_then_put_by_default(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
) -> None:
    a, _, _ = providers
    client = make(real_placement, clock)
    consumer = claimed_then_emptied_elsewhere(real_placement, placement_admin, client, a)

    claim(client, consumer, {a: {"VCPU": 2}})
    seen = wire(real_placement)

    path = f"/allocations/{consumer}"
    assert seen == [("GET", path, 200), ("PUT", path, 204)]
    assert holds(placement_admin, consumer) == (1, {a: {"VCPU": 2}})


def test_shelve_race_claim_with_cache_ttl_recovers_with_put_409_get_put(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    providers: tuple[str, str, str],
    clock: FakeClock,
) -> None:
    a, _, _ = providers
    client = make(real_placement, clock, TTL)
    consumer = claimed_then_emptied_elsewhere(real_placement, placement_admin, client, a)

    claim(client, consumer, {a: {"VCPU": 2}})
    seen = wire(real_placement)

    path = f"/allocations/{consumer}"
    assert seen == [("PUT", path, 409), ("GET", path, 200), ("PUT", path, 204)]
    assert holds(placement_admin, consumer) == (1, {a: {"VCPU": 2}})
