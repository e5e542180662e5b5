"""The provider calls of nova's ``SchedulerReportClient``, on reportclient's engine.

nova keeps a ``ProviderTree`` cache of what it believes Placement holds and
writes each field with the generation of that cache; a conflict clears the
cache and the resource tracker tries again at its next period. Here every
field write reads (or trusts for the client's ``cache_ttl``) the field it
changes and recomputes after a conflict, so ``update_from_provider_tree``
converges in one call. nova's objects are read by their public interface
only: a ``ProviderTree``'s ``get_provider_uuids()`` and ``data(uuid)``
(``uuid``, ``name``, ``generation``, ``parent_uuid``, ``inventory``,
``traits``, ``aggregates``), and a compute node's ``uuid``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

from reportclient._gateway import routes
from reportclient._model.provider_tree import ProviderSpec
from reportclient._model.providers import Inventory, ResourceProvider
from reportclient._model.reshape import Reshape, ReshapeState
from reportclient.errors import (
    GenerationConflict,
    InventoryInUse,
    PlacementError,
    ProviderInUse,
    ProviderNotFound,
)
from reportclient.nova._common import LOG, Base, TraitInfo, nova_module, request_id
from reportclient.nova._errors import fail

__all__ = ["SHARES_VIA_AGGREGATE", "ProviderCalls", "specs_of"]

#: The trait of a provider that shares its inventory with its aggregates' members.
SHARES_VIA_AGGREGATE = "MISC_SHARES_VIA_AGGREGATE"


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
            fail("ResourceProviderTraitRetrievalFailed", exc, uuid=rp_uuid)
        return TraitInfo(traits=set(got.traits), generation=got.generation)

    def get_resource_provider_name(self, context: Any, uuid: str) -> str:
        """The provider's name, read from Placement.

        :raises ResourceProviderNotFound: it does not exist.
        """
        try:
            rp = self._placement.providers.get_provider(uuid, global_request_id=request_id(context))
        except ProviderNotFound as exc:
            fail("ResourceProviderNotFound", exc, name_or_uuid=uuid)
        return rp.name

    def get_providers_in_tree(self, context: Any, uuid: str) -> list[dict[str, Any]]:
        """Every provider of ``uuid``'s tree as a dict; [] when there is none.

        :raises ResourceProviderRetrievalFailed: Placement answered with an error.
        """
        try:
            rps = self._placement.providers.list_providers(
                in_tree=uuid, global_request_id=request_id(context)
            )
        except PlacementError as exc:
            fail("ResourceProviderRetrievalFailed", exc, uuid=uuid)
        return [_provider_dict(rp) for rp in rps]

    def get_provider_by_name(self, context: Any, name: str) -> dict[str, Any]:
        """The provider named ``name`` as a dict.

        :raises ResourceProviderNotFound: no provider has that name.
        """
        rps = self._placement.providers.list_providers(
            name=name, global_request_id=request_id(context)
        )
        if not rps:
            fail(
                "ResourceProviderNotFound",
                ProviderNotFound(f"no provider {name}"),
                name_or_uuid=name,
            )
        return _provider_dict(rps[0])

    # -- trees -------------------------------------------------------------------------
    def _ensure(self, context: Any, rp_uuid: str, name: str | None, parent: str | None) -> None:
        rid = request_id(context)
        try:
            self._placement.providers.get_provider(rp_uuid, global_request_id=rid)
        except ProviderNotFound:
            try:
                self._placement.providers.create_provider(
                    name or rp_uuid,
                    uuid=rp_uuid,
                    parent_provider_uuid=parent,
                    global_request_id=rid,
                )
            except PlacementError as exc:
                fail("ResourceProviderCreationFailed", exc, name=name or rp_uuid)

    def _tree(self, context: Any, rp_uuid: str) -> Any:
        """A new nova ``ProviderTree`` of ``rp_uuid``'s tree as Placement has it.

        As nova's, it also holds the sharing providers (trait
        ``MISC_SHARES_VIA_AGGREGATE``) of the tree's aggregates, as roots.
        """
        tree = nova_module("nova.compute.provider_tree").ProviderTree()
        rid = request_id(context)
        providers = self._placement.providers
        rps = providers.list_providers(in_tree=rp_uuid, global_request_id=rid)
        tree.populate_from_iterable([_provider_dict(rp) for rp in rps])
        aggregates = self._fill(tree, rps, rid)
        if aggregates:
            sharing = [
                rp
                for rp in providers.list_providers(
                    member_of=sorted(aggregates),
                    required=[SHARES_VIA_AGGREGATE],
                    global_request_id=rid,
                )
                if not tree.exists(rp.uuid) and rp.parent_provider_uuid is None
            ]
            tree.populate_from_iterable([_provider_dict(rp) for rp in sharing])
            self._fill(tree, sharing, rid)
        return tree

    def _fill(self, tree: Any, rps: Iterable[ResourceProvider], rid: str | None) -> set[str]:
        """Read each provider's fields into ``tree``; the aggregates they are in."""
        providers = self._placement.providers
        seen: set[str] = set()
        for rp in rps:
            inventories = providers.get_inventories(rp.uuid, global_request_id=rid)
            traits = providers.get_traits(rp.uuid, global_request_id=rid)
            aggregates = providers.get_aggregates(rp.uuid, global_request_id=rid)
            tree.update_inventory(
                rp.uuid,
                {rc: inv.to_json() for rc, inv in inventories.inventories.items()},
                generation=inventories.generation,
            )
            tree.update_traits(rp.uuid, set(traits.traits), generation=traits.generation)
            tree.update_aggregates(
                rp.uuid, set(aggregates.aggregates), generation=aggregates.generation
            )
            seen.update(aggregates.aggregates)
        return seen

    def get_provider_tree_and_ensure_root(
        self,
        context: Any,
        rp_uuid: str,
        *,
        name: str | None = None,
        parent_provider_uuid: str | None = None,
    ) -> Any:
        """A new nova ``ProviderTree`` of ``rp_uuid``'s tree, creating ``rp_uuid`` if missing.

        Needs nova (it returns nova's object).
        """
        self._ensure(context, rp_uuid, name, parent_provider_uuid)
        return self._tree(context, rp_uuid)

    def get_provider_subtree_and_ensure_root(
        self,
        context: Any,
        rp_uuid: str,
        *,
        name: str | None = None,
        parent_provider_uuid: str | None = None,
    ) -> Any:
        """As :meth:`get_provider_tree_and_ensure_root`, scoped to the subtree at ``rp_uuid``."""
        self._ensure(context, rp_uuid, name, parent_provider_uuid)
        return self._tree(context, rp_uuid).subtree(rp_uuid)

    def update_from_provider_tree(
        self, context: Any, new_tree: Any, allocations: Mapping[str, Any] | None = None
    ) -> None:
        """Make Placement hold ``new_tree``: providers, inventories, traits, aggregates.

        Providers of the described trees that ``new_tree`` no longer has are
        deleted (a ``ProviderSubTree`` deletes nothing outside itself and
        nothing inside it either: its scope is all it describes). With
        ``allocations`` (``{consumer: {"allocations": {rp: {"resources": ...}}}}``)
        inventories and those allocations move together in one
        ``POST /reshaper``, recomputed after a conflict.

        :raises ResourceProviderUpdateConflict: a field kept changing under the policy.
        :raises ResourceProviderSyncFailed: Placement refused a change.
        :raises ReshapeFailed: the reshape failed.
        """
        rid = request_id(context)
        providers = self._placement.providers
        scoped = hasattr(new_tree, "scope_rp_uuid")
        try:
            if allocations is not None:
                # Providers first (no inventory yet), then inventories and
                # allocations together, then what the reshape left to delete.
                providers.reconcile(
                    specs_of(new_tree, inventories=False), merge=True, global_request_id=rid
                )
                self._reshape_to(new_tree, allocations, rid)
            providers.reconcile(specs_of(new_tree), merge=scoped, global_request_id=rid)
        except GenerationConflict as exc:
            fail("ResourceProviderUpdateConflict", exc, uuid="", generation=-1, error=str(exc))
        except PlacementError as exc:
            fail("ResourceProviderSyncFailed", exc)

    def _reshape_to(self, new_tree: Any, allocations: Mapping[str, Any], rid: str | None) -> None:
        wanted: dict[str, dict[str, Inventory]] = {}
        for uuid in new_tree.get_provider_uuids():
            data = new_tree.data(uuid)
            wanted[uuid] = {rc: Inventory.of(inv) for rc, inv in data.inventory.items()}
            if data.parent_uuid is None:
                # A provider the tree dropped loses its inventory in the same
                # reshape (its allocations must move with it), as in nova.
                for rp in self._placement.providers.list_providers(
                    in_tree=uuid, global_request_id=rid
                ):
                    wanted.setdefault(rp.uuid, {})
        target = {
            consumer: {rp: dict(entry["resources"]) for rp, entry in record["allocations"].items()}
            for consumer, record in allocations.items()
        }

        classes = {rc for invs in wanted.values() for rc in invs}
        classes.update(rc for allocs in target.values() for res in allocs.values() for rc in res)
        for rc in sorted(classes):
            if rc.startswith("CUSTOM_"):
                self._placement.providers.ensure_resource_class(rc, global_request_id=rid)

        def compute(_state: ReshapeState) -> Reshape:
            return Reshape(inventories=wanted, allocations=target)

        try:
            self._placement.providers.reshape(wanted, target, compute, global_request_id=rid)
        except PlacementError as exc:
            fail("ReshapeFailed", exc, error=str(exc))

    # -- fields -------------------------------------------------------------------------
    def set_inventory_for_provider(
        self, context: Any, rp_uuid: str, inv_data: Mapping[str, Any]
    ) -> None:
        """Make the provider's inventories ``inv_data`` (custom classes created as needed).

        :raises InventoryInUse: a class with allocations would go or shrink below them.
        :raises ResourceProviderUpdateConflict: conflicts outlasted the retry policy.
        :raises ResourceProviderUpdateFailed: Placement refused the write.
        """
        rid = request_id(context)
        providers = self._placement.providers
        try:
            for rc in inv_data:
                if rc.startswith("CUSTOM_"):
                    providers.ensure_resource_class(rc, global_request_id=rid)
            providers.set_inventories(rp_uuid, dict(inv_data), global_request_id=rid)
        except InventoryInUse as exc:
            fail("InventoryInUse", exc, str(exc.detail or exc))
        except PlacementError as exc:
            _field_failure(exc, rp_uuid, "inventories", None)

    def set_traits_for_provider(
        self,
        context: Any,
        rp_uuid: str,
        traits: Iterable[str],
        generation: int | None = None,
    ) -> None:
        """Make the provider's traits ``traits`` (custom traits created as needed).

        :param generation: nova's compare-and-swap: one write at it.
        :raises ResourceProviderUpdateConflict: the provider is not at
            ``generation`` (or, without one, conflicts outlasted the policy).
        :raises ResourceProviderUpdateFailed: Placement refused the write.
        """
        rid = request_id(context)
        providers = self._placement.providers
        names = set(traits)
        try:
            for trait in names:
                if trait.startswith("CUSTOM_"):
                    providers.ensure_trait(trait, global_request_id=rid)
            providers.set_traits(rp_uuid, names, generation=generation, global_request_id=rid)
        except PlacementError as exc:
            _field_failure(exc, rp_uuid, "traits", generation)

    def set_aggregates_for_provider(
        self,
        context: Any,
        rp_uuid: str,
        aggregates: Iterable[str],
        use_cache: bool = True,
        generation: int | None = None,
    ) -> None:
        """Make the provider's aggregates ``aggregates`` (``use_cache`` is accepted, unused).

        :raises ResourceProviderUpdateConflict: as for :meth:`set_traits_for_provider`.
        :raises ResourceProviderUpdateFailed: Placement refused the write.
        """
        del use_cache  # the client's cache_ttl decides what is trusted
        try:
            self._placement.providers.set_aggregates(
                rp_uuid,
                set(aggregates),
                generation=generation,
                global_request_id=request_id(context),
            )
        except PlacementError as exc:
            _field_failure(exc, rp_uuid, "aggregates", generation)

    def _host_provider(self, context: Any, host_name: str | None, rp_uuid: str | None) -> str:
        if rp_uuid is not None:
            return rp_uuid
        return str(self.get_provider_by_name(context, host_name or "")["uuid"])

    def aggregate_add_host(
        self, context: Any, agg_uuid: str, host_name: str | None = None, rp_uuid: str | None = None
    ) -> None:
        """Add the host's provider to an aggregate, keeping its other memberships.

        :raises ResourceProviderNotFound: no provider is named ``host_name``.
        """
        rp = self._host_provider(context, host_name, rp_uuid)
        self._placement.providers.add_aggregates(
            rp, [agg_uuid], global_request_id=request_id(context)
        )

    def aggregate_remove_host(self, context: Any, agg_uuid: str, host_name: str) -> None:
        """Remove the host's provider from an aggregate, keeping its other memberships.

        :raises ResourceProviderNotFound: no provider is named ``host_name``.
        """
        rp = self._host_provider(context, host_name, None)
        self._placement.providers.remove_aggregates(
            rp, [agg_uuid], global_request_id=request_id(context)
        )

    # -- deletes ------------------------------------------------------------------------
    def delete_resource_provider(
        self, context: Any, compute_node: Any, cascade: bool = False
    ) -> None:
        """Delete the compute node's provider; with ``cascade``, its consumers' allocations first.

        A provider already gone is not an error, as in nova.

        :raises ResourceProviderInUse: allocations remain (without ``cascade``).
        """
        try:
            self._placement.providers.delete_provider(
                compute_node.uuid, cascade=cascade, global_request_id=request_id(context)
            )
        except ProviderNotFound:
            LOG.debug("provider %s was already deleted", compute_node.uuid)
        except ProviderInUse as exc:
            fail("ResourceProviderInUse", exc)
        except PlacementError as exc:
            fail("ResourceProviderDeletionFailed", exc, uuid=compute_node.uuid)

    def get_allocations_for_provider_tree(self, context: Any, nodename: str) -> dict[str, Any]:
        """``{consumer: get_allocs_for_consumer(...)}`` for every consumer in the node's tree.

        :raises ValueError: no provider is named ``nodename`` (as nova).
        """
        rid = request_id(context)
        providers = self._placement.providers
        named = providers.list_providers(name=nodename, global_request_id=rid)
        if not named:
            raise ValueError(f"No provider with name {nodename!r}")
        root = named[0].root_provider_uuid or named[0].uuid
        consumers: set[str] = set()
        for held in providers.get_tree_allocations(root, global_request_id=rid).values():
            consumers.update(held.allocations)
        return {c: self.get_allocs_for_consumer(context, c) for c in consumers}

    def get_allocs_for_consumer(self, context: Any, consumer: str) -> dict[str, Any]:
        raise NotImplementedError  # provided by AllocationCalls
