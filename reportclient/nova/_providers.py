"""The provider calls of nova's ``SchedulerReportClient``, on reportclient's engine.

nova keeps a ``ProviderTree`` cache of what it believes Placement holds,
hands out copies of it to its resource tracker, and flushes the tree the
tracker hands back by writing only what differs from the cache, at the
cache's generations. Here that cache is a library view
(:class:`~reportclient.TreeViews`): kept from what the gateway proved, so
the answers that invalidate the client's caches invalidate it too, and
flushed three-way, so another writer's aggregate or trait written after the
tree was read is never removed (:mod:`reportclient._engine.tree_views`).
nova's objects are read by their public interface only: a ``ProviderTree``'s
``get_provider_uuids()`` and ``data(uuid)`` (``uuid``, ``name``,
``generation``, ``parent_uuid``, ``inventory``, ``traits``, ``aggregates``),
and a compute node's ``uuid``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NoReturn

from reportclient._engine.tree_views import SHARES_VIA_AGGREGATE, TreeViews
from reportclient._gateway import routes
from reportclient._model.provider_tree import ProviderSpec
from reportclient._model.providers import (
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ResourceProvider,
)
from reportclient._model.tree_view import TreeView
from reportclient.errors import (
    GenerationConflict,
    InventoryInUse,
    PlacementError,
    ProviderNotFound,
)
from reportclient.nova._common import LOG, Base, TraitInfo, nova_module, request_id
from reportclient.nova._errors import Situation, answer, fail, situation

__all__ = ["SHARES_VIA_AGGREGATE", "ProviderCalls", "provider_tree_of", "specs_of"]


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


def _parents_first(providers: list[ResourceProvider]) -> list[ResourceProvider]:
    """A tree listing, every parent before its children (Placement's order is not promised)."""
    known = {rp.uuid for rp in providers}
    out: list[ResourceProvider] = []
    placed: set[str] = set()
    todo = list(providers)
    while todo:
        rest = []
        for rp in todo:
            if (
                rp.parent_provider_uuid is None
                or rp.parent_provider_uuid not in known
                or rp.parent_provider_uuid in placed
            ):
                out.append(rp)
                placed.add(rp.uuid)
            else:
                rest.append(rp)
        if len(rest) == len(todo):
            out.extend(rest)
            break
        todo = rest
    return out


def _conflict_generation(views: TreeViews, uuid: str) -> int:
    """The generation nova's conflict names: the provider's as the view last recorded it."""
    record = next((rp for rp, _sharing in views.shown() if rp.uuid == uuid), None)
    return record.generation if record is not None else -1


#: The keys nova's ``populate_from_iterable`` and its callers read from a
#: provider dict, each the ResourceProvider attribute of that name.
_PROVIDER_KEYS = ("uuid", "name", "generation", "parent_provider_uuid", "root_provider_uuid")


def _provider_dict(rp: ResourceProvider) -> dict[str, Any]:
    """A provider as nova's ``populate_from_iterable`` and its callers read one."""
    return {key: getattr(rp, key) for key in _PROVIDER_KEYS}


def _field_failure(
    exc: PlacementError, rp_uuid: str, route: str, generation: int | None
) -> NoReturn:
    """nova's error for a field write: a conflict, or any other refusal."""
    if isinstance(exc, GenerationConflict):
        fail(
            "ResourceProviderUpdateConflict",
            exc,
            uuid=rp_uuid,
            generation=-1 if generation is None else generation,
            error=str(exc),
        )
    fail(
        "ResourceProviderUpdateFailed",
        exc,
        url=routes.provider_field(rp_uuid, route),
        error=str(exc),
    )


class ProviderCalls(Base):
    """Providers, their fields and trees, as nova calls them."""

    #: The view of the trees this client keeps (nova's ``_provider_tree``).
    _views: TreeViews

    # -- reads ------------------------------------------------------------------------
    def get_provider_traits(self, context: Any, rp_uuid: str) -> Any:
        """``TraitInfo(traits=set, generation=int)``.

        :raises ResourceProviderTraitRetrievalFailed: Placement answered with an error.
        """
        try:
            got = self._placement.providers.get_traits(
                rp_uuid, global_request_id=request_id(context)
            )
        except PlacementError as exc:
            return answer("get_provider_traits", exc, rp_uuid=rp_uuid)
        return TraitInfo(traits=set(got.traits), generation=got.generation)

    def get_resource_provider_name(self, context: Any, uuid: str) -> str:
        """The provider's name: the view's when it holds the provider, else read from Placement.

        :raises ResourceProviderNotFound: it does not exist.
        :raises ResourceProviderRetrievalFailed: Placement answered with another error.
        """
        held = self._shown(uuid)
        if held:
            return held[0].name
        try:
            rp = self._placement.providers.get_provider(uuid, global_request_id=request_id(context))
        except PlacementError as exc:
            name: str = answer("get_resource_provider_name", exc, rp_uuid=uuid, name_or_uuid=uuid)
            return name
        return rp.name

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

    def get_providers_in_tree(self, context: Any, uuid: str) -> list[dict[str, Any]]:
        """Every provider of ``uuid``'s tree as a dict; [] when there is none.

        :raises ResourceProviderRetrievalFailed: Placement answered with an error.
        """
        try:
            rps = self._placement.providers.list_providers(
                in_tree=uuid, global_request_id=request_id(context)
            )
        except PlacementError as exc:
            failed: list[dict[str, Any]] = answer("get_providers_in_tree", exc, rp_uuid=uuid)
            return failed
        return [_provider_dict(rp) for rp in rps]

    def get_provider_by_name(self, context: Any, name: str) -> dict[str, Any]:
        """The provider named ``name`` as a dict.

        :raises ResourceProviderNotFound: no provider has that name, or
            Placement answered with an error (as nova's).
        :raises PlacementAPIConnectFailure: Placement could not be reached.
        """
        try:
            rps = self._placement.providers.list_providers(
                name=name, global_request_id=request_id(context)
            )
        except PlacementError as exc:
            failed: dict[str, Any] = answer("get_provider_by_name", exc, name_or_uuid=name)
            return failed
        if not rps:
            fail(
                "ResourceProviderNotFound",
                ProviderNotFound(f"no provider {name}"),
                name_or_uuid=name,
            )
        return _provider_dict(rps[0])

    # -- trees: nova's ProviderTree cache, as a view kept by the library --------------------
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
        view = self._ensured(context, rp_uuid, name, parent_provider_uuid)
        tree = provider_tree_of(view)
        self._views.bind(tree, view)
        return tree

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
        view = self._ensured(context, rp_uuid, name, parent_provider_uuid)
        tree = provider_tree_of(view).subtree(rp_uuid)
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

    # -- fields: nova's set_*_for_provider, on the view ----------------------------------
    def _in_view(self, rp_uuid: str) -> None:
        """nova's ``ProviderTree.data``: its ``ValueError`` for a provider its cache lacks."""
        if not self._shown(rp_uuid):
            raise ValueError(f"No such provider {rp_uuid}")

    def _field_generation(self, rp_uuid: str) -> int | None:
        """The generation the view holds the provider at (for nova's conflict), if it does."""
        held = self._shown(rp_uuid)
        return held[0].generation if held else None

    def set_inventory_for_provider(
        self, context: Any, rp_uuid: str, inv_data: Mapping[str, Any] | None
    ) -> None:
        """Make the provider's inventories ``inv_data``, as nova's does on its cache.

        Nothing is sent when the view holds ``inv_data`` already; otherwise
        custom classes are ensured and the inventories written at the
        generation the view proved them at, read again and written from there
        after a conflict only when nobody else changed them.

        :raises ValueError: the provider is not in the view (as nova's cache).
        :raises InventoryInUse: a class with allocations would go or shrink below them.
        :raises ResourceProviderUpdateConflict: another writer changed them since.
        :raises ResourceProviderUpdateFailed: Placement refused the write.
        """
        self._in_view(rp_uuid)
        try:
            self._views.write_field(
                rp_uuid, ProviderInventories, dict(inv_data or {}), request_id=request_id(context)
            )
        except InventoryInUse as exc:
            fail("InventoryInUse", exc, str(exc.detail or exc))
        except PlacementError as exc:
            answer(
                "set_inventory_for_provider",
                exc,
                rp_uuid=rp_uuid,
                url=routes.provider_field(rp_uuid, "inventories"),
                generation=self._field_generation(rp_uuid),
            )

    def set_traits_for_provider(
        self,
        context: Any,
        rp_uuid: str,
        traits: Iterable[str],
        generation: int | None = None,
    ) -> None:
        """Make the provider's traits ``traits`` (custom traits created as needed), as nova's.

        Nothing is sent when the view holds them already. With nova's
        ``generation``: one write at it (a compare-and-swap); without: at the
        generation the view proved them at, three-way on a conflict.

        :raises ValueError: the provider is not in the view (as nova's cache).
        :raises ResourceProviderUpdateConflict: the provider is not at
            ``generation``, or another writer changed its traits since the view.
        :raises ResourceProviderUpdateFailed: Placement refused the write.
        """
        self._in_view(rp_uuid)
        names = set(traits)
        rid = request_id(context)
        try:
            if generation is None:
                self._views.write_field(rp_uuid, ProviderTraits, names, request_id=rid)
                return
            held = self._shown_view(rp_uuid)
            if held is not None and set(held.traits) == names:
                return
            providers = self._placement.providers
            for trait in sorted(names - set(held.traits if held else ())):
                if trait.startswith("CUSTOM_"):
                    providers.ensure_trait(trait, global_request_id=rid)
            providers.set_traits(rp_uuid, names, generation=generation, global_request_id=rid)
        except PlacementError as exc:
            answer(
                "set_traits_for_provider",
                exc,
                rp_uuid=rp_uuid,
                url=routes.provider_field(rp_uuid, "traits"),
                generation=generation
                if generation is not None
                else self._field_generation(rp_uuid),
            )

    def _shown_view(self, rp_uuid: str) -> Any:
        """The view's provider (its fields as proven), or None when the view lacks it."""
        return self._views.current().get(rp_uuid) if self._shown(rp_uuid) else None

    def set_aggregates_for_provider(
        self,
        context: Any,
        rp_uuid: str,
        aggregates: Iterable[str],
        use_cache: bool = True,
        generation: int | None = None,
    ) -> None:
        """Make the provider's aggregates ``aggregates``, as nova's does.

        With nova's ``generation``: one write at it, skipped when the view
        holds the provider at that generation with those aggregates (a
        conflict drops the provider from the view, as nova drops it from its
        cache). Without: the view's generation, three-way (``use_cache``).

        :raises ValueError: no ``generation`` and ``use_cache`` False, or the
            provider is not in the view (as nova's).
        :raises ResourceProviderUpdateConflict: as for :meth:`set_traits_for_provider`.
        :raises ResourceProviderUpdateFailed: Placement refused the write.
        """
        names = set(aggregates)
        rid = request_id(context)
        if generation is None and not use_cache:
            raise ValueError("generation is required with use_cache=False")
        try:
            if generation is None:
                self._in_view(rp_uuid)
                self._views.write_field(rp_uuid, ProviderAggregates, names, request_id=rid)
                return
            held = self._shown_view(rp_uuid)
            if held is not None and held.generation == generation and set(held.aggregates) == names:
                return
            self._placement.providers.set_aggregates(
                rp_uuid, names, generation=generation, global_request_id=rid
            )
        except PlacementError as exc:
            if isinstance(exc, GenerationConflict):
                self._views.invalidate(rp_uuid)
            answer(
                "set_aggregates_for_provider",
                exc,
                rp_uuid=rp_uuid,
                url=routes.provider_field(rp_uuid, "aggregates"),
                generation=generation
                if generation is not None
                else self._field_generation(rp_uuid),
            )

    def _host_provider(self, context: Any, host_name: str | None, rp_uuid: str | None) -> str:
        if rp_uuid is not None:
            return rp_uuid
        if host_name is None:
            raise ValueError("Either host_name or rp_uuid is required")
        return str(self.get_provider_by_name(context, host_name)["uuid"])

    def aggregate_add_host(
        self, context: Any, agg_uuid: str, host_name: str | None = None, rp_uuid: str | None = None
    ) -> None:
        """Add the host's provider to an aggregate, keeping its other memberships.

        nova's read and write (three requests with ``host_name``: the provider
        by name first), recomputed from a fresh read after a conflict.

        :raises ValueError: neither ``host_name`` nor ``rp_uuid``.
        :raises ResourceProviderNotFound: no provider is named ``host_name``.
        :raises ResourceProviderUpdateConflict: conflicts outlasted the policy.
        """
        rp = self._host_provider(context, host_name, rp_uuid)
        try:
            self._placement.providers.add_aggregates(
                rp, [agg_uuid], global_request_id=request_id(context)
            )
        except PlacementError as exc:
            answer(
                "aggregate_add_host",
                exc,
                rp_uuid=rp,
                name_or_uuid=host_name or rp,
                url=routes.provider_field(rp, "aggregates"),
            )

    def aggregate_remove_host(self, context: Any, agg_uuid: str, host_name: str) -> None:
        """Remove the host's provider from an aggregate, keeping its other memberships.

        :raises ResourceProviderNotFound: no provider is named ``host_name``.
        :raises ResourceProviderUpdateConflict: conflicts outlasted the policy.
        """
        rp = self._host_provider(context, host_name, None)
        try:
            self._placement.providers.remove_aggregates(
                rp, [agg_uuid], global_request_id=request_id(context)
            )
        except PlacementError as exc:
            answer(
                "aggregate_remove_host",
                exc,
                rp_uuid=rp,
                name_or_uuid=host_name,
                url=routes.provider_field(rp, "aggregates"),
            )

    # -- deletes ------------------------------------------------------------------------
    def delete_resource_provider(
        self, context: Any, compute_node: Any, cascade: bool = False
    ) -> None:
        """Delete the compute node's provider and its tree, leaves first, as nova's does.

        With ``cascade``, every consumer the node's provider holds
        allocations for loses them first (nova's forced deletes; nova finds
        those consumers in its database, the adapter in Placement). As
        nova's, a provider that cannot be deleted (in use, refused) is left,
        and one already gone is not an error.

        :raises ResourceProviderRetrievalFailed: the tree could not be read.
        :raises AllocationDeleteFailed: a cascading delete was refused.
        """
        rid = request_id(context)
        uuid = compute_node.uuid
        providers = self._placement.providers
        if cascade:
            try:
                held = providers.get_provider_allocations(uuid, global_request_id=rid)
            except ProviderNotFound:
                held = None
            except PlacementError as exc:
                answer("delete_resource_provider read", exc, rp_uuid=uuid)
                return
            for consumer in sorted(held.consumers if held is not None else ()):
                self.delete_allocation_for_instance(context, consumer, force=True)
        try:
            tree = providers.list_providers(in_tree=uuid, global_request_id=rid)
        except PlacementError as exc:
            answer("delete_resource_provider read", exc, rp_uuid=uuid)
            return
        for rp in reversed(_parents_first(tree)):
            try:
                providers.delete_provider(rp.uuid, global_request_id=rid)
            except ProviderNotFound:
                LOG.debug("provider %s was already deleted", rp.uuid)
            except PlacementError as exc:
                LOG.warning("provider %s not deleted: %s", rp.uuid, exc)
                answer("delete_resource_provider write", exc, rp_uuid=rp.uuid)
            self._views.invalidate(rp.uuid)

    def delete_allocation_for_instance(
        self, context: Any, uuid: str, consumer_type: str = "instance", force: bool = False
    ) -> bool | None:
        raise NotImplementedError  # provided by AllocationCalls

    def get_allocations_for_provider_tree(self, context: Any, nodename: str) -> dict[str, Any]:
        """``{consumer: get_allocs_for_consumer(...)}`` for every consumer of the node's providers.

        As nova's, the view alone says which providers are the node's (the
        node and what hangs from it): one read per provider, then one per
        consumer found.

        :raises ValueError: the view holds no provider of that name (as nova).
        :raises ResourceProviderAllocationRetrievalFailed: a provider's read failed.
        """
        held = self._shown(nodename)
        if not held:
            raise ValueError(f"No such provider {nodename}")
        consumers: set[str] = set()
        for rp in held:
            consumers.update(
                self.get_allocations_for_resource_provider(context, rp.uuid).allocations
            )
        return {c: self.get_allocs_for_consumer(context, c) for c in sorted(consumers)}

    def get_allocations_for_resource_provider(self, context: Any, rp_uuid: str) -> Any:
        raise NotImplementedError  # provided by AllocationCalls

    def get_allocs_for_consumer(self, context: Any, consumer: str) -> dict[str, Any]:
        raise NotImplementedError  # provided by AllocationCalls
