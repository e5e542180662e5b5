"""The client against the fake Placement's injected faults: races in a few lines."""

from __future__ import annotations

import threading

import pytest

import reportclient
from reportclient.fixture import FakeClock, FakePlacement, make_client
from tests.support.clients import client_on
from tests.support.wire import CACHE_TTL, new_uuid


@pytest.fixture
def rp(fake: FakePlacement) -> str:
    return fake.create_provider(inventory={"VCPU": {"total": 64, "max_unit": 64}})


@pytest.fixture
def client(fake: FakePlacement, sleeps: list[float]) -> reportclient.PlacementClient:
    # A clock that stands still: contention windows start at their floor.
    return client_on(fake, sleeps, rand=1.0, clock=FakeClock())


@pytest.fixture
def cached_client(
    fake: FakePlacement, sleeps: list[float], clock: FakeClock
) -> reportclient.PlacementClient:
    return client_on(fake, sleeps, rand=1.0, cache_ttl=CACHE_TTL, clock=clock)


def claim(client, consumer, rp, vcpu=1):
    return client.claim(consumer, {rp: {"VCPU": vcpu}}, project_id="p", user_id="u")


def test_server_side_conflicts_are_retried_until_the_write_lands(fake, client, rp, sleeps):
    consumer = new_uuid()
    fake.conflict_next_writes(consumer, 3)

    state = claim(client, consumer, rp)

    assert [(r.method, r.status) for r in fake.requests] == [
        ("PUT", 409),
        ("GET", 200),
        ("PUT", 409),
        ("GET", 200),
        ("PUT", 409),
        ("GET", 200),
        ("PUT", 204),
    ]
    # Placement's in-server race (its provider-generation bump lost to other
    # allocations); each re-read shows the consumer untouched: no contention on
    # it, so each retry goes at once.
    assert sleeps == [0.0, 0.0, 0.0]
    assert state.generation == fake.consumer_generation(consumer) == 1


def test_an_in_server_race_with_the_consumer_touched_is_contention(fake, client, rp, sleeps):
    consumer = new_uuid()
    claim(client, consumer, rp)
    fake.conflict_next_writes(consumer, 1)
    bumped: list[bool] = []

    def another_writer(_fake, record):  # the consumer changes right after the 409
        if record.status == 409 and not bumped:
            bumped.append(True)
            fake.put_allocations(consumer, {rp: {"VCPU": 2}}, project_id="p", user_id="u")

    fake.between_requests(another_writer)
    fake.reset_requests()

    client.update_allocations(
        consumer,
        reportclient.add_allocations({rp: {"VCPU": 1}}),
        project_id="p",
        user_id="u",
    )

    assert fake.allocations(consumer) == {rp: {"VCPU": 3}}
    # The re-read shows the consumer moved: writers contend on it, the engine's
    # first window (1 s), rand pinned at 1.0.
    assert sleeps == [1.0]


def test_lost_answer_is_checked_and_not_written_twice(fake, client, rp):
    consumer = new_uuid()
    claim(client, consumer, rp)
    fake.lose_next_response(consumer)

    state = claim(client, consumer, rp, vcpu=2)

    assert [(r.method, r.fault) for r in fake.requests] == [
        ("PUT", None),
        ("GET", None),
        ("PUT", "lost"),
        ("GET", None),
    ]
    assert fake.consumer_generation(consumer) == 2
    assert state.generation == 2
    assert fake.allocations(consumer) == {rp: {"VCPU": 2}}


def test_proxy_error_on_a_new_consumer_still_missing_is_outcome_unknown(fake, client, rp):
    """A create may have landed and been deleted since: "missing" proves nothing, no rewrite."""
    consumer = new_uuid()
    fake.fail_next(1, status=502)

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        claim(client, consumer, rp)

    assert [(r.method, r.status) for r in fake.requests] == [("PUT", 502), ("GET", 200)]
    assert err.value.sent.consumer_generation is None
    assert not err.value.state.exists
    assert fake.allocations(consumer) == {}


