"""The fate rule as tables: every verdict, for every kind of write, with no I/O.

Like h11's state-machine tests: the rule is a pure function of what a write
carried and what a read afterwards showed, so each row is one history and
its verdict. The writes' own evidence builders (consumer, provider field)
are checked on the same rows, and the combination of subjects for batches
and reshapes after them.
"""

from __future__ import annotations

import pytest

from reportclient._engine.consumer_write import consumer_evidence
from reportclient._engine.fate import Evidence, Fate, combine, fate
from reportclient._engine.field_write import FieldSent, FieldWrite
from reportclient._model.consumers import AllocationWrite, ConsumerAllocations
from reportclient._model.providers import (
    Inventory,
    ProviderInventories,
    ProviderTraits,
    ProviderWrite,
)

P, U, N = Fate.PENDING, Fate.UNKNOWN, Fate.NOT_LANDED

# (carried, seen, as_premised, as_written) -> verdict, and why.
RULE = [
    # A create (carried None): missing or present, nothing proves it did not land.
    ((None, None, True, False), U, "create, still missing: may have landed and been deleted"),
    ((None, 1, False, True), U, "create, holding what it wrote: ours or another's"),
    ((None, 1, False, False), U, "create, holding other content: another's, or ours then changed"),
    ((None, 3, False, False), U, "create, several writes since"),
    # The subject gone: deleted before or after the write.
    ((4, None, False, False), U, "missing: deleted before or after it landed"),
    ((4, None, False, True), U, "a delete, and missing: ours or another's delete"),
    # Same number: the same subject only with the same content.
    ((4, 4, True, False), P, "at N as read: not landed"),
    ((4, 4, False, False), U, "at N with other content: deleted and re-created"),
    ((4, 4, False, True), U, "at N holding what it wrote: re-created with it"),
    # One write since.
    ((4, 5, False, False), N, "N+1 with other content: another's write came first"),
    ((4, 5, True, False), N, "N+1 holding the premise: another write left it as it was"),
    ((4, 5, False, True), U, "N+1 holding what it wrote: ours, or another's same write"),
    # Several writes since, or fewer than none.
    ((4, 6, False, False), U, "N+2: it may have landed before the others"),
    ((4, 9, True, False), U, "N+5 holding the premise: landed, then undone?"),
    ((4, 2, False, False), U, "below N: deleted and re-created"),
    ((4, 2, True, False), U, "below N holding the premise: re-created, same content"),
    ((0, 0, True, False), P, "a provider at generation 0, as read"),
    ((0, 1, False, False), N, "a provider at 1 with other content"),
]


@pytest.mark.parametrize(("evidence", "verdict", "why"), RULE, ids=[r[2] for r in RULE])
def test_the_rule(evidence, verdict, why):
    assert fate(Evidence(*evidence)) is verdict, why


def test_every_verdict_is_reachable():
    assert {verdict for _, verdict, _ in RULE} == set(Fate)


# -- combined over the subjects of one all-or-nothing write (POST, reshape) -----------------

COMBINE = [
    ([P], P),
    ([N], N),
    ([U], U),
    ([P, U], P),  # one subject as read proves the whole has not landed yet
    ([N, U], N),  # one subject moved elsewhere proves it never will
    ([N, P], N),
    ([U, U, U], U),  # every subject open: unknown
    ([P, P], P),
    ([U, N, P], N),
]


@pytest.mark.parametrize(("verdicts", "combined"), COMBINE)
def test_combined(verdicts, combined):
    assert combine(verdicts) is combined


# -- consumers: the evidence a read gives -------------------------------------------------

RP, RP2 = "3f1b8a52-5c3e-4f3a-9d1c-1a2b3c4d5e6f", "7d2c9e41-1f0a-4b6e-8c3d-2b3c4d5e6f70"
A = {RP: {"VCPU": 1}}
B = {RP: {"VCPU": 2}}
C = {RP2: {"VCPU": 1}}
C_UUID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def write(allocations, generation):
    return AllocationWrite(C_UUID, allocations, generation, "p", "u")


def state(allocations, generation):
    if generation is None:
        return ConsumerAllocations.missing(C_UUID)
    return ConsumerAllocations(C_UUID, allocations, generation, "p", "u")


CONSUMERS = [
    # (what the write carried and wrote, its premise, what was read) -> verdict
    ("claim of a new consumer, still missing", write(A, None), {}, state({}, None), U),
    ("claim of a new consumer, holding it", write(A, None), {}, state(A, 1), U),
    ("update at N as read", write(B, 1), A, state(A, 1), P),
    ("update at N, re-created with other content (shelve, unshelve)", write(B, 1), A,
     state(C, 1), U),
    ("update at N+1 with other content", write(B, 1), A, state(C, 2), N),
    ("update at N+1 holding what it wrote", write(B, 1), A, state(B, 2), U),
    ("update, consumer deleted since", write(B, 1), A, state({}, None), U),
    ("update at N+2", write(B, 1), A, state(C, 3), U),
    ("release at N as read", write({}, 1), A, state(A, 1), P),
    ("release, consumer missing", write({}, 1), A, state({}, None), U),
    ("release at N, claimed anew (unshelve)", write({}, 1), A, state(C, 1), U),
    ("release at N+1: another write came first", write({}, 1), A, state(B, 2), N),
    ("release at N+1 holding the premise", write({}, 1), A, state(A, 2), N),
]  # fmt: skip


