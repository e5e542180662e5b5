"""Reconcile's prune against the real Placement: a provider moved away meanwhile is not deleted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reportclient import ProviderSpec
from reportclient._engine.provider_ops import ProviderOps
from reportclient._engine.reconcile import reconcile
from reportclient._gateway.gateway import TreeListing
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import make_client, new_id


class MovedAfterListing:
    """The agent's provider operations, except that another agent acts right after listing ``tree``.

    Reconcile decides what to delete from that listing; acting right after
    it answers makes "moved between the listing and the delete" happen on
    every run, whatever reconcile does in between.
    """

    def __init__(self, client: ProviderOps, tree: str, act: Callable[[], object]) -> None:
        self._client = client
        self._tree = tree
        self._act: Callable[[], object] | None = act

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def list_tree(self, anchor: str, **kwargs: Any) -> TreeListing:
        listed = self._client.list_tree(anchor, **kwargs)
        if self._act is not None and anchor == self._tree:
            act, self._act = self._act, None
            act()
        return listed


def test_a_dropped_child_re_parented_into_another_tree_after_the_listing_is_not_deleted(
    real_placement: EmbeddedPlacement,
) -> None:
    agent = make_client(real_placement).providers
    other = make_client(real_placement).providers
    root, theirs, child = new_id(), new_id(), new_id()
    agent.reconcile(
        [
            ProviderSpec(root, f"cn-{root}", inventories={"VCPU": 8}),
            ProviderSpec(
                child,
                f"dev-{child}",
                parent=root,
                inventories={"CUSTOM_FUNCTIONAL_DEV": 2},
                traits={"HW_CPU_X86_AVX2"},
            ),
        ]
    )
    other.create_provider(f"cn-{theirs}", uuid=theirs)
    wrapped = MovedAfterListing(
        agent._ops, root, lambda: other.update_provider(child, parent_provider_uuid=theirs)
    )

    # The description drops the child: by the listing, it is the caller's to delete.
    report = reconcile(wrapped, [ProviderSpec(root, f"cn-{root}", inventories={"VCPU": 8})])

    kept = other.get_provider(child)
    assert (kept.parent_provider_uuid, kept.root_provider_uuid) == (theirs, theirs)
    assert other.get_inventories(child).inventories["CUSTOM_FUNCTIONAL_DEV"].total == 2
    assert other.get_traits(child).traits == frozenset({"HW_CPU_X86_AVX2"})
    assert report.moved == (child,) and report.deleted == ()