def test_proxy_error_on_an_existing_consumer_still_as_read_is_retried(fake, client, rp):
    """At the generation carried, holding what the write was computed from: not landed."""
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 1}}, project_id="p", user_id="u")
    armed = threading.Event()

    def fail_the_put(fake_, record):
        if record.method == "GET" and not armed.is_set():
            armed.set()
            fake_.fail_next(1, status=502)

    fake.between_requests(fail_the_put)

    state = client.update_allocations(
        consumer, reportclient.add_allocations({rp: {"VCPU": 1}}), project_id="p", user_id="u"
    )

    assert [(r.method, r.status) for r in fake.requests] == [
        ("GET", 200),
        ("PUT", 502),
        ("GET", 200),
        ("PUT", 204),
    ]
    assert state.generation == 2
    assert fake.allocations(consumer) == {rp: {"VCPU": 2}}


def _other_writer_after_first_get(consumer, rp, other_rp):
    """A between_requests hook: another writer adds other_rp right after one GET."""
    acted = threading.Event()

    def other_writer(fake_, record):
        if record.method == "GET" and not acted.is_set():
            acted.set()
            fake_.put_allocations(
                consumer, {rp: {"VCPU": 1}, other_rp: {"VCPU": 2}}, project_id="p", user_id="u"
            )

    return other_writer


def _recording_add_one(rp, seen):
    def mutate(current):
        seen.append({k: dict(v) for k, v in current.allocations.items()})
        return reportclient.add_allocations({rp: {"VCPU": 1}})(current)

    return mutate


def test_another_writer_between_requests_is_seen_by_mutate(fake, cached_client, rp, sleeps):
    consumer = new_uuid()
    other_rp = fake.create_provider(inventory={"VCPU": 8})
    claim(cached_client, consumer, rp)
    seen: list[dict] = []
    fake.between_requests(_other_writer_after_first_get(consumer, rp, other_rp))
    cached_client.get_allocations(consumer)  # the other writer acts right after this read
    fake.reset_requests()

    state = cached_client.update_allocations(
        consumer, _recording_add_one(rp, seen), project_id="p", user_id="u"
    )

    assert seen == [{rp: {"VCPU": 1}}, {rp: {"VCPU": 1}, other_rp: {"VCPU": 2}}]
    assert [(r.method, r.status) for r in fake.requests] == [
        ("PUT", 409),
        ("GET", 200),
        ("PUT", 204),
    ]
    assert sleeps == [0.0]  # a stale cache: re-read at once
    assert fake.allocations(consumer) == {rp: {"VCPU": 2}, other_rp: {"VCPU": 2}}
    assert state.generation == fake.consumer_generation(consumer) == 3


def test_another_writer_between_read_and_write_is_seen_by_mutate_by_default(
    fake, client, rp, sleeps
):
    consumer = new_uuid()
    other_rp = fake.create_provider(inventory={"VCPU": 8})
    claim(client, consumer, rp)
    seen: list[dict] = []
    fake.reset_requests()
    fake.between_requests(_other_writer_after_first_get(consumer, rp, other_rp))

    state = client.update_allocations(
        consumer, _recording_add_one(rp, seen), project_id="p", user_id="u"
    )

    assert seen == [{rp: {"VCPU": 1}}, {rp: {"VCPU": 1}, other_rp: {"VCPU": 2}}]
    assert [(r.method, r.status) for r in fake.requests] == [
        ("GET", 200),
        ("PUT", 409),
        ("GET", 200),
        ("PUT", 204),
    ]
    # A write from a fresh read lost to one that landed: two writers contend,
    # the engine's first window is 2 s, rand pinned at 1.0.
    assert sleeps == [2.0]
    assert fake.allocations(consumer) == {rp: {"VCPU": 2}, other_rp: {"VCPU": 2}}
    assert state.generation == fake.consumer_generation(consumer) == 3


def test_threads_adding_to_one_consumer_lose_no_update(fake, rp):
    consumer = new_uuid()
    policy = reportclient.default_retry(attempts=100, sleep=lambda _s: None)
    client = make_client(fake, microversion="1.39", retry=policy)
    claim(client, consumer, rp)  # updates never create the consumer
    start = threading.Barrier(8)
    failures: list[BaseException] = []

    def add_one() -> None:
        start.wait(timeout=10)
        try:
            for _ in range(5):
                client.update_allocations(
                    consumer,
                    reportclient.add_allocations({rp: {"VCPU": 1}}),
                    project_id="p",
                    user_id="u",
                )
        except BaseException as exc:  # collected, then asserted below
            failures.append(exc)

    threads = [threading.Thread(target=add_one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    assert failures == []
    assert fake.allocations(consumer) == {rp: {"VCPU": 41}}
    assert fake.consumer_generation(consumer) == 41
