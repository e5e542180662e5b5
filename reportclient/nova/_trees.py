"""nova's provider-tree cache on the adapter: the tree handed out, and the flush of the tracker's.

nova keeps a ``ProviderTree`` cache of what it believes Placement holds,
hands out copies of it to its resource tracker, and flushes the tree the
tracker hands back by writing only what differs from the cache, at the
cache's generations. Here that cache is a library view
(:class:`~reportclient.TreeViews`): kept from what the gateway proved, so
the answers that invalidate the client's caches invalidate it too; proven
past nova's association refresh against every write Placement accepts;
and each tree handed out is remembered, so the tracker's tree is flushed
against what it was handed, never against a view another call refreshed
since (:mod:`reportclient._engine.tree_flush`). nova's objects are read by
their public interface only: a ``ProviderTree``'s ``get_provider_uuids()``
and ``data(uuid)`` (``uuid``, ``name``, ``generation``, ``parent_uuid``,
``inventory``, ``traits``, ``aggregates``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from reportclient._engine.tree_views import TreeViews
from reportclient._model.provider_tree import ProviderSpec
from reportclient._model.providers import ResourceProvider
from reportclient._model.tree_view import TreeView
from reportclient.errors import InventoryInUse, PlacementError
from reportclient.nova._common import Base, nova_module, request_id
from reportclient.nova._errors import Situation, answer, fail, situation

__all__ = ["TreeCalls", "provider_tree_of", "specs_of"]


def specs_of(tree: Any, *, inventories: bool = True) -> list[ProviderSpec]:
    """One :class:`ProviderSpec` per provider of a nova ``ProviderTree``, parents first."""
    specs = []
    for uuid in tree.get_provider_uuids():
        data = tree.data(uuid)
        specs.append(
            ProviderSpec(
                data.uuid,
                data.name,
                data.parent_uuid,
                dict(data.inventory) if inventories else None,
                set(data.traits),
                set(data.aggregates),
            )
        )
    return specs


def provider_tree_of(view: TreeView) -> Any:
    """A new nova ``ProviderTree`` holding ``view``: each provider at the generation it was proven.

    Needs nova (the type is nova's).
    """
    tree = nova_module("nova.compute.provider_tree").ProviderTree()
    for p in view:
        if p.parent is None:
            tree.new_root(p.name, p.uuid, generation=p.generation)
        else:
            tree.new_child(p.name, p.parent, uuid=p.uuid, generation=p.generation)
        inventory = {rc: inv.to_json() for rc, inv in p.inventories.items()}
        tree.update_inventory(p.uuid, inventory, generation=p.generation)
        tree.update_traits(p.uuid, p.traits, generation=p.generation)
        tree.update_aggregates(p.uuid, p.aggregates, generation=p.generation)
    return tree


def _conflict_generation(views: TreeViews, uuid: str) -> int:
    """The generation nova's conflict names: the provider's as the view last recorded it."""
    record = next((rp for rp, _sharing in views.shown() if rp.uuid == uuid), None)
    return record.generation if record is not None else -1


class TreeCalls(Base):
    """nova's tree calls: the view handed out, the tracker's tree flushed against it."""

    #: The view of the trees this client keeps (nova's ``_provider_tree``).
    _views: TreeViews

    def _shown(self, name_or_uuid: str) -> list[ResourceProvider]:
        """The provider the view holds by that name or uuid, then its descendants; [] if none.

        nova's ``ProviderTree.get_provider_uuids(name_or_uuid)``, from the
        gateway's records (no request).
        """
        shown = [rp for rp, _sharing in self._views.shown()]
        found = [rp for rp in shown if name_or_uuid in (rp.uuid, rp.name)][:1]
        inside = {rp.uuid for rp in found}
        for rp in shown:  # parents first
            if rp.parent_provider_uuid in inside and rp.uuid not in inside:
                inside.add(rp.uuid)
                found.append(rp)
        return found

    def _ensured(
        self, context: Any, rp_uuid: str, name: str | None, parent: str | None
    ) -> TreeView:
        try:
            return self._views.ensure(
                rp_uuid, name=name, parent=parent, request_id=request_id(context)
            )
        except PlacementError as exc:
            failed: TreeView = answer(
                "get_provider_tree_and_ensure_root", exc, rp_uuid=rp_uuid, name=name or rp_uuid
            )
            return failed

    def get_provider_tree_and_ensure_root(
        self,
        context: Any,
        rp_uuid: str,
        *,
        name: str | None = None,
        parent_provider_uuid: str | None = None,
    ) -> Any:
        """A copy of the view (every tree this client keeps), ``rp_uuid``'s proven and ensured.

        nova's: no request while every provider of ``rp_uuid``'s tree was
        proven within ``[compute] resource_provider_association_refresh``;
        past it, one listing and one sharing-provider query prove it again,
        and only the fields they cannot prove are read (nova reads them all).
        ``rp_uuid`` is created when Placement has no such provider. Needs
        nova (it returns nova's ``ProviderTree``).

        :raises ResourceProviderCreationFailed: ``rp_uuid`` could not be created.
        :raises ResourceProviderRetrievalFailed: its tree could not be read.
        """
        return self._hand_out(context, rp_uuid, name, parent_provider_uuid, subtree=False)

    def get_provider_subtree_and_ensure_root(
        self,
        context: Any,
        rp_uuid: str,
        *,
        name: str | None = None,
        parent_provider_uuid: str | None = None,
    ) -> Any:
        """As :meth:`get_provider_tree_and_ensure_root`, the subtree at ``rp_uuid`` only.

        :raises ValueError: ``rp_uuid`` is not a root (as nova's ``subtree``).
        """
        return self._hand_out(context, rp_uuid, name, parent_provider_uuid, subtree=True)

    def _hand_out(
        self, context: Any, rp_uuid: str, name: str | None, parent: str | None, *, subtree: bool
    ) -> Any:
        """nova's tree (or ``rp_uuid``'s subtree) of the view, remembered as handed out."""
        view = self._ensured(context, rp_uuid, name, parent)
        tree = provider_tree_of(view)
        if subtree:
            tree = tree.subtree(rp_uuid)
        self._views.bind(tree, view)
        return tree

    def update_from_provider_tree(
        self, context: Any, new_tree: Any, allocations: Mapping[str, Any] | None = None
    ) -> None:
        """Flush what ``new_tree`` changes against the view, as nova's client does.

        Providers the view lacks are created, providers of the view (within
        a ``ProviderSubTree``'s scope) that ``new_tree`` lacks are deleted,
        and each inventory, aggregate set and trait set that differs from
        the view is written at the generation the view proved it at. A
        conflict reads that field again: when it still holds what the view
        showed, the write goes ahead from there (an allocation moved the
        generation, nothing else); when another writer changed it, nothing
        is written and nova's conflict is raised, so nova's tracker reads a
        fresh tree. With ``allocations``, inventories and allocations move
        in one ``POST /reshaper`` at ``new_tree``'s generations.

        :raises ResourceProviderUpdateConflict: another writer changed a
            field to write since the view showed it.
        :raises InventoryInUse: an inventory to remove or shrink is allocated.
        :raises PlacementReshapeConflict: the reshape met a moved generation
            (the whole view is dropped, as nova clears its cache).
        :raises ReshapeFailed: Placement refused the reshape.
        :raises ResourceProviderSyncFailed: any other refusal.
        """
        rid = request_id(context)
        views = self._views
        specs = specs_of(new_tree)
        scope = getattr(new_tree, "scope_rp_uuid", None)
        anchor = scope or (specs[0].uuid if specs else "")
        # What the tree carries: its handout's generations, None for what it added.
        carried = {uuid: new_tree.data(uuid).generation for uuid in new_tree.get_provider_uuids()}
        with self._syncing(anchor):
            plan = views.plan(
                specs, scope=scope, request_id=rid, holder=new_tree, generations=carried
            )
        with self._syncing(anchor, "create"):
            views.create(plan, request_id=rid)
        if allocations is not None:
            # A provider the tree added carries no generation (nova stuffs the
            # created one in); the view's is used for those.
            generations = {uuid: gen for uuid, gen in carried.items() if gen is not None}
            self._flush_reshape(plan, generations, allocations, rid)
        with self._syncing(anchor):
            views.delete(plan, request_id=rid)
        for spec in reversed(plan.described):
            with self._syncing(spec.uuid, settle=(plan, new_tree)):
                views.write(plan, spec.uuid, request_id=rid)
        with self._syncing(anchor):
            views.settle(plan, holder=new_tree, request_id=rid)

    @contextlib.contextmanager
    def _syncing(
        self, rp_uuid: str, step: str = "write", settle: tuple[Any, Any] | None = None
    ) -> Iterator[None]:
        """nova's ``catch_all``: its errors for a flush step, the tree around ``rp_uuid`` dropped.

        A conflict is nova's ``ResourceProviderUpdateConflict`` (its tracker
        reads a fresh tree and flushes again), ``InventoryInUse`` is raised
        as nova's own, anything else Placement refused is
        ``ResourceProviderSyncFailed``. nova clears its cache for the tree
        on either; the view is dropped on a refusal only: a conflict already
        read again the field it was about (the view holds it as Placement
        does now), and everything else the view holds is as proven as it was.
        """
        try:
            yield
        except InventoryInUse as exc:
            fail("InventoryInUse", exc, str(exc.detail or exc))
        except PlacementError as exc:
            if situation(exc) not in (Situation.CONFLICT, Situation.CONSUMER_CONFLICT):
                self._drop_tree(rp_uuid)
            elif settle is not None:
                # The conflict read the field: the tree's next flush (nova's
                # callers flush it again) starts from what Placement holds now.
                plan, holder = settle
                self._views.settle(plan, holder=holder, uuids=[rp_uuid], request_id=None)
            answer(
                f"update_from_provider_tree {step}",
                exc,
                rp_uuid=rp_uuid,
                name=rp_uuid,
                generation=_conflict_generation(self._views, rp_uuid),
            )

    def _drop_tree(self, rp_uuid: str) -> None:
        """Drop the tree ``rp_uuid`` is in from the view, as nova clears its cache for it."""
        shown = {rp.uuid: rp for rp, _sharing in self._views.shown()}
        found = shown.get(rp_uuid)
        while found is not None and found.parent_provider_uuid in shown:
            found = shown[found.parent_provider_uuid]
        self._views.invalidate(found.uuid if found is not None else rp_uuid)

    def _flush_reshape(
        self,
        plan: Any,
        generations: Mapping[str, int],
        allocations: Mapping[str, Any],
        rid: str | None,
    ) -> None:
        try:
            self._views.reshape(plan, generations, allocations, request_id=rid)
        except PlacementError as exc:
            if situation(exc) in (Situation.CONFLICT, Situation.CONSUMER_CONFLICT):
                # The allocations were computed from what nova read: nova reads
                # again (its tracker redrives), so nothing of the view is kept.
                self._views.clear()
            answer("update_from_provider_tree reshape", exc)
