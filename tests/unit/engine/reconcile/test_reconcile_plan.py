"""Reconcile's plan as tables: each row a description, a listing and what is known -> the plan.

Like ``test_fate.py``: the decisions are pure functions, so each row is one
situation and its expected decision, with no I/O and no fake.
"""

from __future__ import annotations

from typing import Any

import pytest

from reportclient._engine.proofs import unchanged_since
from reportclient._engine.reconcile_plan import (
    Known,
    PruneVerdict,
    Step,
    after_write,
    field_plans,
    is_reparenting,
    kept_by_refusal,
    needs_write,
    provider_steps,
    prune_plan,
    prune_verdict,
    stand_in,
    to_ensure,
)
from reportclient._gateway.gateway import Snapshot
from reportclient._model.provider_tree import ProviderSpec, describe
from reportclient._model.providers import (
    Inventory,
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ResourceProvider,
)

R, R2, A, B, C, X = (f"{n:08x}-0000-4000-8000-000000000000" for n in range(1, 7))


def rp(
    uuid: str, parent: str | None = None, root: str | None = None, name: str = ""
) -> ResourceProvider:
    return ResourceProvider(uuid, name or uuid[:8], 3, parent, root or parent or uuid)


def spec(uuid: str, parent: str | None = None, name: str = "", **fields: Any) -> ProviderSpec:
    return ProviderSpec(uuid, name or uuid[:8], parent, **fields)


# -- providers: create, update, keep ---------------------------------------------------------

STEPS = [
    pytest.param(spec(A), {}, Step.CREATE, id="not-listed-created"),
    pytest.param(spec(A), {A: rp(A)}, Step.KEEP, id="listed-as-described-kept"),
    pytest.param(spec(A, name="new"), {A: rp(A)}, Step.UPDATE, id="renamed"),
    pytest.param(spec(A, R), {A: rp(A, R2)}, Step.UPDATE, id="re-parented"),
    pytest.param(spec(A, R), {A: rp(A)}, Step.UPDATE, id="root-becomes-child"),
    pytest.param(spec(A), {A: rp(A, R)}, Step.UPDATE, id="child-becomes-root"),
]


@pytest.mark.parametrize(("described", "listing", "step"), STEPS)
def test_provider_step(
    described: ProviderSpec, listing: dict[str, ResourceProvider], step: Step
) -> None:
    assert provider_steps([described], listing) == ((described, step),)


REPARENTING = [
    pytest.param(spec(A, R), rp(A, R2), True, id="child-to-another-parent"),
    pytest.param(spec(A), rp(A, R), True, id="child-to-root"),
    pytest.param(spec(A, R), rp(A), False, id="root-to-child"),
    pytest.param(spec(A, R), rp(A, R), False, id="same-parent"),
]


@pytest.mark.parametrize(("described", "listed", "needs_1_37"), REPARENTING)
def test_is_reparenting(
    described: ProviderSpec, listed: ResourceProvider, needs_1_37: bool
) -> None:
    assert is_reparenting(described, listed) is needs_1_37


# -- fields: what stands in for a read -------------------------------------------------------

TRAITS_AT_3 = ProviderTraits(A, 3, frozenset({"HW_CPU_X86_AVX2"}))

# (cached entry, listed generation, now, max_age) -> stands in?
STAND_IN = [
    pytest.param((TRAITS_AT_3, 0.0), 3, 100.0, 300.0, True, id="listed-at-it-and-young"),
    pytest.param((TRAITS_AT_3, 0.0), 3, 300.0, 300.0, True, id="last-second-of-the-window"),
    pytest.param(
        (TRAITS_AT_3, 0.0), 3, 301.0, 300.0, False, id="listed-at-it-but-old-re-creation-possible"
    ),
    pytest.param((TRAITS_AT_3, 0.0), 4, 10.0, 300.0, False, id="generation-moved"),
    pytest.param((TRAITS_AT_3, 0.0), 2, 10.0, 300.0, False, id="generation-below-re-created"),
    pytest.param(None, 3, 10.0, 300.0, False, id="nothing-cached"),
    pytest.param((TRAITS_AT_3, 0.0), 3, 9999.0, None, True, id="age-bounded-by-the-caller"),
]


