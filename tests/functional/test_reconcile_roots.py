"""Reconcile of many roots in one call against the real Placement, counted on the wire."""

from __future__ import annotations

from reportclient import ProviderSpec
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import make_cached_client, new_id, wire

ROOTS = 5


def _listings(placement: EmbeddedPlacement) -> list[tuple[str, int]]:
    """``(query, status)`` of every provider listing the server saw since the last clear."""
    return [
        (r.query, r.status)
        for r in placement.requests_seen
        if (r.method, r.path) == ("GET", "/resource_providers")
    ]


def _node(rp: str) -> ProviderSpec:
    """An ironic-style node: its own root provider, with all three fields managed."""
    return ProviderSpec(
        rp,
        f"node-{rp}",
        inventories={"CUSTOM_BAREMETAL_GOLD": 1},
        traits={"HW_CPU_X86_AVX2"},
        aggregates={"7a7b7c7d-0000-4000-8000-000000000001"},
    )


def test_steady_reconcile_of_many_roots_lists_each_tree_once_and_posts_nothing(
    real_placement: EmbeddedPlacement,
) -> None:
    providers = make_cached_client(real_placement).providers
    roots = [new_id() for _ in range(ROOTS)]
    specs = [_node(rp) for rp in roots]
    real_placement.clear_requests_seen()
    first = providers.reconcile(specs)
    created = wire(real_placement)
    assert first.created == tuple(roots)
    assert first.requests == len(created)
    assert [m for m, _p, _s in created].count("POST") == ROOTS
    assert [s for _m, _p, s in created].count(409) == 0
    real_placement.clear_requests_seen()

    report = providers.reconcile(specs)

    seen = wire(real_placement)
    assert seen == [("GET", "/resource_providers", 200)] * ROOTS
    assert sorted(_listings(real_placement)) == sorted((f"in_tree={rp}", 200) for rp in roots)
    assert report.requests == len(seen) == ROOTS
    assert report.created == () and report.written == ()


def test_new_children_under_an_existing_root_are_listed_by_that_root(
    real_placement: EmbeddedPlacement,
) -> None:
    providers = make_cached_client(real_placement).providers
    root = providers.create_provider(f"cn-{new_id()}").uuid
    children = [
        ProviderSpec(new_id(), f"dev-{n}-{root}", parent=root, traits={"HW_CPU_X86_AVX2"})
        for n in range(3)
    ]
    real_placement.clear_requests_seen()

    first = providers.reconcile(children)

    assert first.created == tuple(c.uuid for c in children)
    assert _listings(real_placement) == [(f"in_tree={root}", 200)]
    assert [s for _m, _p, s in wire(real_placement)].count(409) == 0
    real_placement.clear_requests_seen()

    report = providers.reconcile(children)

    assert wire(real_placement) == [("GET", "/resource_providers", 200)]
    assert _listings(real_placement) == [(f"in_tree={root}", 200)]
    assert report.requests == 1
