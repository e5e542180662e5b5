"""Inventories, traits and aggregates of a provider: each change one generation-guarded cycle.

The change is always expressed as what to do to the field (set one class,
add a trait), never as a whole value computed earlier, so a retry
recomputes it from the re-read and keeps what other writers did to the rest
of the field. :class:`~reportclient.providers.ProviderClient` inherits these.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import tenacity

from reportclient._engine.field_write import Field, FieldWrite, read_field
from reportclient._engine.guarded_write import run_attempts
from reportclient.cache import ConsumerCache
from reportclient.errors import InvalidInput, PlacementError
from reportclient.models import validate_uuid
from reportclient.provider_cache import ProviderCache
from reportclient.provider_models import (
    Inventory,
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    inventories_from,
    validate_standard_name,
)
from reportclient.transport import Transport, validate_request_id

__all__ = ["InventoryMutator", "ProviderFields"]

#: Given a copy of a provider's inventories, return what it should hold.
InventoryMutator = Callable[[dict[str, Inventory]], Mapping[str, Inventory]]


class ProviderFields:
    """The generation-guarded fields of providers, read and changed safely."""

    def __init__(
        self,
        transport: Transport,
        *,
        retry: tenacity.Retrying,
        cache_ttl: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        consumer_cache: ConsumerCache | None = None,
    ) -> None:
        self._transport = transport
        self._retry = retry
        self.cache = ProviderCache(cache_ttl, clock)
        # The client's consumer cache, which a reshape's allocation writes
        # keep right; a ProviderClient on its own keeps none.
        self._consumer_cache = consumer_cache if consumer_cache is not None else ConsumerCache(0)

    # -- inventories ---------------------------------------------------------
    def get_inventories(
        self, uuid: str, *, global_request_id: str | None = None
    ) -> ProviderInventories:
        """Read a provider's inventories and generation."""
        return self.read(ProviderInventories, uuid, global_request_id)

    def set_inventory(
        self,
        uuid: str,
        resource_class: str,
        inventory: Inventory | int | Mapping[str, Any],
        *,
        global_request_id: str | None = None,
    ) -> ProviderInventories:
        """Make one class's inventory ``inventory``; every other class stays as re-read.

        :raises InventoryInUse: the new capacity is below what is allocated; not retried.
        """
        rc = validate_standard_name(resource_class)
        inv = Inventory.of(inventory)

        def put(current: dict[str, Inventory]) -> dict[str, Inventory]:
            current[rc] = inv
            return current

        return self._change(ProviderInventories, uuid, put, True, global_request_id)

    def remove_inventory(
        self, uuid: str, resource_class: str, *, global_request_id: str | None = None
    ) -> ProviderInventories:
        """Remove one class's inventory, guarded by the generation (unlike ``DELETE``).

        :raises InventoryInUse: it has allocations; not retried.
        """
        rc = validate_standard_name(resource_class)

        def drop(current: dict[str, Inventory]) -> dict[str, Inventory]:
            current.pop(rc, None)
            return current

        return self._change(ProviderInventories, uuid, drop, True, global_request_id)

    def set_inventories(
        self,
        uuid: str,
        inventories: Mapping[str, Inventory | int | Mapping[str, Any]],
        *,
        global_request_id: str | None = None,
    ) -> ProviderInventories:
        """Replace all of a provider's inventories (classes not named are removed)."""
        wanted = {validate_standard_name(rc): Inventory.of(v) for rc, v in inventories.items()}
        return self._change(
            ProviderInventories, uuid, lambda _current: dict(wanted), True, global_request_id
        )

    def update_inventories(
        self,
        uuid: str,
        mutate: InventoryMutator,
        *,
        idempotent: bool = False,
        global_request_id: str | None = None,
    ) -> ProviderInventories:
        """Read-modify-write a provider's inventories with ``mutate``.

        ``mutate`` gets a copy of the inventories the write will replace and
        runs again on every attempt. Say ``idempotent=True`` only if applying
        it to its own result changes nothing: that lets a lost answer be
        settled by content; otherwise it raises :class:`OutcomeUnknown`
        whenever the generation cannot prove the write did not land.
        """
        if not callable(mutate):
            raise InvalidInput("mutate must be a function of the current inventories")

        def checked(current: dict[str, Inventory]) -> dict[str, Inventory]:
            return inventories_from(mutate(current), "update_inventories' mutate")

        return self._change(ProviderInventories, uuid, checked, idempotent, global_request_id)

    # -- traits ---------------------------------------------------------------
    def get_traits(self, uuid: str, *, global_request_id: str | None = None) -> ProviderTraits:
        """Read a provider's traits and generation."""
        return self.read(ProviderTraits, uuid, global_request_id)

    def add_traits(
        self, uuid: str, traits: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderTraits:
        """Add traits, keeping every trait the provider has (custom ones must exist)."""
        names = {validate_standard_name(t, "trait") for t in traits}
        return self._change(ProviderTraits, uuid, lambda cur: cur | names, True, global_request_id)

    def remove_traits(
        self, uuid: str, traits: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderTraits:
        """Remove traits, keeping every other trait the provider has."""
        names = {validate_standard_name(t, "trait") for t in traits}
        return self._change(ProviderTraits, uuid, lambda cur: cur - names, True, global_request_id)

    def set_traits(
        self, uuid: str, traits: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderTraits:
        """Make the provider's traits exactly ``traits``."""
        names = {validate_standard_name(t, "trait") for t in traits}
        return self._change(ProviderTraits, uuid, lambda _c: set(names), True, global_request_id)

    # -- aggregates -------------------------------------------------------------
    def get_aggregates(
        self, uuid: str, *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Read a provider's aggregates and generation."""
        return self.read(ProviderAggregates, uuid, global_request_id)

    def add_aggregates(
        self, uuid: str, aggregates: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Add the provider to aggregates, keeping its other memberships."""
        uuids = {validate_uuid(a, "aggregate") for a in aggregates}
        return self._change(
            ProviderAggregates, uuid, lambda cur: cur | uuids, True, global_request_id
        )

    def remove_aggregates(
        self, uuid: str, aggregates: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Remove the provider from aggregates, keeping its other memberships."""
        uuids = {validate_uuid(a, "aggregate") for a in aggregates}
        return self._change(
            ProviderAggregates, uuid, lambda cur: cur - uuids, True, global_request_id
        )

    def set_aggregates(
        self, uuid: str, aggregates: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Make the provider's aggregates exactly ``aggregates``."""
        uuids = {validate_uuid(a, "aggregate") for a in aggregates}
        return self._change(
            ProviderAggregates, uuid, lambda _c: set(uuids), True, global_request_id
        )

    # -- plumbing ---------------------------------------------------------------
    def change(
        self,
        kind: type[Field],
        uuid: str,
        compute: Callable[[Any], Any],
        *,
        idempotent: bool,
        start: Field | None = None,
        start_read: bool = True,
        global_request_id: str | None = None,
    ) -> tuple[Field, int, bool]:
        """Run one field change under the policy.

        :returns: the field as Placement holds it afterwards, the number of
            requests sent, and whether a write landed.

        The building block of :meth:`set_inventory` and friends, and of reconcile.
        """
        write = FieldWrite(
            self._transport,
            self.cache,
            kind,
            validate_uuid(uuid, "uuid"),
            compute,
            idempotent=idempotent,
            request_id=validate_request_id(global_request_id),
            start=start,
            start_read=start_read,
        )
        try:
            return run_attempts(write, self._retry), write.requests, write.wrote
        except PlacementError:
            self.cache.discard(write.uuid, kind)
            raise

    def _change(
        self,
        kind: type[Field],
        uuid: str,
        compute: Callable[[Any], Any],
        idempotent: bool,
        request_id: str | None,
    ) -> Field:
        return self.change(
            kind, uuid, compute, idempotent=idempotent, global_request_id=request_id
        )[0]

    def read(self, kind: type[Field], uuid: str, request_id: str | None = None) -> Field:
        """Read one field of a provider (and cache it)."""
        state = read_field(
            self._transport, kind, validate_uuid(uuid, "uuid"), validate_request_id(request_id)
        )
        self.cache.put(state)
        return state