@pytest.mark.parametrize(
    ("sent", "premise", "read", "verdict"),
    [c[1:] for c in CONSUMERS],
    ids=[c[0] for c in CONSUMERS],
)
def test_consumer_writes(sent, premise, read, verdict):
    assert fate(consumer_evidence(sent, premise, read)) is verdict


def test_batch_where_a_new_consumer_was_deleted_and_an_update_may_have_landed_is_unknown():
    """write_many({X: add, Y: claim}) landed, Y deleted before the re-read (issue scenario 4)."""
    x = consumer_evidence(write(B, 1), A, state(B, 2))  # X holds what the POST wrote
    y = consumer_evidence(write(A, None), {}, state({}, None))  # Y missing again
    assert combine([fate(x), fate(y)]) is U


def test_batch_where_one_consumer_is_as_read_has_not_landed():
    x = consumer_evidence(write(B, 1), A, state(A, 1))
    y = consumer_evidence(write(A, None), {}, state({}, None))
    assert combine([fate(x), fate(y)]) is P


def test_move_whose_new_target_was_deleted_is_unknown():
    """The source emptied (deleted) and the target missing: landed, or not; no way to tell."""
    source = consumer_evidence(write({}, 3), A, state({}, None))
    target = consumer_evidence(write(A, None), {}, state({}, None))
    assert combine([fate(source), fate(target)]) is U


# -- provider fields and reshapes: the same rule over a provider generation --------------

RP_UUID = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b"


def inventories(generation, **totals):
    return ProviderInventories(RP_UUID, generation, {rc: Inventory(t) for rc, t in totals.items()})


def field_verdict(kind, premise, asked, read):
    sent = FieldSent(ProviderWrite(RP_UUID, kind.ROUTE, premise.generation, {}), premise, asked)
    engine = FieldWrite(None, kind, RP_UUID, lambda v: v, idempotent=False)  # type: ignore[arg-type]
    return combine(fate(e) for e in engine.evidence(sent, read))


FIELDS = [
    ("inventory +4 at N as read", inventories(1, VCPU=2), inventories(1, VCPU=2), P),
    ("inventory +4, provider re-created at N (a compute node re-registering)",
     inventories(1, VCPU=2), inventories(1, VCPU=3), U),
    ("inventory +4 at N+1 holding it", inventories(1, VCPU=2), inventories(2, VCPU=6), U),
    ("inventory +4 at N+1, an allocation moved the generation", inventories(1, VCPU=2),
     inventories(2, VCPU=2), N),
    ("inventory +4, many allocations since", inventories(1, VCPU=2), inventories(9, VCPU=2), U),
    ("inventory +4, re-created below N", inventories(5, VCPU=2), inventories(1, VCPU=2), U),
]  # fmt: skip


@pytest.mark.parametrize(
    ("premise", "read", "verdict"), [f[1:] for f in FIELDS], ids=[f[0] for f in FIELDS]
)
def test_provider_field_writes(premise, read, verdict):
    asked = {"VCPU": Inventory(6)}
    assert field_verdict(ProviderInventories, premise, asked, read) is verdict


def test_a_ratio_is_compared_as_mariadb_stores_it():
    """16/3 written, 5.33333 read back (a single-precision FLOAT): what was written."""
    premise = inventories(1, VCPU=2)
    asked = {"VCPU": Inventory(6, allocation_ratio=16 / 3)}
    stored = ProviderInventories(RP_UUID, 2, {"VCPU": Inventory(6, allocation_ratio=5.33333)})
    assert field_verdict(ProviderInventories, premise, asked, stored) is U  # not "another's"


def test_traits_at_n_with_other_traits_were_re_created():
    premise = ProviderTraits(RP_UUID, 3, frozenset({"CUSTOM_A"}))
    read = ProviderTraits(RP_UUID, 3, frozenset({"CUSTOM_B"}))
    assert field_verdict(ProviderTraits, premise, {"CUSTOM_A", "CUSTOM_C"}, read) is U


def test_reshape_combines_providers_and_consumers():
    """A reshape lands whole: one provider still as read proves it has not landed."""
    provider = Evidence(carried=4, seen=4, as_premised=True, as_written=False)
    consumer = consumer_evidence(write(B, 1), A, state(B, 2))
    assert combine([fate(provider), fate(consumer)]) is P
    moved = Evidence(carried=4, seen=5, as_premised=False, as_written=False)
    assert combine([fate(moved), fate(consumer)]) is N
