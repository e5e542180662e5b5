"""nova's ``set_*_for_provider`` and aggregate membership calls, on the adapter's view.

Each compares what nova asks for with the view (no request when it holds
it already), writes at the generation the view proved the field at, and on
a conflict reads the field again and writes from there only when nobody
else changed it. With nova's own ``generation``, a write goes once at it
(a compare-and-swap), as nova's does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reportclient._gateway import routes
from reportclient._model.providers import ProviderAggregates, ProviderInventories, ProviderTraits
from reportclient.errors import GenerationConflict, InventoryInUse, PlacementError
from reportclient.nova._common import request_id
from reportclient.nova._errors import answer, fail
from reportclient.nova._trees import TreeCalls

__all__ = ["FieldCalls"]


class FieldCalls(TreeCalls):
    """A provider's fields and aggregate memberships, as nova calls them."""

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
            self._refused("set_inventory_for_provider", exc, rp_uuid, "inventories", None)

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
            self._refused("set_traits_for_provider", exc, rp_uuid, "traits", generation)

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
            self._refused("set_aggregates_for_provider", exc, rp_uuid, "aggregates", generation)

    def _refused(
        self, method: str, exc: PlacementError, rp_uuid: str, route: str, generation: int | None
    ) -> None:
        """nova's error for a refused field write (its generation, else the view's)."""
        answer(
            method,
            exc,
            rp_uuid=rp_uuid,
            url=routes.provider_field(rp_uuid, route),
            generation=generation if generation is not None else self._field_generation(rp_uuid),
        )

    def get_provider_by_name(self, context: Any, name: str) -> dict[str, Any]:
        raise NotImplementedError  # provided by ProviderCalls

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
        self._membership("aggregate_add_host", context, agg_uuid, host_name, rp_uuid)

    def aggregate_remove_host(self, context: Any, agg_uuid: str, host_name: str) -> None:
        """Remove the host's provider from an aggregate, keeping its other memberships.

        :raises ResourceProviderNotFound: no provider is named ``host_name``.
        :raises ResourceProviderUpdateConflict: conflicts outlasted the policy.
        """
        self._membership("aggregate_remove_host", context, agg_uuid, host_name, None)

    def _membership(
        self,
        method: str,
        context: Any,
        agg_uuid: str,
        host_name: str | None,
        rp_uuid: str | None,
    ) -> None:
        """One aggregate added to (or removed from) the host's provider, as nova's ``method``."""
        rp = self._host_provider(context, host_name, rp_uuid)
        providers = self._placement.providers
        change = (
            providers.add_aggregates
            if method.endswith("add_host")
            else (providers.remove_aggregates)
        )
        try:
            change(rp, [agg_uuid], global_request_id=request_id(context))
        except PlacementError as exc:
            answer(
                method,
                exc,
                rp_uuid=rp,
                name_or_uuid=host_name or rp,
                url=routes.provider_field(rp, "aggregates"),
            )
