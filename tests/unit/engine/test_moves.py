"""Moves and multi-consumer writes: one POST, both generations, the write-semantics invariants."""

from __future__ import annotations

import pytest
import requests

import reportclient
from reportclient.fixture import FakePlacement, make_client
from tests.support.answers import MISSING, NO_CONTENT, allocations_body, consumer_conflict
from tests.support.wire import PROJECT, URL, USER, calls, new_uuid, sent

VCPU_2 = {"VCPU": 2}


@pytest.fixture
def rps(fake: FakePlacement) -> tuple[str, str]:
    return fake.create_provider(inventory={"VCPU": 8}), fake.create_provider(inventory={"VCPU": 8})


@pytest.fixture
def on_fake(fake: FakePlacement) -> reportclient.PlacementClient:
    return make_client(
        fake, microversion="1.39", retry=reportclient.default_retry(sleep=lambda s: None)
    )


def _instance(fake: FakePlacement, rp: str, amounts: dict[str, int] = VCPU_2) -> str:
    vm = new_uuid()
    fake.put_allocations(vm, {rp: amounts}, project_id=PROJECT, user_id=USER)
    return vm


# -- requests-mock: exact requests -------------------------------------------------


def test_move_posts_source_empty_and_target_new_with_both_generations(wire, client, rp):
    source, target = new_uuid(), new_uuid()
    wire.get(f"{URL}/allocations/{source}", json=allocations_body({rp: VCPU_2}, 3))
    wire.get(f"{URL}/allocations/{target}", **MISSING)
    wire.post(f"{URL}/allocations", **NO_CONTENT)

    move = client.move_allocations(source, target, target_consumer_type="MIGRATION")

    assert [m for m, _ in calls(wire)] == ["GET", "GET", "POST"]
    assert sent(wire, 2) == {
        source: {
            "allocations": {},
            "consumer_generation": 3,
            "project_id": PROJECT,
            "user_id": USER,
            "consumer_type": "INSTANCE",
        },
        target: {
            "allocations": {rp: {"resources": VCPU_2}},
            "consumer_generation": None,
            "project_id": PROJECT,
            "user_id": USER,
            "consumer_type": "MIGRATION",
        },
    }
    assert move.moved == {rp: VCPU_2}
    assert not move.source.exists
    assert move.target.generation == 1


def test_move_of_a_source_holding_nothing_raises_nothing_to_move_and_writes_nothing(wire, client):
    source, target = new_uuid(), new_uuid()
    wire.get(f"{URL}/allocations/{source}", **MISSING)
    wire.get(f"{URL}/allocations/{target}", **MISSING)

    with pytest.raises(reportclient.NothingToMove) as caught:
        client.move_allocations(source, target)

    assert [m for m, _ in calls(wire)] == ["GET", "GET"]
    assert caught.value.state.exists is False
    assert caught.value.consumer_uuid == source


def test_move_onto_itself_is_invalid_input_before_any_request(wire, client):
    consumer = new_uuid()
    with pytest.raises(reportclient.InvalidInput):
        client.move_allocations(consumer, consumer)
    assert calls(wire) == []


def test_multi_consumer_write_sends_mappings_of_neither_and_types_per_consumer(wire, client, rp):
    a, b = new_uuid(), new_uuid()
    wire.get(f"{URL}/allocations/{a}", **MISSING)
    wire.get(f"{URL}/allocations/{b}", json=allocations_body({rp: {"VCPU": 1}}, 4))
    wire.post(f"{URL}/allocations", **NO_CONTENT)

    states = client.write_many(
        {a: {rp: VCPU_2}, b: reportclient.add_allocations({rp: {"VCPU": 1}})},
        project_id=PROJECT,
        user_id=USER,
    )

    body = sent(wire, 2)
    assert body[a]["consumer_generation"] is None
    assert body[b]["consumer_generation"] == 4
    assert body[b]["allocations"] == {rp: {"resources": {"VCPU": 2}}}
    assert states[a].generation == 1 and states[b].generation == 5


