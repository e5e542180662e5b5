"""Unknown outcomes on the fake Placement's fault injection.

Every test ends by reading back what Placement holds: exactly one
application of each mutation the client reported successful, and a typed
error for every other outcome. Nothing sleeps: the policy's sleep records.
"""

from __future__ import annotations

import pytest

import reportclient
from reportclient.fixture import FakePlacement, RequestRecord, make_client
from tests.support.hooks import is_get, once_after
from tests.support.wire import PROJECT, USER, new_uuid


@pytest.fixture
def a(fake: FakePlacement) -> str:
    return fake.create_provider(inventory={"VCPU": 8})


@pytest.fixture
def b(fake: FakePlacement) -> str:
    return fake.create_provider(inventory={"VCPU": 8})


@pytest.fixture
def client(fake: FakePlacement, sleeps: list[float]) -> reportclient.PlacementClient:
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    return make_client(fake, microversion="1.39", retry=policy)


@pytest.fixture
def consumer(fake: FakePlacement, a: str) -> str:
    """A consumer holding {a: VCPU 1} at generation 1, written by someone else."""
    uuid = new_uuid()
    fake.put_allocations(uuid, {a: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    fake.reset_requests()
    return uuid


def log(fake: FakePlacement) -> list[tuple[str, int, str | None]]:
    return [(r.method, r.status, r.fault) for r in fake.requests]


def is_lost(record: RequestRecord) -> bool:
    return record.fault in ("lost", "lost-timeout", "delayed")


def add_one(client, consumer, rp):
    return client.update_allocations(
        consumer, reportclient.add_allocations({rp: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
    )


# -- a mutation that is not idempotent is never risked twice --------------------------


@pytest.mark.parametrize("how", ["reset", "timeout"])
def test_lost_add_then_another_writer_before_the_reread_adds_once(
    fake, client, consumer, a, b, how
):
    fake.lose_next_response(consumer, how=how)
    once_after(
        fake,
        is_lost,
        lambda f: f.put_allocations(
            consumer, {**f.allocations(consumer), b: {"VCPU": 1}}, project_id=PROJECT, user_id=USER
        ),
    )

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        add_one(client, consumer, a)

    assert [(m, s) for m, s, _ in log(fake)] == [("GET", 200), ("PUT", 204), ("GET", 200)]
    assert err.value.state.generation == 3
    assert fake.allocations(consumer) == {a: {"VCPU": 2}, b: {"VCPU": 1}}


def test_lost_add_whose_reread_fails_is_not_added_twice(fake, client, consumer, a, sleeps):
    fake.lose_next_response(consumer)
    once_after(fake, is_lost, lambda f: f.fail_next(1, 503))

    with pytest.raises(reportclient.OutcomeUnknown):
        add_one(client, consumer, a)

    assert log(fake) == [
        ("GET", 200, None),
        ("PUT", 204, "lost"),
        ("GET", 503, "fail"),
        ("GET", 200, None),
    ]
    assert sleeps == [1.5]
    assert fake.allocations(consumer) == {a: {"VCPU": 2}}


def test_slow_add_committing_after_the_reread_is_not_added_twice(fake, client, consumer, a):
    slow = fake.delay_next_write(consumer).apply_after(is_get)

    with pytest.raises(reportclient.OutcomeUnknown):
        add_one(client, consumer, a)

    # the re-read still showed generation 1, so the retry carried 1 and was refused
    assert log(fake) == [
        ("GET", 200, None),
        ("PUT", 0, "delayed"),
        ("GET", 200, None),
        ("PUT", 204, "delayed-applied"),
        ("PUT", 409, None),
        ("GET", 200, None),
    ]
    assert slow.status == 204
    assert fake.allocations(consumer) == {a: {"VCPU": 2}}


@pytest.mark.parametrize("status", [500, 507])
def test_server_error_after_an_add_committed_is_outcome_unknown(fake, client, consumer, a, status):
    once_after(fake, is_get, lambda f: f.fail_next(1, status, applied=True))

    with pytest.raises(reportclient.OutcomeUnknown):
        add_one(client, consumer, a)

    assert log(fake) == [
        ("GET", 200, None),
        ("PUT", status, "fail-after-commit"),
        ("GET", 200, None),
    ]
    assert fake.allocations(consumer) == {a: {"VCPU": 2}}


def test_proxy_error_before_an_add_reached_placement_is_retried_and_added_once(
    fake, client, consumer, a
):
    once_after(fake, is_get, lambda f: f.fail_next(1, 503))

    state = add_one(client, consumer, a)

    assert log(fake) == [
        ("GET", 200, None),
        ("PUT", 503, "fail"),
        ("GET", 200, None),
        ("PUT", 204, None),
    ]
    assert fake.requests[3].json["consumer_generation"] == 1
    assert state.generation == fake.consumer_generation(consumer) == 2
    assert fake.allocations(consumer) == {a: {"VCPU": 2}}


def test_slow_add_that_has_not_landed_is_excluded_by_the_retry(fake, client, consumer, a):
    slow = fake.delay_next_write(consumer)

    add_one(client, consumer, a)
    late = slow.apply()

    # both carried generation 1: only one of them could ever land
    assert late == 409
    assert fake.requests[3].json["consumer_generation"] == 1
    assert fake.allocations(consumer) == {a: {"VCPU": 2}}
    assert fake.consumer_generation(consumer) == 2


def test_slow_add_overtaken_by_another_write_is_recomputed_and_added_once(
    fake, client, consumer, a, b
):
    slow = fake.delay_next_write(consumer)
    once_after(
        fake,
        is_lost,
        lambda f: f.put_allocations(
            consumer, {a: {"VCPU": 1}, b: {"VCPU": 1}}, project_id=PROJECT, user_id=USER
        ),
    )

    add_one(client, consumer, a)
    late = slow.apply()

    assert late == 409
    assert fake.requests[3].json["consumer_generation"] == 2
    assert fake.allocations(consumer) == {a: {"VCPU": 2}, b: {"VCPU": 1}}
    assert fake.consumer_generation(consumer) == 3


# -- idempotent operations are settled by content -----------------------------------


def test_lost_remove_providers_that_landed_is_success_without_a_second_write(
    fake, client, consumer, a, b
):
    fake.put_allocations(
        consumer, {a: {"VCPU": 1}, b: {"VCPU": 1}}, project_id=PROJECT, user_id=USER
    )
    fake.reset_requests()
    fake.lose_next_response(consumer)

    state = client.update_allocations(
        consumer, reportclient.remove_providers([a]), project_id=PROJECT, user_id=USER
    )

    assert log(fake) == [("GET", 200, None), ("PUT", 204, "lost"), ("GET", 200, None)]
    assert state.allocations == {b: {"VCPU": 1}}
    assert fake.allocations(consumer) == {b: {"VCPU": 1}}


@pytest.mark.parametrize("declared", [True, False], ids=["declared-idempotent", "undeclared"])
def test_lost_custom_mutate_is_settled_by_content_only_if_declared_idempotent(
    fake, client, consumer, a, b, declared
):
    def move_to_b(current):
        return {b: {"VCPU": 1}}

    mutate = reportclient.idempotent(move_to_b) if declared else move_to_b
    fake.lose_next_response(consumer)

    if declared:
        client.update_allocations(consumer, mutate, project_id=PROJECT, user_id=USER)
    else:
        with pytest.raises(reportclient.OutcomeUnknown):
            client.update_allocations(consumer, mutate, project_id=PROJECT, user_id=USER)

    assert log(fake) == [("GET", 200, None), ("PUT", 204, "lost"), ("GET", 200, None)]
    assert fake.allocations(consumer) == {b: {"VCPU": 1}}


# -- claims ----------------------------------------------------------------------------


def test_lost_claim_whose_reread_fails_is_success_not_capacity_exceeded(fake, client, a):
    consumer = new_uuid()
    fake.lose_next_response(consumer)
    once_after(fake, is_lost, lambda f: f.fail_next(1, 503))

    state = client.claim(consumer, {a: {"VCPU": 8}}, project_id=PROJECT, user_id=USER)

    assert log(fake) == [("PUT", 204, "lost"), ("GET", 503, "fail"), ("GET", 200, None)]
    assert state.generation == 1
    assert fake.allocations(consumer) == {a: {"VCPU": 8}}
    assert fake.usages(a) == {"VCPU": 8}


def test_slow_claim_committing_after_the_reread_is_outcome_unknown_held_once(fake, client, a):
    """A new consumer still missing after a lost answer proves nothing: no second write."""
    consumer = new_uuid()
    slow = fake.delay_next_write(consumer).apply_after(is_get)

    with pytest.raises(reportclient.OutcomeUnknown):
        client.claim(consumer, {a: {"VCPU": 8}}, project_id=PROJECT, user_id=USER)

    assert log(fake) == [
        ("PUT", 0, "delayed"),
        ("GET", 200, None),
        ("PUT", 204, "delayed-applied"),
    ]
    assert slow.status == 204
    assert fake.allocations(consumer) == {a: {"VCPU": 8}}
    assert fake.usages(a) == {"VCPU": 8}


@pytest.mark.parametrize("status", [500, 507])
def test_server_error_after_a_claim_committed_is_success(fake, client, a, status):
    consumer = new_uuid()
    fake.fail_next(1, status, applied=True)

    state = client.claim(consumer, {a: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)

    assert log(fake) == [("PUT", status, "fail-after-commit"), ("GET", 200, None)]
    assert state.generation == 1
    assert fake.allocations(consumer) == {a: {"VCPU": 2}}
