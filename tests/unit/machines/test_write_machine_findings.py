"""Two histories the write machine (tests/machines/write_machine.py) found, pinned exactly.

Each is one operation on the fake, with the fault and the other writer exactly where the
machine put them (``FakeBackend.arm`` calls back after each of the client's requests, before
the client sees the answer). Both are violations of the engine's rule, not residual windows.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

import reportclient as rc
from tests.unit.machines.test_write_machine_fake import FakeBackend

OWNER = {"project_id": "project-findings", "user_id": "user-findings"}


def arrange(fault: str, act_after: int, act: Callable[[], None]) -> tuple[FakeBackend, str]:
    backend = FakeBackend()
    rp = backend.fake.create_provider(inventory={"VCPU": 100})
    sent: list[str] = []

    def on_request(label: str) -> None:
        sent.append(label)
        if len(sent) == act_after:
            act()

    backend.arm(fault, on_request)
    return backend, rp


def client(backend: FakeBackend) -> rc.PlacementClient:
    return backend.client(retry=rc.default_retry(sleep=lambda s: None, rand=lambda: 0.5))


def test_slow_add_landing_then_consumer_deleted_is_outcome_unknown_not_consumer_gone() -> None:
    """GET (gen 1, VCPU 1); PUT +1 carrying 1 is held (read timeout); the re-read shows gen 1
    (pending), and the held PUT lands right after it (gen 2, VCPU 2); the recomputed PUT
    carrying 1 gets 409 "expected 2"; another writer deletes the consumer; the next read shows
    it missing. The +1 has landed, so the answer is OutcomeUnknown. The engine instead puts
    the 409's hint (2) on the missing read, judges the landed write NOT_LANDED (2 == 1 + 1,
    not as written), sends a third PUT carrying 2, and raises a bare ConsumerGone: "not
    applied", for an addition that was applied."""
    consumer = str(uuid.uuid4())
    backend, rp = arrange(
        "slow-write", 4, lambda: backend.fake.delete_allocations(consumer) and None
    )
    backend.fake.put_allocations(consumer, {rp: {"VCPU": 1}}, **OWNER)

    with pytest.raises(rc.PlacementError) as caught:
        client(backend).update_allocations(consumer, rc.add_allocations({rp: {"VCPU": 1}}), **OWNER)
    backend.disarm()

    assert isinstance(caught.value, rc.OutcomeUnknown), repr(caught.value)


def test_write_many_release_part_never_empties_a_consumer_it_did_not_read() -> None:
    """write_many {x: claim, y: add, z: {}}: z is missing at the first read; the POST gets a
    503 before the commit; another writer then creates z. The re-read shows z at generation
    1 holding what the other writer wrote (NOT_LANDED for the POST), and the recomputed POST
    empties it: the release part empties allocations it never saw first (a standalone
    release raises ConsumerChanged there, and writes nothing)."""
    x, y, z = (str(uuid.uuid4()) for _ in range(3))
    other: dict[str, dict[str, int]] = {}

    def create_z() -> None:
        backend.fake.put_allocations(z, other, **OWNER)

    backend, rp = arrange("5xx-before-commit", 4, create_z)
    other[rp] = {"VCPU": 3}
    backend.fake.put_allocations(x, {rp: {"VCPU": 1}}, **OWNER)
    backend.fake.put_allocations(y, {rp: {"VCPU": 1}}, **OWNER)

    try:
        client(backend).write_many(
            {x: {rp: {"VCPU": 1}}, y: rc.add_allocations({rp: {"VCPU": 1}}), z: {}}, **OWNER
        )
    except rc.PlacementError:
        pass  # any typed refusal is fine; emptying z is not
    backend.disarm()

    assert backend.fake.allocations(z) == other