# -- on the fake: races, lost answers, invariants ------------------------------------


def test_move_conflict_rereads_both_consumers_and_moves_what_the_source_holds_then(
    fake, rps, on_fake
):
    rp_a, _ = rps
    vm, migration = _instance(fake, rp_a), new_uuid()
    fake.conflict_next_writes(vm, 1)
    # Between the failed POST and the retry another writer grows the instance.
    fake.between_requests(
        lambda f, r: (
            r.fault == "conflict"
            and f.put_allocations(vm, {rp_a: {"VCPU": 3}}, project_id=PROJECT, user_id=USER)
        )
    )
    fake.reset_requests()

    move = on_fake.move_allocations(vm, migration)

    assert [(r.method, r.status) for r in fake.requests] == [
        ("GET", 200),
        ("GET", 200),
        ("POST", 409),
        ("GET", 200),
        ("GET", 200),
        ("POST", 204),
    ]
    assert move.moved == {rp_a: {"VCPU": 3}}
    assert fake.allocations(migration) == {rp_a: {"VCPU": 3}}
    assert fake.allocations(vm) == {}


def test_move_refuses_a_target_holding_allocations_the_caller_did_not_expect(fake, rps, on_fake):
    rp_a, rp_b = rps
    vm = _instance(fake, rp_a)
    target = _instance(fake, rp_b, {"VCPU": 1})
    fake.reset_requests()

    with pytest.raises(reportclient.ConsumerChanged) as caught:
        on_fake.move_allocations(vm, target)

    assert [r.method for r in fake.requests] == ["GET", "GET"]
    assert caught.value.state.allocations == {rp_b: {"VCPU": 1}}
    assert fake.allocations(vm) == {rp_a: VCPU_2}


def test_move_adds_to_a_target_holding_what_the_caller_expected(fake, rps, on_fake):
    rp_a, rp_b = rps
    vm = _instance(fake, rp_a)
    target = _instance(fake, rp_b, {"VCPU": 1})

    on_fake.move_allocations(vm, target, expect_target={rp_b: {"VCPU": 1}})

    assert fake.allocations(target) == {rp_a: VCPU_2, rp_b: {"VCPU": 1}}
    assert fake.consumer(vm) is None


def test_move_with_source_allocations_claims_the_destination_in_the_same_post(fake, rps, on_fake):
    rp_a, rp_b = rps
    vm, migration = _instance(fake, rp_a), new_uuid()
    fake.reset_requests()

    move = on_fake.move_allocations(vm, migration, source_allocations={rp_b: VCPU_2})

    assert [r.method for r in fake.requests] == ["GET", "GET", "POST"]
    assert fake.allocations(vm) == {rp_b: VCPU_2}
    assert fake.allocations(migration) == {rp_a: VCPU_2}
    assert move.source.generation == 2


def test_lost_answer_to_a_move_that_landed_is_success_without_a_second_post(fake, rps, on_fake):
    rp_a, _ = rps
    vm, migration = _instance(fake, rp_a), new_uuid()
    fake.lose_next_response(vm)
    fake.reset_requests()

    move = on_fake.move_allocations(vm, migration)

    assert [(r.method, r.fault) for r in fake.requests] == [
        ("GET", None),
        ("GET", None),
        ("POST", "lost"),
        ("GET", None),
        ("GET", None),
    ]
    assert move.target.allocations == {rp_a: VCPU_2}
    assert fake.allocations(migration) == {rp_a: VCPU_2}


def test_lost_answer_then_target_changed_is_outcome_unknown_not_a_second_move(fake, rps, on_fake):
    rp_a, rp_b = rps
    vm, migration = _instance(fake, rp_a), new_uuid()
    fake.lose_next_response(vm)
    # Right after the lost POST another writer changes the (new) target.
    fake.between_requests(
        lambda f, r: (
            r.fault == "lost"
            and f.put_allocations(
                migration,
                {rp_b: {"VCPU": 1}},
                project_id=PROJECT,
                user_id=USER,
                consumer_generation=1,
            )
        )
    )

    with pytest.raises(reportclient.OutcomeUnknown) as caught:
        on_fake.move_allocations(vm, migration)

    assert caught.value.method == "POST"
    assert {w.consumer_uuid for w in caught.value.writes} == {vm, migration}
    assert [r.method for r in fake.requests].count("POST") == 1