@pytest.mark.parametrize(("entry", "listed", "now", "max_age", "stands"), STAND_IN)
def test_stand_in(
    entry: tuple[ProviderTraits, float] | None,
    listed: int,
    now: float,
    max_age: float | None,
    stands: bool,
) -> None:
    assert (stand_in(entry, listed, now=now, max_age=max_age) is not None) is stands


INV_AT_3 = ProviderInventories(A, 3, {"VCPU": Inventory(8)})
AGG_AT_2 = ProviderAggregates(A, 2, frozenset())
KNOWN = {"inventories": (INV_AT_3, 10.0), "aggregates": (AGG_AT_2, 5.0)}

# (known, generation before, the written field afterwards, wrote) -> what stays known
AFTER_WRITE = [
    pytest.param(
        KNOWN,
        3,
        ProviderTraits(A, 4, frozenset()),
        True,
        {"inventories": (ProviderInventories(A, 4, {"VCPU": Inventory(8)}), 10.0)},
        id="our-write-carries-those-at-its-generation-keeping-their-age",
    ),
    pytest.param(
        KNOWN, 3, ProviderTraits(A, 6, frozenset()), True, {}, id="others-wrote-too-nothing-known"
    ),
    pytest.param(
        KNOWN, 3, ProviderTraits(A, 5, frozenset()), False, {}, id="conflict-re-read-elsewhere"
    ),
    pytest.param(KNOWN, 3, TRAITS_AT_3, False, KNOWN, id="nothing-written-all-still-known"),
]


@pytest.mark.parametrize(("known", "generation", "result", "wrote", "after"), AFTER_WRITE)
def test_after_write(
    known: dict[str, Known], generation: int, result: Snapshot, wrote: bool, after: dict[str, Known]
) -> None:
    assert after_write(known, generation, result, wrote) == after


# -- fields: what needs writing --------------------------------------------------------------

SPEC = describe(
    [spec(A, inventories={"VCPU": 8, "CUSTOM_GPU": 1}, traits={"CUSTOM_RACK", "HW_CPU_X86_AVX2"})]
)[0]

# (merge, start) -> (needs a write, names to ensure)
WRITES = [
    pytest.param(False, ProviderTraits(A, 1, frozenset()), True, ["CUSTOM_RACK"], id="empty"),
    pytest.param(
        False,
        ProviderTraits(A, 1, frozenset({"CUSTOM_RACK", "HW_CPU_X86_AVX2"})),
        False,
        [],
        id="holds-it",
    ),
    pytest.param(
        False,
        ProviderTraits(A, 1, frozenset({"CUSTOM_RACK", "HW_CPU_X86_AVX2", "COMPUTE_X"})),
        True,
        [],
        id="replace-removes-others",
    ),
    pytest.param(
        True,
        ProviderTraits(A, 1, frozenset({"CUSTOM_RACK", "HW_CPU_X86_AVX2", "COMPUTE_X"})),
        False,
        [],
        id="merge-keeps-others",
    ),
]


@pytest.mark.parametrize(("merge", "start", "write", "ensure"), WRITES)
def test_traits_plan(merge: bool, start: ProviderTraits, write: bool, ensure: list[str]) -> None:
    plans = field_plans(SPEC, merge)
    assert [p.kind for p in plans] == [ProviderInventories, ProviderTraits]
    traits = plans[1]
    assert needs_write(traits, start) is write
    assert to_ensure(traits, start, ()) == ensure


def test_an_inventory_plan_ensures_only_custom_classes_not_held_nor_already_ensured() -> None:
    inventories = field_plans(SPEC, False)[0]
    empty = ProviderInventories(A, 0, {})
    assert to_ensure(inventories, empty, ()) == ["CUSTOM_GPU"]
    assert to_ensure(inventories, empty, {"CUSTOM_GPU"}) == []
    assert needs_write(inventories, empty)


# -- deletes: which, in what order, and the verdict of the re-read ---------------------------

