"""Races against the real Placement: stale caches, other writers, capacity and lost updates."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

import pytest

from reportclient import (
    NO_RETRY,
    CapacityExceeded,
    ConsumerAllocations,
    ConsumerChanged,
    GenerationConflict,
    PlacementClient,
    PlacementError,
    add_allocations,
)
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import (
    JOIN_TIMEOUT,
    PROJECT,
    USER,
    Real,
    claim,
    fast_retry,
    held,
    make_client,
    new_id,
    raw_body,
    run_together,
    update,
    wire,
)
from tests.support.waiting import until

THREADS = 8


# -- the shelve race: another writer deleted the consumer ----------------------------------------


def _delete_consumer_behind_the_clients_back(
    admin: PlacementAdmin, consumer: str, generation: int
) -> None:
    response = admin.put_allocations(consumer, raw_body({}, generation))
    assert response.status_code == 204, response.text
    assert admin.get_allocations(consumer) == {"allocations": {}}


def test_claim_recovers_when_consumer_was_deleted_by_another_writer(
    real: Real,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, consumer = real.claimed({real.node: {"VCPU": 1}}, cached=True)
    assert client.cached(consumer).generation == 1  # type: ignore[union-attr]
    _delete_consumer_behind_the_clients_back(real.admin, consumer, 1)
    real.placement.clear_requests_seen()

    with caplog.at_level(logging.DEBUG, logger="reportclient"):
        state = claim(client, consumer, {real.node: {"VCPU": 2}})

    path = f"/allocations/{consumer}"
    assert real.wire() == [("PUT", path, 409), ("GET", path, 200), ("PUT", path, 204)]
    # The 409 the client retried is Placement's consumer conflict for a deleted consumer. A stale
    # cache is no contention: the retry is logged at DEBUG and nothing at WARNING or above.
    mine = [r for r in caplog.records if r.name.startswith("reportclient")]
    retries = [r for r in mine if "retrying in" in r.getMessage()]
    assert len(retries) == 1
    assert retries[0].name == "reportclient.retry"
    assert retries[0].levelno == logging.DEBUG
    assert "consumer generation conflict - expected null but got 1" in retries[0].getMessage()
    assert [r for r in mine if r.levelno >= logging.WARNING] == []
    assert state.generation == 1
    assert real.holds(consumer) == (1, {real.node: {"VCPU": 2}})
    assert client.cached(consumer) == state


def test_claim_with_the_default_ttl_reads_a_deleted_consumer_and_recreates_it_in_two_requests(
    real: Real,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # No retry at all: reading first, the client never sends the stale generation.
    client = real.client(retry=NO_RETRY)
    consumer = new_id()
    claim(client, consumer, {real.node: {"VCPU": 1}})
    assert client.cached(consumer).generation == 1  # type: ignore[union-attr]
    _delete_consumer_behind_the_clients_back(real.admin, consumer, 1)
    real.placement.clear_requests_seen()

    with caplog.at_level(logging.WARNING, logger="reportclient"):
        state = claim(client, consumer, {real.node: {"VCPU": 2}})

    path = f"/allocations/{consumer}"
    # GET shows the consumer missing; the PUT creates it anew (consumer_generation null).
    assert real.wire() == [("GET", path, 200), ("PUT", path, 204)]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("reportclient")] == []
    assert state.generation == 1
    assert real.holds(consumer) == (1, {real.node: {"VCPU": 2}})
    assert client.cached(consumer) == state


def test_stale_claim_after_delete_is_refused_with_expected_null_but_got_1(real: Real) -> None:
    client = real.cached_client(retry=NO_RETRY)
    consumer = new_id()
    claim(client, consumer, {real.node: {"VCPU": 1}})
    _delete_consumer_behind_the_clients_back(real.admin, consumer, 1)

    try:
        claim(client, consumer, {real.node: {"VCPU": 2}})
    except GenerationConflict as exc:
        conflict = exc
    else:
        raise AssertionError("a stale generation must conflict when retries are off")

    assert conflict.status == 409
    assert conflict.code == "placement.concurrent_update"
    assert "consumer generation conflict - expected null but got 1" in (conflict.detail or "")
    assert conflict.consumer_conflict
    assert conflict.attempts == 1
    assert (conflict.request_id or "").startswith("req-")
    assert real.admin.get_allocations(consumer) == {"allocations": {}}
    assert client.cached(consumer) is None


# -- Placement's invisible generation-0 consumers ----------------------------------------------
# Placement keeps a generation-0 consumer after an empty write for a new consumer, or after a
# failed write against a provider that does not exist, yet GET shows that consumer as missing.


def assert_refused_reread_then_created(real: Real, client: PlacementClient, consumer: str) -> None:
    """A claim of VCPU 1 on ``consumer``, which Placement shows as missing: sent as new and
    refused (409), re-read, sent again; the consumer then exists at generation 1 holding the
    claim, with the type any new consumer gets."""
    state = claim(client, consumer, {real.node: {"VCPU": 1}})

    path = f"/allocations/{consumer}"
    assert real.wire() == [("PUT", path, 409), ("GET", path, 200), ("PUT", path, 204)]
    assert state.generation == 1
    raw = real.admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 1
    assert held(raw) == {real.node: {"VCPU": 1}}
    # The claim that makes it appear sets a type, as for any new consumer.
    assert raw["consumer_type"] == "INSTANCE"


def test_claim_recovers_when_another_writer_left_an_invisible_generation_0_consumer(
    real: Real,
) -> None:
    consumer = new_id()
    emptied = real.admin.put_allocations(consumer, raw_body({}, None, consumer_type="MIGRATION"))
    assert emptied.status_code == 204, emptied.text
    assert real.admin.get_allocations(consumer) == {"allocations": {}}
    client = real.client()
    real.placement.clear_requests_seen()

    assert_refused_reread_then_created(real, client, consumer)


def test_claim_elsewhere_succeeds_after_a_claim_against_a_missing_provider_failed(
    real: Real,
) -> None:
    client = real.client()
    consumer = new_id()
    with pytest.raises(PlacementError) as caught:
        claim(client, consumer, {new_id(): {"VCPU": 1}})
    assert caught.value.status == 400
    real.placement.clear_requests_seen()

    assert_refused_reread_then_created(real, client, consumer)


def test_claim_elsewhere_after_capacity_exceeded_is_one_put(real: Real) -> None:
    full = real.admin.create_provider(inventory={"VCPU": 1})
    client = real.client()
    consumer = new_id()
    with pytest.raises(CapacityExceeded):
        claim(client, consumer, {full: {"VCPU": 2}})
    real.placement.clear_requests_seen()

    state = claim(client, consumer, {real.node: {"VCPU": 2}})

    assert real.wire() == [("PUT", f"/allocations/{consumer}", 204)]
    assert state.generation == 1
    assert real.admin.get_allocations(consumer)["consumer_generation"] == 1


# -- the mirror case: another writer changed the consumer ---------------------------------------


def _change_consumer_behind_the_clients_back(
    admin: PlacementAdmin, consumer: str, allocations: dict[str, dict[str, int]]
) -> None:
    response = admin.put_allocations(consumer, raw_body(allocations, 1))
    assert response.status_code == 204, response.text
    assert admin.get_allocations(consumer)["consumer_generation"] == 2


@pytest.mark.parametrize(
    "cached",
    [
        pytest.param(True, id="cached-is-refused-then-sees-the-other-writers-allocations"),
        pytest.param(False, id="default-ttl-reads-first-and-sees-only-the-other-writers"),
    ],
)
def test_update_sees_allocations_written_by_another_writer(real: Real, cached: bool) -> None:
    extra = real.admin.create_provider(inventory={"VCPU": 4})
    mine = {real.node: {"VCPU": 2}}
    client, consumer = real.claimed(mine, cached=cached)
    theirs = {real.node: {"VCPU": 3}, extra: {"VCPU": 1}}
    _change_consumer_behind_the_clients_back(real.admin, consumer, theirs)
    seen: list[ConsumerAllocations] = []

    def mutate(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
        seen.append(current)
        return {rp: dict(res) for rp, res in current.allocations.items()} | {real.node: {"VCPU": 5}}

    real.placement.clear_requests_seen()
    update(client, consumer, mutate)

    path = f"/allocations/{consumer}"
    # The cached client's write from its stale state is refused; the default TTL reads first,
    # so its mutate never sees the stale state, only what the GET returned.
    stale = [(1, mine)] if cached else []
    refused = [("PUT", path, 409)] if cached else []
    assert [(s.generation, s.allocations) for s in seen] == [*stale, (2, theirs)]
    assert real.wire() == [*refused, ("GET", path, 200), ("PUT", path, 204)]
    assert real.holds(consumer) == (3, {real.node: {"VCPU": 5}, extra: {"VCPU": 1}})


def test_add_allocations_adds_to_what_another_writer_wrote(real: Real) -> None:
    extra = real.admin.create_provider(inventory={"VCPU": 4})
    client, consumer = real.claimed({real.node: {"VCPU": 2}})
    theirs = {real.node: {"VCPU": 3}, extra: {"VCPU": 1}}
    _change_consumer_behind_the_clients_back(real.admin, consumer, theirs)

    state = update(client, consumer, add_allocations({real.node: {"VCPU": 1}}))

    expected = {real.node: {"VCPU": 4}, extra: {"VCPU": 1}}
    assert state.allocations == expected
    assert state.generation == 3
    assert real.holds(consumer) == (3, expected)
    assert real.admin.usages(extra)["VCPU"] == 1


def test_claim_refuses_to_replace_what_another_writer_wrote(real: Real) -> None:
    extra = real.admin.create_provider(inventory={"VCPU": 4})
    client = real.client()
    consumer = new_id()
    ours = claim(client, consumer, {real.node: {"VCPU": 2}})
    theirs = {real.node: {"VCPU": 3}, extra: {"VCPU": 1}}
    _change_consumer_behind_the_clients_back(real.admin, consumer, theirs)
    real.placement.clear_requests_seen()

    with pytest.raises(ConsumerChanged) as caught:
        claim(client, consumer, {real.node: {"VCPU": 6}})

    assert real.wire() == [("GET", f"/allocations/{consumer}", 200)]
    assert caught.value.known == ours
    # Read at 1.28 (no type asked for, none needed): the state shows no type.
    assert caught.value.state == ConsumerAllocations(consumer, theirs, 2, PROJECT, USER, None)
    assert caught.value.consumer_uuid == consumer
    assert real.holds(consumer) == (2, theirs)
    assert real.admin.usages(extra)["VCPU"] == 1


def test_claim_with_overwrite_replaces_what_another_writer_wrote(real: Real) -> None:
    extra = real.admin.create_provider(inventory={"VCPU": 4})
    client, consumer = real.claimed({real.node: {"VCPU": 2}})
    _change_consumer_behind_the_clients_back(
        real.admin, consumer, {real.node: {"VCPU": 3}, extra: {"VCPU": 1}}
    )
    real.placement.clear_requests_seen()

    state = claim(client, consumer, {real.node: {"VCPU": 6}}, overwrite=True)

    path = f"/allocations/{consumer}"
    assert real.wire() == [("GET", path, 200), ("PUT", path, 204)]
    assert state.generation == 3
    assert real.holds(consumer) == (3, {real.node: {"VCPU": 6}})
    assert real.admin.usages(extra)["VCPU"] == 0


# -- capacity race: distinct consumers, not enough room for all ----------------------------------


def test_concurrent_claims_beyond_capacity_admit_exactly_the_capacity(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    rp = placement_admin.create_provider(inventory={"VCPU": {"total": 5, "max_unit": 1}})
    client = make_client(real_placement, retry=fast_retry())
    consumers = [new_id() for _ in range(THREADS)]

    outcomes = run_together([lambda c=c: claim(client, c, {rp: {"VCPU": 1}}) for c in consumers])

    won = [c for c, (kind, _) in zip(consumers, outcomes, strict=True) if kind == "ok"]
    refused = [value for kind, value in outcomes if kind == "error"]
    assert len(won) == 5
    assert len(refused) == 3
    assert all(isinstance(exc, CapacityExceeded) for exc in refused), refused
    assert placement_admin.usages(rp) == {"VCPU": 5}
    assert sorted(placement_admin.provider_allocations(rp)) == sorted(won)
    for consumer in won:
        assert placement_admin.get_allocations(consumer)["consumer_generation"] == 1


# -- same-consumer race: no lost update -----------------------------------------------------------


#: What the consumer of the same-consumer races holds before the adds (claimed first: an update
#: never creates a consumer).
BASE_VCPU = 2


def _claimed_consumer(real_placement: EmbeddedPlacement, admin: PlacementAdmin) -> tuple[str, str]:
    """A provider with room for every add, and a consumer claimed on it with BASE_VCPU."""
    rp = admin.create_provider(inventory={"VCPU": {"total": 64, "max_unit": 64}})
    consumer = new_id()
    claim(make_client(real_placement), consumer, {rp: {"VCPU": BASE_VCPU}})
    assert admin.get_allocations(consumer)["consumer_generation"] == 1
    return rp, consumer


def assert_every_add_landed_once(
    admin: PlacementAdmin, rp: str, consumer: str, outcomes: list[tuple[str, ConsumerAllocations]]
) -> None:
    """THREADS adds of VCPU 1 each landed once, one generation apiece, none lost."""
    raw = admin.get_allocations(consumer)
    assert held(raw) == {rp: {"VCPU": BASE_VCPU + THREADS}}
    assert raw["consumer_generation"] == 1 + THREADS
    assert admin.usages(rp)["VCPU"] == BASE_VCPU + THREADS
    assert sorted(state.generation for _, state in outcomes) == list(range(2, THREADS + 2))


def _add_one_vcpu(
    client: PlacementClient, consumer: str, rp: str, all_read: threading.Barrier
) -> ConsumerAllocations:
    """Add one VCPU; the first computation waits until every worker has read the consumer.

    So every worker's first write carries the same generation and all but one of them
    conflict: the race is certain, not left to the scheduler's timing.
    """
    add = add_allocations({rp: {"VCPU": 1}})
    first = True

    def mutate(current: ConsumerAllocations) -> Mapping[str, Mapping[str, int]]:
        nonlocal first
        if first:
            first = False
            all_read.wait(JOIN_TIMEOUT)
        return add(current)

    return update(client, consumer, mutate)


def test_concurrent_adds_through_one_shared_client_take_turns(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    """One client's threads writing one consumer take turns: none of them conflicts.

    The first computation waits until every other thread is waiting for its
    turn, so all of them are writing at once; each then reads what the one
    before it wrote.
    """
    rp, consumer = _claimed_consumer(real_placement, placement_admin)
    client = make_client(real_placement, retry=fast_retry())
    turns = client._core.contention.turns
    add = add_allocations({rp: {"VCPU": 1}})
    first = threading.Lock()

    def mutate(current: ConsumerAllocations) -> Mapping[str, Mapping[str, int]]:
        if first.acquire(blocking=False):
            until(lambda: turns.waiting(f"consumer {consumer}") == THREADS, JOIN_TIMEOUT)
        return add(current)

    def add_one() -> ConsumerAllocations:
        return update(client, consumer, mutate)

    real_placement.clear_requests_seen()
    outcomes = run_together([add_one for _ in range(THREADS)])

    assert [kind for kind, _ in outcomes] == ["ok"] * THREADS, outcomes
    path = f"/allocations/{consumer}"
    assert sorted(wire(real_placement)) == sorted(
        [("GET", path, 200)] * THREADS + [("PUT", path, 204)] * THREADS
    )
    assert_every_add_landed_once(placement_admin, rp, consumer, outcomes)


def test_concurrent_adds_through_separate_clients_lose_no_update(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    rp, consumer = _claimed_consumer(real_placement, placement_admin)
    clients = [make_client(real_placement, retry=fast_retry()) for _ in range(THREADS)]
    all_read = threading.Barrier(THREADS)

    outcomes = run_together([lambda c=c: _add_one_vcpu(c, consumer, rp, all_read) for c in clients])

    assert [kind for kind, _ in outcomes] == ["ok"] * THREADS, outcomes
    assert_every_add_landed_once(placement_admin, rp, consumer, outcomes)


def test_concurrent_adds_that_outlast_the_retry_policy_raise_generation_conflict(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    rp, consumer = _claimed_consumer(real_placement, placement_admin)
    clients = [make_client(real_placement, retry=NO_RETRY) for _ in range(THREADS)]
    all_read = threading.Barrier(THREADS)
    real_placement.clear_requests_seen()

    outcomes = run_together([lambda c=c: _add_one_vcpu(c, consumer, rp, all_read) for c in clients])

    won = [value for kind, value in outcomes if kind == "ok"]
    lost = [value for kind, value in outcomes if kind == "error"]
    assert all(isinstance(exc, GenerationConflict) for exc in lost), lost
    assert all(exc.attempts == 1 and exc.consumer_conflict for exc in lost)
    # All eight read generation 1 before any wrote; Placement can accept only the first write.
    assert len(won) == 1
    assert len(lost) == THREADS - 1
    assert won[0].generation == 2
    assert won[0].allocations == {rp: {"VCPU": BASE_VCPU + 1}}
    path = f"/allocations/{consumer}"
    assert sorted(wire(real_placement)) == sorted(
        [("GET", path, 200)] * THREADS + [("PUT", path, 204)] + [("PUT", path, 409)] * (THREADS - 1)
    )
    # Every success is a write Placement kept: nothing was overwritten, nothing applied twice.
    raw = placement_admin.get_allocations(consumer)
    assert held(raw) == {rp: {"VCPU": BASE_VCPU + 1}}
    assert raw["consumer_generation"] == 2