def test_unreachable_read_before_a_move_is_retried_and_the_move_posted_once(fake, rps, on_fake):
    rp_a, _ = rps
    vm, migration = _instance(fake, rp_a), new_uuid()
    fake.fail_next(1, status=503, applied=False)
    fake.reset_requests()

    # The 503 hits the first GET; the move then reads, posts and lands once.
    on_fake.move_allocations(vm, migration)

    assert [r.method for r in fake.requests].count("POST") == 1
    assert fake.allocations(migration) == {rp_a: VCPU_2}


def test_gateway_error_before_commit_on_the_post_is_written_once_after_reading(fake, rps, on_fake):
    rp_a, _ = rps
    vm, migration = _instance(fake, rp_a), new_uuid()

    armed = []

    def fail_the_post(f, r):
        # Once: after the first read of the target, the next request (the POST) fails.
        if not armed and r.method == "GET" and r.path.endswith(migration):
            armed.append(True)
            f.fail_next(1, status=502, applied=False)

    remove = fake.between_requests(fail_the_post)
    fake.reset_requests()
    on_fake_result = None
    try:
        on_fake_result = on_fake.move_allocations(vm, migration)
    finally:
        remove()

    statuses = [(r.method, r.status) for r in fake.requests if r.method == "POST"]
    assert statuses[0] == ("POST", 502)
    assert statuses[-1] == ("POST", 204)
    assert on_fake_result is not None and on_fake_result.moved == {rp_a: VCPU_2}
    assert fake.allocations(migration) == {rp_a: VCPU_2}


def test_write_many_is_all_or_nothing_on_capacity(fake, rps, on_fake):
    rp_a, rp_b = rps
    a, b = new_uuid(), new_uuid()

    with pytest.raises(reportclient.CapacityExceeded):
        on_fake.write_many(
            {a: {rp_a: {"VCPU": 1}}, b: {rp_b: {"VCPU": 9}}}, project_id=PROJECT, user_id=USER
        )

    assert fake.consumer(a) is None and fake.consumer(b) is None


def test_write_many_update_of_a_missing_consumer_is_consumer_gone(fake, rps, on_fake):
    rp_a, _ = rps
    with pytest.raises(reportclient.ConsumerGone):
        on_fake.write_many(
            {new_uuid(): reportclient.add_allocations({rp_a: {"VCPU": 1}})},
            project_id=PROJECT,
            user_id=USER,
        )
    assert [r.method for r in fake.requests] == ["GET"]


def test_write_many_empty_allocations_release_and_skip_a_missing_consumer(fake, rps, on_fake):
    rp_a, _ = rps
    held, never = _instance(fake, rp_a), new_uuid()
    fake.reset_requests()

    states = on_fake.write_many({held: {}, never: {}}, project_id=PROJECT, user_id=USER)

    post = [r for r in fake.requests if r.method == "POST"]
    assert len(post) == 1 and set(post[0].json) == {held}
    assert not states[held].exists and not states[never].exists


def test_write_many_release_refuses_allocations_written_after_its_read(fake, rps, on_fake):
    """An empty value is a release: it empties only what it saw, never another's later write."""
    rp_a, rp_b = rps
    held, fresh = _instance(fake, rp_a), new_uuid()
    changed = {rp_a: VCPU_2, rp_b: {"VCPU": 1}}
    reads = []

    def other_writer(fake_, record):
        if record.method == "GET" and record.path.endswith(held):
            reads.append(record)
            if len(reads) == 1:  # right after the release read it
                fake_.put_allocations(held, changed, project_id=PROJECT, user_id=USER)

    fake.between_requests(other_writer)

    with pytest.raises(reportclient.ConsumerChanged) as err:
        on_fake.write_many({held: {}, fresh: {rp_b: {"VCPU": 1}}}, project_id=PROJECT, user_id=USER)

    assert err.value.state.allocations == changed
    assert fake.allocations(held) == changed
    assert fake.allocations(fresh) == {}