# (listing, described, delete_roots, merge) -> (owned, doomed)
PRUNE = [
    pytest.param(
        [rp(R), rp(A, R), rp(B, A, R)], [spec(R)], [], False, {R}, (B, A), id="leaves-first"
    ),
    pytest.param([rp(R), rp(A, R)], [spec(R)], [], True, set(), (), id="merge-owns-nothing"),
    pytest.param(
        [rp(R), rp(A, R), rp(X), rp(C, X)],
        [spec(R)],
        [X],
        True,
        {X},
        (C, X),
        id="merge-still-owns-named-roots",
    ),
    pytest.param(
        [rp(R), rp(A, R)], [spec(B, R)], [], False, set(), (), id="under-undescribed-root-never"
    ),
    pytest.param(
        [rp(R), rp(A, R), rp(B, A, R)],
        [spec(R), spec(B, R)],
        [],
        False,
        {R},
        (A,),
        id="re-parented-by-this-call-out-from-under-a-doomed-one",
    ),
]


@pytest.mark.parametrize(("listing", "described", "named", "merge", "owned", "doomed"), PRUNE)
def test_prune_plan(
    listing: list[ResourceProvider],
    described: list[ProviderSpec],
    named: list[str],
    merge: bool,
    owned: set[str],
    doomed: tuple[str, ...],
) -> None:
    by_uuid = {p.uuid: p for p in listing}
    for s in described:  # what this call's creates and updates made of them
        by_uuid[s.uuid] = rp(s.uuid, s.parent)
    plan = prune_plan(described, by_uuid, named, merge)
    assert (plan.owned, plan.doomed) == (frozenset(owned), doomed)


# (the re-read just before the DELETE, owned roots) -> verdict
VERDICTS = [
    pytest.param(rp(A, R, R), {R}, PruneVerdict.DELETE, id="still-under-an-owned-root"),
    pytest.param(rp(A, C, R), {R}, PruneVerdict.DELETE, id="moved-within-the-owned-tree"),
    pytest.param(rp(A, R2, R2), {R}, PruneVerdict.MOVED, id="moved-into-another-tree"),
    pytest.param(rp(A), {R}, PruneVerdict.MOVED, id="made-a-root-of-its-own"),
    pytest.param(rp(X), {R, X}, PruneVerdict.DELETE, id="named-root-still-a-root"),
    pytest.param(rp(X, R2, R2), {R, X}, PruneVerdict.MOVED, id="named-root-now-under-another"),
    pytest.param(rp(A, R2, R2), {R, R2}, PruneVerdict.DELETE, id="moved-to-another-owned-tree"),
    pytest.param(None, {R}, PruneVerdict.GONE, id="deleted-meanwhile"),
]


@pytest.mark.parametrize(("reread", "owned", "verdict"), VERDICTS)
def test_prune_verdict(
    reread: ResourceProvider | None, owned: set[str], verdict: PruneVerdict
) -> None:
    assert prune_verdict(reread, frozenset(owned)) is verdict


def test_every_prune_verdict_is_reachable() -> None:
    assert {row.values[2] for row in VERDICTS} == set(PruneVerdict)


def test_a_refused_delete_keeps_its_doomed_ancestors_only() -> None:
    plan = prune_plan([spec(R)], {p.uuid: p for p in [rp(R), rp(A, R), rp(B, A, R)]}, [], False)
    assert plan.doomed == (B, A)
    assert kept_by_refusal(B, plan) == {A}  # A would be refused too: it still has B
    assert kept_by_refusal(A, plan) == set()  # R is described, never doomed


# -- re-proof past the window by the tree's Last-Modified ------------------------------

REPROOF = [
    ("tree last changed well before the proof", 1000.0, 2000.0, True),
    ("changed exactly the margin before", 1000.0, 1005.0, True),
    ("changed within the margin of the proof (whole seconds, skew)", 1000.0, 1004.0, False),
    ("changed after the proof (a re-creation, a write, an allocation)", 3000.0, 2000.0, False),
    ("the server said no Last-Modified", None, 2000.0, False),
    ("the proof's answer had no Date", 1000.0, None, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("modified", "proven", "expected"), [r[1:] for r in REPROOF], ids=[r[0] for r in REPROOF]
)
def test_a_listing_re_proves_a_field_only_if_its_tree_is_unchanged_since_the_proof(
    modified, proven, expected
):
    assert unchanged_since(proven, modified) is expected
