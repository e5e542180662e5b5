"""The tree view's decisions, tabled: staleness, what a listing proves, what a flush does."""

from __future__ import annotations

import uuid

import pytest

from reportclient import ProviderSpec
from reportclient._engine.proofs import PROOF_MARGIN, Proof, ask_provider, field_proof
from reportclient._engine.view_plan import (
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


PROVEN = 10_000.0


@pytest.mark.parametrize(
    ("cached", "listed", "modified", "expected"),
    [
        (None, 3, PROVEN - 60, Proof.READ),  # never cached (or forgotten, in doubt)
        ((2, PROVEN), 3, PROVEN - 60, Proof.READ),  # another generation: an allocation or a write
        ((4, PROVEN), 3, PROVEN - 60, Proof.READ),  # a lower one: re-created, or older answer
        ((3, PROVEN), 3, PROVEN - 60, Proof.KEEP),  # same, and the tree quiet since the proof
        ((3, PROVEN), 3, PROVEN - PROOF_MARGIN, Proof.KEEP),  # exactly the margin
        ((3, PROVEN), 3, PROVEN - 1, Proof.READ),  # changed within the margin: most often
        ((3, PROVEN), 3, PROVEN + PROOF_MARGIN, Proof.READ),  # the proof's own change
        ((3, PROVEN), 3, PROVEN + 60, Proof.CHECK),  # well after: maybe a sibling's
        ((3, None), 3, PROVEN - 60, Proof.READ),  # the proof's time unknown
        ((3, PROVEN), 3, None, Proof.READ),  # the server said no Last-Modified
    ],
)
def test_what_a_listing_proves_of_a_cached_field(
    cached: tuple[int, float | None] | None,
    listed: int,
    modified: float | None,
    expected: Proof,
) -> None:
    assert field_proof(cached, listed, modified) is expected


@pytest.mark.parametrize(
    ("proofs", "expected"),
    [
        ([Proof.KEEP, Proof.KEEP, Proof.KEEP], False),
        ([Proof.CHECK, Proof.KEEP, Proof.READ], False),  # one check costs what one read does
        ([Proof.CHECK, Proof.CHECK, Proof.READ], True),
        ([Proof.CHECK, Proof.CHECK, Proof.CHECK], True),
        ([Proof.READ, Proof.READ, Proof.READ], False),
    ],
)
def test_the_provider_is_read_only_when_it_saves_field_reads(
    proofs: list[Proof], expected: bool
) -> None:
    assert ask_provider(proofs) is expected


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
    plan = flush_plan(VIEW, describe(new), scope)
    assert [s.uuid for s in plan.add] == add
    assert list(plan.remove) == remove


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