def test_write_many_refuses_a_claim_over_allocations_this_client_never_saw(fake, rps, on_fake):
    rp_a, rp_b = rps
    other = _instance(fake, rp_a)

    with pytest.raises(reportclient.ConsumerChanged):
        on_fake.write_many({other: {rp_b: {"VCPU": 1}}}, project_id=PROJECT, user_id=USER)

    assert fake.allocations(other) == {rp_a: VCPU_2}


def test_migration_swap_expressed_on_write_many(fake, rps, on_fake):
    """The doubled-up claim, flattened: migration takes the source, instance the destination."""
    rp_a, rp_b = rps
    vm, migration = _instance(fake, rp_a), new_uuid()
    held = on_fake.get_allocations(vm).allocations

    on_fake.write_many({migration: held, vm: {rp_b: VCPU_2}}, project_id=PROJECT, user_id=USER)

    assert fake.allocations(migration) == {rp_a: VCPU_2}
    assert fake.allocations(vm) == {rp_b: VCPU_2}


def test_lost_answer_to_a_non_idempotent_write_many_that_landed_is_outcome_unknown(
    fake, rps, on_fake
):
    rp_a, _ = rps
    vm = _instance(fake, rp_a)
    fake.lose_next_response(vm, how="timeout")

    with pytest.raises(reportclient.OutcomeUnknown):
        on_fake.write_many(
            {vm: reportclient.add_allocations({rp_a: {"VCPU": 1}})},
            project_id=PROJECT,
            user_id=USER,
        )

    assert fake.allocations(vm) == {rp_a: {"VCPU": 3}}  # added once, never twice


def test_reset_connection_on_the_post_reads_both_before_anything_else(wire, client, rp):
    source, target = new_uuid(), new_uuid()
    wire.get(
        f"{URL}/allocations/{source}",
        [{"json": allocations_body({rp: VCPU_2}, 3)}, MISSING],
    )
    wire.get(
        f"{URL}/allocations/{target}",
        [MISSING, {"json": allocations_body({rp: VCPU_2}, 1)}],
    )
    wire.post(f"{URL}/allocations", exc=requests.exceptions.ConnectionError("reset"))

    move = client.move_allocations(source, target)

    assert [m for m, _ in calls(wire)] == ["GET", "GET", "POST", "GET", "GET"]
    assert move.target.generation == 1


def test_a_source_conflict_does_not_change_the_generation_sent_for_a_new_target(wire, client, rp):
    source, target = new_uuid(), new_uuid()
    wire.get(
        f"{URL}/allocations/{source}",
        [{"json": allocations_body({rp: VCPU_2}, 1)}, {"json": allocations_body({rp: VCPU_2}, 2)}],
    )
    wire.get(f"{URL}/allocations/{target}", **MISSING)
    wire.post(f"{URL}/allocations", [consumer_conflict("2", "1"), NO_CONTENT])

    client.move_allocations(source, target)

    assert sent(wire, 5)[source]["consumer_generation"] == 2
    assert sent(wire, 5)[target]["consumer_generation"] is None


def test_a_new_target_placement_keeps_at_generation_0_is_written_with_that_generation(
    wire, client, rp
):
    source, target = new_uuid(), new_uuid()
    wire.get(f"{URL}/allocations/{source}", json=allocations_body({rp: VCPU_2}, 1))
    wire.get(f"{URL}/allocations/{target}", **MISSING)
    wire.post(f"{URL}/allocations", [consumer_conflict("0", "None"), NO_CONTENT])

    client.move_allocations(source, target)

    assert sent(wire, 5)[target]["consumer_generation"] == 0
    assert sent(wire, 5)[source]["consumer_generation"] == 1
