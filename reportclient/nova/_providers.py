"""The provider reads and deletes of nova's ``SchedulerReportClient``, on reportclient's engine.

The tree calls are :mod:`._trees` (nova's ``ProviderTree`` cache as a library
view), the field calls :mod:`._fields`; this module is the rest: reads by
uuid, name or tree, deletes, and the allocations of a node's tree.
"""

from __future__ import annotations

from typing import Any

from reportclient._engine.tree_views import SHARES_VIA_AGGREGATE
from reportclient._gateway.provider_records import parents_first
from reportclient._model.providers import ResourceProvider
from reportclient.errors import PlacementError, ProviderNotFound
from reportclient.nova._common import LOG, TraitInfo, request_id
from reportclient.nova._errors import answer, fail
from reportclient.nova._fields import FieldCalls
from reportclient.nova._trees import provider_tree_of, specs_of

__all__ = ["SHARES_VIA_AGGREGATE", "ProviderCalls", "provider_tree_of", "specs_of"]


#: The keys nova's ``populate_from_iterable`` and its callers read from a
#: provider dict, each the ResourceProvider attribute of that name.
_PROVIDER_KEYS = ("uuid", "name", "generation", "parent_provider_uuid", "root_provider_uuid")


def _provider_dict(rp: ResourceProvider) -> dict[str, Any]:
    """A provider as nova's ``populate_from_iterable`` and its callers read one."""
    return {key: getattr(rp, key) for key in _PROVIDER_KEYS}


class ProviderCalls(FieldCalls):
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
        for rp in reversed(parents_first(tree)):
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
