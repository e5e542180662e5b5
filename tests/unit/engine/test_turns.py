"""One client's threads writing one subject take turns instead of colliding.

Without turns, a thread that starts writing a consumer while another
thread of the same client is between its read and its write reads the same
generation; one of the two then loses a conflict and backs off (up to a
second under the default policy) for a race its own client could have
ordered. With turns the second waits for the first write and reads it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import reportclient
from reportclient._engine.turns import Turns
from reportclient.fixture import FakeClock, FakePlacement, RequestRecord, make_client
from tests.support.waiting import until
from tests.support.wire import new_uuid

#: Bound on every wait here: a wrong implementation fails, it does not hang.
BOUND = 10.0


def test_a_second_writer_waits_until_the_first_one_leaves() -> None:
    turns = Turns()
    inside, release, second_in = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with turns.turn("consumer a"):
            inside.set()
            release.wait(BOUND)

    def second() -> None:
        with turns.turn("consumer a"):
            second_in.set()

    a = threading.Thread(target=first)
    a.start()
    assert inside.wait(BOUND)
    b = threading.Thread(target=second)
    b.start()
    until(lambda: turns.waiting("consumer a") == 2)
    assert not second_in.is_set()  # the first still holds the turn
    release.set()
    assert second_in.wait(BOUND)
    a.join(BOUND)
    b.join(BOUND)
    assert len(turns) == 0  # nothing kept once nobody writes


def test_other_subjects_do_not_wait() -> None:
    turns = Turns()
    with turns.turn("consumer a"):
        done = threading.Event()
        other = threading.Thread(target=lambda: [turns.turn("consumer b").__enter__(), done.set()])
        other.start()
        assert done.wait(BOUND)
        other.join(BOUND)


def test_a_thread_holding_a_turn_takes_no_other() -> None:
    """So no thread waits while it holds one: turns cannot deadlock."""
    turns = Turns()
    with turns.turn("consumer a"):
        with turns.turn("consumer a"):  # a callback writing the same subject
            with turns.turn("consumer b"):
                assert turns.waiting("consumer b") == 0
    assert len(turns) == 0


def second_writer_after_first_read(
    fake: FakePlacement,
    client: reportclient.PlacementClient,
    subject: str,
    first: Callable[[], object],
    second: Callable[[], object],
) -> list[BaseException]:
    """Run ``first``; once it has read, ``second`` starts in another thread of the same client.

    ``first`` is held (inside the fake's answer to its read) until ``second`` waits for
    ``subject``'s turn, so both are writing at once. Returns what ``second`` raised.
    """
    turns = client._core.contention.turns
    errors: list[BaseException] = []

    def run_second() -> None:
        try:
            second()
        except BaseException as exc:  # surfaced to the test
            errors.append(exc)

    thread = threading.Thread(target=run_second)

    def hook(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.method == "GET" and thread.ident is None:
            thread.start()
            until(lambda: turns.waiting(subject) == 2)

    remove = fake.between_requests(hook)
    try:
        first()
    finally:
        remove()
    thread.join(BOUND)
    return errors


def test_two_threads_of_one_client_do_not_collide_on_a_consumer(fake: FakePlacement) -> None:
    rp = fake.create_provider(inventory={"VCPU": 100})
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 1}}, project_id="p", user_id="u")
    client = make_client(fake, microversion="1.39", clock=FakeClock())
    add = reportclient.add_allocations({rp: {"VCPU": 1}})

    def update() -> object:
        return client.update_allocations(consumer, add, project_id="p", user_id="u")

    errors = second_writer_after_first_read(fake, client, f"consumer {consumer}", update, update)

    assert not errors
    assert [(r.method, r.status) for r in fake.requests if consumer in r.path] == [
        ("GET", 200),
        ("PUT", 204),
        ("GET", 200),  # the second reads what the first wrote
        ("PUT", 204),
    ]
    assert fake.allocations(consumer) == {rp: {"VCPU": 3}}


def test_a_callback_writing_its_own_consumer_does_not_deadlock(fake: FakePlacement) -> None:
    rp = fake.create_provider(inventory={"VCPU": 100})
    consumer = new_uuid()
    policy = reportclient.default_retry(sleep=lambda _: None)
    client = make_client(fake, microversion="1.39", clock=FakeClock(), retry=policy)
    client.claim(consumer, {rp: {"VCPU": 1}}, project_id="p", user_id="u")
    add = reportclient.add_allocations({rp: {"VCPU": 1}})
    nested = []

    def mutate(current: Any) -> Any:
        if not nested:
            nested.append(client.update_allocations(consumer, add, project_id="p", user_id="u"))
        return add(current)

    worker = threading.Thread(
        target=client.update_allocations,
        args=(consumer, mutate),
        kwargs={"project_id": "p", "user_id": "u"},
    )
    worker.start()
    worker.join(BOUND)

    assert not worker.is_alive()
    # the nested write landed; the outer one conflicted on it and, re-read, added its own
    assert fake.allocations(consumer) == {rp: {"VCPU": 3}}


def test_two_threads_of_one_client_take_turns_on_a_provider(fake: FakePlacement) -> None:
    """Different fields, one provider generation: they would collide, so they take turns."""
    rp = fake.create_provider(inventory={"VCPU": 8})
    client = make_client(fake, microversion="1.39", clock=FakeClock())

    errors = second_writer_after_first_read(
        fake,
        client,
        f"provider {rp}",
        lambda: client.providers.set_inventory(rp, "MEMORY_MB", 1024),
        lambda: client.providers.add_traits(rp, ["HW_CPU_X86_AVX2"]),
    )

    assert not errors
    assert [r.status for r in fake.requests if r.method == "PUT"] == [200, 200]
    assert set(fake.inventory(rp)) == {"VCPU", "MEMORY_MB"}
    assert fake.traits(rp) == {"HW_CPU_X86_AVX2"}
