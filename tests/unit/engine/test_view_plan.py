"""The tree view's decisions, tabled: staleness, and what a flush writes against which base."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from reportclient import ProviderSpec
from reportclient._engine.view_plan import (
    Bases,
    base_of,
    field_writes,
    flush_plan,
    stale,
)
from reportclient._model.provider_tree import describe
from reportclient._model.providers import (
    Inventory,
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
)
from reportclient._model.tree_view import ProviderView, TreeView

ROOT, CHILD, GRANDCHILD, OTHER = (str(uuid.UUID(int=i + 1)) for i in range(4))
AGG = str(uuid.UUID(int=0xA66))


@pytest.mark.parametrize(
    ("refreshed_at", "now", "window", "expected"),
    [
        (None, 1000.0, 300.0, True),  # never proven
        (None, 1000.0, 0.0, True),  # never proven, whatever the window
        (1000.0, 1300.0, 300.0, False),  # at the window's edge: still fresh
        (1000.0, 1300.5, 300.0, True),  # past it
        (1000.0, 10**9, 0.0, False),  # 0: once proven, never refreshed (nova)
        (1000.0, 1000.0, 300.0, False),
    ],
)
def test_stale_follows_novas_association_refresh(
    refreshed_at: float | None, now: float, window: float, expected: bool
) -> None:
    assert stale(refreshed_at, now, window) is expected


def provider(
    uid: str,
    parent: str | None = None,
    *,
    vcpu: int = 8,
    traits: frozenset[str] = frozenset(),
    aggregates: frozenset[str] = frozenset(),
) -> ProviderView:
    return ProviderView(
        uid, f"rp-{uid[-2:]}", parent, 3, {"VCPU": Inventory(vcpu)}, traits, aggregates
    )


VIEW = TreeView(
    (
        provider(ROOT),
        provider(CHILD, ROOT),
        provider(GRANDCHILD, CHILD),
        provider(OTHER),
    )
)


def spec(uid: str, parent: str | None = None, **fields: object) -> ProviderSpec:
    return ProviderSpec(uid, f"rp-{uid[-2:]}", parent, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("new", "scope", "add", "remove"),
    [
        # The whole view described as it is: nothing to add or remove.
        ([spec(ROOT), spec(CHILD, ROOT), spec(GRANDCHILD, CHILD), spec(OTHER)], None, [], []),
        # A whole-view flush that drops a subtree removes it leaves first.
        ([spec(ROOT), spec(OTHER)], None, [], [GRANDCHILD, CHILD]),
        # A subtree flush removes nothing outside its scope (nova's ProviderSubTree).
        ([spec(ROOT)], ROOT, [], [GRANDCHILD, CHILD]),
        ([spec(OTHER)], OTHER, [], []),
        # A new provider is added, parents first.
        (
            [spec(ROOT), spec(CHILD, ROOT), spec(GRANDCHILD, CHILD), spec(OTHER), spec(AGG, OTHER)],
            None,
            [AGG],
            [],
        ),
    ],
)
def test_a_flush_plan_adds_what_the_view_lacks_and_removes_in_scope_what_the_tree_dropped(
    new: list[ProviderSpec], scope: str | None, add: list[str], remove: list[str]
) -> None:
    handed = Bases(bound={p.uuid: p for p in VIEW})  # the tree was handed out as VIEW
    plan = flush_plan(VIEW, describe(new), scope, handed)
    assert [s.uuid for s in plan.add] == add
    assert list(plan.remove) == remove
    assert plan.stale == ()


#: The view after another writer added a child under ROOT (neutron's agent, say), which a
#: read by another call of the same client brought into the view after the handout.
ADDED = "00000000-0000-0000-0000-0000000000ad"
GROWN = TreeView((*VIEW.providers[:3], provider(ADDED, ROOT), VIEW.providers[3]))


@pytest.mark.parametrize(
    ("bases", "remove", "stale"),
    [
        # Handed out before the child came: the tracker's tree never saw it, so it stays.
        (Bases(bound={p.uuid: p for p in VIEW}), [], []),
        # Handed out with it (in that very object): the tracker dropped it on purpose.
        (Bases(bound={p.uuid: p for p in GROWN}), [ADDED], []),
        # A copy judged by generations, the view having shown the child before: removed.
        (Bases(carried={ROOT: 3}, last={p.uuid: p for p in GROWN}), [ADDED], []),
        # A copy, the child never shown by this view: nobody can say; nothing is written.
        (Bases(carried={ROOT: 3}, last={p.uuid: p for p in VIEW}), [], [ADDED]),
    ],
    ids=["handed-before", "handed-with-it", "copy-shown", "copy-never-shown"],
)
def test_a_flush_removes_only_providers_the_callers_tree_saw(
    bases: Bases, remove: list[str], stale: list[str]
) -> None:
    described = describe([spec(ROOT), spec(CHILD, ROOT), spec(GRANDCHILD, CHILD), spec(OTHER)])
    plan = flush_plan(GROWN, described, None, bases)
    assert list(plan.remove) == remove
    assert list(plan.stale) == stale


HANDED = provider(ROOT, traits=frozenset({"HW_CPU_X86_AVX2"}))
NOW = provider(ROOT, traits=frozenset({"HW_CPU_X86_AVX2", "CUSTOM_THEIRS"}))
MOVED = dataclasses.replace(NOW, generation=4)


@pytest.mark.parametrize(
    ("bases", "current", "expected"),
    [
        # The object handed out: what it was handed, whatever the view holds now.
        (Bases(bound={ROOT: HANDED}), NOW, HANDED),
        (Bases(bound={ROOT: HANDED}, carried={ROOT: 1}), MOVED, HANDED),
        # A copy at a generation the view showed: what it showed there.
        (Bases(carried={ROOT: 3}, handed={ROOT: (HANDED, False)}), MOVED, HANDED),
        # ... unless two showings at that generation differed (an aggregate set below 1.19).
        (Bases(carried={ROOT: 3}, handed={ROOT: (None, True)}), NOW, NOW),
        (Bases(carried={ROOT: 3}, handed={ROOT: (None, True)}), MOVED, None),
        # Never shown at it, but the view is at it now: the view.
        (Bases(carried={ROOT: 3}), NOW, NOW),
        # Older (or other) than the view and never shown: a stale view.
        (Bases(carried={ROOT: 2}), NOW, None),
        (Bases(carried={ROOT: 3}), MOVED, None),
        # No generation carried (a tree built by hand): what this view last showed, else the view.
        (Bases(carried={ROOT: None}, last={ROOT: HANDED}), MOVED, HANDED),
        (Bases(), NOW, NOW),
    ],
)
def test_a_callers_tree_is_judged_against_what_it_was_computed_from(
    bases: Bases, current: ProviderView, expected: ProviderView | None
) -> None:
    assert base_of(ROOT, bases, current) == expected


def test_a_field_the_caller_left_alone_is_not_written_whatever_the_view_holds_now() -> None:
    """The flush's base is the handout: another writer's trait read into the view since is kept."""
    (unchanged,) = describe([spec(ROOT, traits={"HW_CPU_X86_AVX2"})])
    assert field_writes(HANDED, unchanged) == []
    assert [kind for kind, _v in field_writes(NOW, unchanged)] == [ProviderTraits]  # the old bug


def test_a_stale_tree_that_would_write_is_refused_and_one_that_would_not_is_not() -> None:
    stale_bases = Bases(carried={ROOT: 2})
    writes = describe([spec(ROOT, inventories={"VCPU": 16})])
    assert flush_plan(TreeView((NOW,)), writes, None, stale_bases).stale == (ROOT,)
    holds = describe([spec(ROOT, inventories={"VCPU": 8})])
    assert flush_plan(TreeView((NOW,)), holds, None, stale_bases).stale == ()


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, []),  # nothing managed
        (
            {"inventories": {"VCPU": 8}, "traits": set(), "aggregates": set()},
            [],
        ),  # as the view holds it
        ({"inventories": {"VCPU": 16}}, [ProviderInventories]),
        (
            {"traits": {"HW_CPU_X86_AVX2"}, "aggregates": {AGG}},
            [ProviderAggregates, ProviderTraits],
        ),
        (
            {"traits": {"HW_CPU_X86_AVX2"}, "aggregates": {AGG}, "inventories": {"VCPU": 1}},
            [ProviderInventories, ProviderAggregates, ProviderTraits],  # nova's order
        ),
    ],
)
def test_a_flush_writes_only_the_fields_that_differ_from_the_view(
    fields: dict[str, object], expected: list[type]
) -> None:
    (normalized,) = describe([spec(ROOT, **fields)])
    assert [kind for kind, _value in field_writes(VIEW.providers[0], normalized)] == expected
