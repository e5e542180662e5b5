"""Reconcile on the fake: a provider is deleted only if a read just before its DELETE shows it ours.

Each test moves a provider the way another agent would, deterministically:
right after reconcile's listing of the tree (the request its prune decision
is made from), through a second client on the same fake.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import reportclient
from reportclient import ProviderSpec
from reportclient._clients.providers import ProviderClient
from reportclient.fixture import FakePlacement, RequestRecord
from tests.support.clients import providers_on
from tests.support.trees import node
from tests.support.wire import new_uuid


@pytest.fixture
def other(fake: FakePlacement) -> ProviderClient:
    """Another agent's client on the same Placement."""
    return providers_on(fake)


def after_listing(fake: FakePlacement, tree: str, act: Callable[[], None]) -> None:
    """Run ``act`` once, right after the first listing of ``tree`` is answered."""
    fired: list[bool] = []

    def hook(_fake: FakePlacement, record: RequestRecord) -> None:
        if not fired and record.method == "GET" and record.path.endswith(f"in_tree={tree}"):
            fired.append(True)
            act()

    fake.between_requests(hook)


def sent(fake: FakePlacement) -> list[tuple[str, str]]:
    return [(r.method, r.path.split("?")[0]) for r in fake.requests]


def test_a_dropped_child_moved_into_another_tree_after_the_listing_is_not_deleted(
    providers: ProviderClient, other: ProviderClient, fake: FakePlacement
) -> None:
    root, theirs, child = new_uuid(), new_uuid(), new_uuid()
    providers.reconcile(node(root, child))
    other.create_provider("their-compute", uuid=theirs)
    after_listing(fake, root, lambda: other.update_provider(child, parent_provider_uuid=theirs))
    fake.reset_requests()

    report = providers.reconcile(node(root))

    assert report.moved == (child,) and report.deleted == ()
    assert "DELETE" not in [m for m, _p in sent(fake)]
    moved = providers.get_provider(child)
    assert (moved.parent_provider_uuid, moved.root_provider_uuid) == (theirs, theirs)
    assert fake.inventory(child)["CUSTOM_GPU"].total == 1  # its content too


def test_deleting_a_dropped_child_costs_one_read_before_its_delete(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(node(root, child))
    fake.reset_requests()

    report = providers.reconcile(node(root))

    assert sent(fake) == [
        ("GET", "/resource_providers"),
        ("GET", f"/resource_providers/{root}/inventories"),
        ("GET", f"/resource_providers/{child}"),
        ("DELETE", f"/resource_providers/{child}"),
    ]
    assert report.deleted == (child,) and report.moved == ()
    assert report.requests == len(fake.requests)


def test_a_reconcile_that_deletes_nothing_sends_no_read_for_the_prune(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(node(root, child))
    fake.reset_requests()

    report = providers.reconcile(node(root, child))

    assert [p for _m, p in sent(fake)] == [
        "/resource_providers",
        f"/resource_providers/{root}/inventories",
        f"/resource_providers/{child}/inventories",
    ]
    assert report.requests == 3


def test_a_parent_whose_dropped_child_moved_away_is_still_deleted(
    providers: ProviderClient, other: ProviderClient, fake: FakePlacement
) -> None:
    root, theirs, mid, leaf = new_uuid(), new_uuid(), new_uuid(), new_uuid()
    providers.reconcile([*node(root, mid), ProviderSpec(leaf, "leaf", parent=mid)])
    other.create_provider("their-compute", uuid=theirs)
    after_listing(fake, root, lambda: other.update_provider(leaf, parent_provider_uuid=theirs))

    report = providers.reconcile(node(root))

    assert report.moved == (leaf,) and report.deleted == (mid,)
    assert providers.get_provider(leaf).root_provider_uuid == theirs
    assert not providers.list_providers(uuid=mid)


def test_a_dropped_subtree_moved_whole_is_left_alone_leaf_and_parent(
    providers: ProviderClient, other: ProviderClient, fake: FakePlacement
) -> None:
    root, theirs, mid, leaf = new_uuid(), new_uuid(), new_uuid(), new_uuid()
    providers.reconcile([*node(root, mid), ProviderSpec(leaf, "leaf", parent=mid)])
    other.create_provider("their-compute", uuid=theirs)
    after_listing(fake, root, lambda: other.update_provider(mid, parent_provider_uuid=theirs))

    report = providers.reconcile(node(root))

    assert report.moved == (leaf, mid) and report.deleted == ()
    assert providers.get_provider(leaf).root_provider_uuid == theirs


def test_a_named_root_placed_under_a_root_not_owned_is_left_alone(
    providers: ProviderClient, other: ProviderClient, fake: FakePlacement
) -> None:
    mine, retired, theirs = new_uuid(), new_uuid(), new_uuid()
    providers.reconcile(node(mine) + node(retired))
    other.create_provider("their-compute", uuid=theirs)
    after_listing(
        fake, retired, lambda: other.update_provider(retired, parent_provider_uuid=theirs)
    )

    report = providers.reconcile(node(mine), delete_roots=[retired])

    assert report.moved == (retired,) and report.deleted == ()
    assert providers.get_provider(retired).root_provider_uuid == theirs


def test_a_dropped_child_moved_within_the_owned_tree_is_still_deleted(
    providers: ProviderClient, other: ProviderClient, fake: FakePlacement
) -> None:
    root, kept, child = new_uuid(), new_uuid(), new_uuid()
    providers.reconcile(node(root, kept, child))
    after_listing(fake, root, lambda: other.update_provider(child, parent_provider_uuid=kept))

    report = providers.reconcile(node(root, kept))

    assert report.deleted == (child,) and report.moved == ()


def test_a_dropped_child_deleted_by_another_agent_meanwhile_is_neither_deleted_nor_moved(
    providers: ProviderClient, other: ProviderClient, fake: FakePlacement
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(node(root, child))
    after_listing(fake, root, lambda: other.delete_provider(child))
    fake.reset_requests()

    report = providers.reconcile(node(root))

    assert report.deleted == () and report.moved == ()
    assert ("DELETE", f"/resource_providers/{child}") in sent(fake)  # the other agent's
    assert [m for m, _p in sent(fake)].count("DELETE") == 1


def test_the_in_use_error_names_what_was_left_alone_as_moved(
    providers: ProviderClient, other: ProviderClient, fake: FakePlacement
) -> None:
    root, theirs, busy, moving = new_uuid(), new_uuid(), new_uuid(), new_uuid()
    providers.reconcile(node(root, busy, moving))
    fake.put_allocations(new_uuid(), {busy: {"CUSTOM_GPU": 1}})
    other.create_provider("their-compute", uuid=theirs)
    after_listing(fake, root, lambda: other.update_provider(moving, parent_provider_uuid=theirs))

    with pytest.raises(reportclient.ProviderInUse) as caught:
        providers.reconcile(node(root))

    assert f"moved to a tree not owned: ['{moving}']" in caught.value.message
    assert providers.get_provider(moving).root_provider_uuid == theirs
