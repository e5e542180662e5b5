"""Races against the real Placement: stale caches, other writers, capacity and lost updates."""

from __future__ import annotations

import logging

import pytest

from reportclient import (
    NO_RETRY,
    CapacityExceeded,
    ConsumerAllocations,
    GenerationConflict,
    PlacementClient,
    PlacementError,
    add_allocations,
)
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import (
    PROJECT,
    USER,
    fast_retry,
    held,
    make_client,
    new_id,
    raw_body,
    run_together,
    wire,
)

THREADS = 8


# -- the shelve race: another writer deleted the consumer ----------------------------------------


def _delete_consumer_behind_the_clients_back(
    admin: PlacementAdmin, consumer: str, generation: int
) -> None:
    response = admin.put_allocations(consumer, raw_body({}, generation))
    assert response.status_code == 204, response.text
    assert admin.get_allocations(consumer) == {"allocations": {}}


def test_claim_recovers_when_consumer_was_deleted_by_another_writer(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    compute_node: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = make_client(real_placement)
    consumer = new_id()
    client.claim(consumer, {compute_node: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    assert client.cached(consumer).generation == 1  # type: ignore[union-attr]
    _delete_consumer_behind_the_clients_back(placement_admin, consumer, 1)
    real_placement.clear_requests_seen()

    with caplog.at_level(logging.WARNING, logger="reportclient"):
        state = client.claim(
            consumer, {compute_node: {"VCPU": 2}}, project_id=PROJECT, user_id=USER
        )

    path = f"/allocations/{consumer}"
    assert wire(real_placement) == [("PUT", path, 409), ("GET", path, 200), ("PUT", path, 204)]
    # The 409 the client retried is Placement's consumer conflict for a deleted consumer.
    retries = [r.getMessage() for r in caplog.records if r.name == "reportclient"]
    assert len(retries) == 1
    assert "consumer generation conflict - expected null but got 1" in retries[0]
    assert state.generation == 1
    raw = placement_admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 1
    assert held(raw) == {compute_node: {"VCPU": 2}}
    assert client.cached(consumer) == state


def test_stale_claim_after_delete_is_refused_with_expected_null_but_got_1(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement, retry=NO_RETRY)
    consumer = new_id()
    client.claim(consumer, {compute_node: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    _delete_consumer_behind_the_clients_back(placement_admin, consumer, 1)

    try:
        client.claim(consumer, {compute_node: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
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
    assert placement_admin.get_allocations(consumer) == {"allocations": {}}
    assert client.cached(consumer) is None


# -- Placement's invisible generation-0 consumers ----------------------------------------------
# Placement keeps a generation-0 consumer after an empty write for a new consumer, or after a
# failed write against a provider that does not exist, yet GET shows that consumer as missing.


def test_claim_recovers_when_another_writer_left_an_invisible_generation_0_consumer(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    consumer = new_id()
    emptied = placement_admin.put_allocations(consumer, raw_body({}, None))
    assert emptied.status_code == 204, emptied.text
    assert placement_admin.get_allocations(consumer) == {"allocations": {}}
    client = make_client(real_placement)
    real_placement.clear_requests_seen()

    state = client.claim(consumer, {compute_node: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    path = f"/allocations/{consumer}"
    assert wire(real_placement) == [("PUT", path, 409), ("GET", path, 200), ("PUT", path, 204)]
    assert state.generation == 1
    raw = placement_admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 1
    assert held(raw) == {compute_node: {"VCPU": 1}}


def test_claim_elsewhere_succeeds_after_a_claim_against_a_missing_provider_failed(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement)
    consumer = new_id()
    with pytest.raises(PlacementError) as caught:
        client.claim(consumer, {new_id(): {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    assert caught.value.status == 400
    real_placement.clear_requests_seen()

    state = client.claim(consumer, {compute_node: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    path = f"/allocations/{consumer}"
    assert wire(real_placement) == [("PUT", path, 409), ("GET", path, 200), ("PUT", path, 204)]
    assert state.generation == 1
    raw = placement_admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 1
    assert held(raw) == {compute_node: {"VCPU": 1}}


def test_claim_elsewhere_after_capacity_exceeded_is_one_put(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    full = placement_admin.create_provider(inventory={"VCPU": 1})
    client = make_client(real_placement)
    consumer = new_id()
    with pytest.raises(CapacityExceeded):
        client.claim(consumer, {full: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    real_placement.clear_requests_seen()

    state = client.claim(consumer, {compute_node: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)

    assert wire(real_placement) == [("PUT", f"/allocations/{consumer}", 204)]
    assert state.generation == 1
    assert placement_admin.get_allocations(consumer)["consumer_generation"] == 1


# -- the mirror case: another writer changed the consumer ---------------------------------------


def _change_consumer_behind_the_clients_back(
    admin: PlacementAdmin, consumer: str, allocations: dict[str, dict[str, int]]
) -> None:
    response = admin.put_allocations(consumer, raw_body(allocations, 1))
    assert response.status_code == 204, response.text
    assert admin.get_allocations(consumer)["consumer_generation"] == 2


def test_update_sees_allocations_written_by_another_writer(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    extra = placement_admin.create_provider(inventory={"VCPU": 4})
    client = make_client(real_placement)
    consumer = new_id()
    client.claim(consumer, {compute_node: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    theirs = {compute_node: {"VCPU": 3}, extra: {"VCPU": 1}}
    _change_consumer_behind_the_clients_back(placement_admin, consumer, theirs)
    seen: list[ConsumerAllocations] = []

    def mutate(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
        seen.append(current)
        return {rp: dict(res) for rp, res in current.allocations.items()} | {
            compute_node: {"VCPU": 5}
        }

    real_placement.clear_requests_seen()
    client.update_allocations(consumer, mutate, project_id=PROJECT, user_id=USER)

    assert [(s.generation, s.allocations) for s in seen] == [
        (1, {compute_node: {"VCPU": 2}}),
        (2, theirs),
    ]
    path = f"/allocations/{consumer}"
    assert wire(real_placement) == [("PUT", path, 409), ("GET", path, 200), ("PUT", path, 204)]
    raw = placement_admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 3
    assert held(raw) == {compute_node: {"VCPU": 5}, extra: {"VCPU": 1}}


def test_add_allocations_adds_to_what_another_writer_wrote(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    extra = placement_admin.create_provider(inventory={"VCPU": 4})
    client = make_client(real_placement)
    consumer = new_id()
    client.claim(consumer, {compute_node: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    theirs = {compute_node: {"VCPU": 3}, extra: {"VCPU": 1}}
    _change_consumer_behind_the_clients_back(placement_admin, consumer, theirs)

    state = client.update_allocations(
        consumer, add_allocations({compute_node: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
    )

    expected = {compute_node: {"VCPU": 4}, extra: {"VCPU": 1}}
    assert state.allocations == expected
    assert state.generation == 3
    raw = placement_admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 3
    assert held(raw) == expected
    assert placement_admin.usages(extra)["VCPU"] == 1


def test_claim_replaces_what_another_writer_wrote(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    extra = placement_admin.create_provider(inventory={"VCPU": 4})
    client = make_client(real_placement)
    consumer = new_id()
    client.claim(consumer, {compute_node: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    _change_consumer_behind_the_clients_back(
        placement_admin, consumer, {compute_node: {"VCPU": 3}, extra: {"VCPU": 1}}
    )

    state = client.claim(consumer, {compute_node: {"VCPU": 6}}, project_id=PROJECT, user_id=USER)

    assert state.generation == 3
    raw = placement_admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 3
    assert held(raw) == {compute_node: {"VCPU": 6}}
    assert placement_admin.usages(extra)["VCPU"] == 0


# -- capacity race: distinct consumers, not enough room for all ----------------------------------


def test_concurrent_claims_beyond_capacity_admit_exactly_the_capacity(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    rp = placement_admin.create_provider(inventory={"VCPU": {"total": 5, "max_unit": 1}})
    client = make_client(real_placement, retry=fast_retry())
    consumers = [new_id() for _ in range(THREADS)]

    outcomes = run_together(
        [
            lambda c=c: client.claim(c, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
            for c in consumers
        ]
    )

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


def _add_one_vcpu(client: PlacementClient, consumer: str, rp: str) -> ConsumerAllocations:
    return client.update_allocations(
        consumer, add_allocations({rp: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
    )


def test_concurrent_adds_through_one_shared_client_lose_no_update(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    client = make_client(real_placement, retry=fast_retry())
    consumer = new_id()

    outcomes = run_together(
        [lambda: _add_one_vcpu(client, consumer, compute_node) for _ in range(THREADS)]
    )

    assert [kind for kind, _ in outcomes] == ["ok"] * THREADS, outcomes
    raw = placement_admin.get_allocations(consumer)
    assert held(raw) == {compute_node: {"VCPU": THREADS}}
    assert raw["consumer_generation"] == THREADS
    assert placement_admin.usages(compute_node)["VCPU"] == THREADS
    assert sorted(state.generation for _, state in outcomes) == list(range(1, THREADS + 1))


def test_concurrent_adds_through_separate_clients_lose_no_update(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    clients = [make_client(real_placement, retry=fast_retry()) for _ in range(THREADS)]
    consumer = new_id()

    outcomes = run_together([lambda c=c: _add_one_vcpu(c, consumer, compute_node) for c in clients])

    assert [kind for kind, _ in outcomes] == ["ok"] * THREADS, outcomes
    raw = placement_admin.get_allocations(consumer)
    assert held(raw) == {compute_node: {"VCPU": THREADS}}
    assert raw["consumer_generation"] == THREADS
    assert placement_admin.usages(compute_node)["VCPU"] == THREADS
    assert sorted(state.generation for _, state in outcomes) == list(range(1, THREADS + 1))


def test_concurrent_adds_that_outlast_the_retry_policy_raise_generation_conflict(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    clients = [make_client(real_placement, retry=NO_RETRY) for _ in range(THREADS)]
    consumer = new_id()

    outcomes = run_together([lambda c=c: _add_one_vcpu(c, consumer, compute_node) for c in clients])

    won = [value for kind, value in outcomes if kind == "ok"]
    lost = [value for kind, value in outcomes if kind == "error"]
    assert all(isinstance(exc, GenerationConflict) for exc in lost), lost
    assert all(exc.attempts == 1 and exc.consumer_conflict for exc in lost)
    # Every success is a write Placement kept: nothing was overwritten.
    raw = placement_admin.get_allocations(consumer)
    assert held(raw) == {compute_node: {"VCPU": 1}}
    assert raw["consumer_generation"] == 1
    # All eight assumed a new consumer (null); Placement can accept only the first.
    assert len(won) == 1
    assert len(lost) == THREADS - 1
