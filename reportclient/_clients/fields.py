"""A provider's inventories, traits and aggregates (part of ``PlacementClient.providers``).

Guarded by the provider generation: every change is a
:class:`~reportclient._engine.field_write.FieldWrite` (read the field,
compute the new value from it, write it with the generation read) run under
the client's retry policy by the same engine as allocation writes. The change
is always expressed as what to do to the field (set one class, add a trait),
never as a whole value computed earlier, so a retry recomputes it from the
re-read and keeps what other writers did to the rest of the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reportclient._clients.core import Core
from reportclient._engine.field_write import Field
from reportclient._engine.provider_ops import ProviderOps
from reportclient._model.providers import (
    Inventory,
    InventoryMutator,
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ProviderWrite,
    inventories_from,
    inventories_of,
)
from reportclient._model.validation import (
    validate_generation,
    validate_names,
    validate_standard_name,
    validate_uuid,
    validate_uuids,
)
from reportclient._wire.transport import validate_request_id
from reportclient.errors import InvalidInput

__all__ = ["FieldsClient"]


class FieldsClient:
    """Inventories, traits and aggregates, each change re-read and recomputed on conflict."""

    _core: Core
    _ops: ProviderOps

    # -- inventories ---------------------------------------------------------
    def get_inventories(
        self, uuid: str, *, global_request_id: str | None = None
    ) -> ProviderInventories:
        """Read a provider's inventories and generation."""
        return self._read(ProviderInventories, uuid, global_request_id)

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
        inv = inventories_of({rc: inventory}, "set_inventory's inventories")[rc]

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
        generation: int | None = None,
        global_request_id: str | None = None,
    ) -> ProviderInventories:
        """Replace all of a provider's inventories (classes not named are removed).

        :param generation: the provider generation the caller read; one
            write at it, never retried (module docstring).
        :raises GenerationConflict: with ``generation``, the provider is no
            longer at it.
        :raises InventoryInUse: a class with allocations would go or shrink below them.
        """
        wanted = inventories_of(inventories, "set_inventories' inventories")
        return self._replace(ProviderInventories, uuid, wanted, dict, generation, global_request_id)

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
        return self._read(ProviderTraits, uuid, global_request_id)

    def add_traits(
        self, uuid: str, traits: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderTraits:
        """Add traits, keeping every trait the provider has (custom ones must exist)."""
        names = validate_names(traits)
        return self._change(ProviderTraits, uuid, lambda cur: cur | names, True, global_request_id)

    def remove_traits(
        self, uuid: str, traits: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderTraits:
        """Remove traits, keeping every other trait the provider has."""
        names = validate_names(traits)
        return self._change(ProviderTraits, uuid, lambda cur: cur - names, True, global_request_id)

    def set_traits(
        self,
        uuid: str,
        traits: Iterable[str],
        *,
        generation: int | None = None,
        global_request_id: str | None = None,
    ) -> ProviderTraits:
        """Make the provider's traits exactly ``traits``.

        :param generation: as for :meth:`set_inventories`.
        :raises GenerationConflict: with ``generation``, the provider is no longer at it.
        """
        names = validate_names(traits)
        return self._replace(ProviderTraits, uuid, names, set, generation, global_request_id)

    # -- aggregates -------------------------------------------------------------
    # The traits' four methods again, on purpose: each is public with its own
    # names and member rule; what they share is _read, _change and _replace.
    def get_aggregates(
        self, uuid: str, *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Read a provider's aggregates and generation."""
        return self._read(ProviderAggregates, uuid, global_request_id)

    def add_aggregates(
        self, uuid: str, aggregates: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Add the provider to aggregates, keeping its other memberships."""
        uuids = validate_uuids(aggregates)
        return self._change(
            ProviderAggregates, uuid, lambda cur: cur | uuids, True, global_request_id
        )

    def remove_aggregates(
        self, uuid: str, aggregates: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Remove the provider from aggregates, keeping its other memberships."""
        uuids = validate_uuids(aggregates)
        return self._change(
            ProviderAggregates, uuid, lambda cur: cur - uuids, True, global_request_id
        )

    def set_aggregates(
        self,
        uuid: str,
        aggregates: Iterable[str],
        *,
        generation: int | None = None,
        global_request_id: str | None = None,
    ) -> ProviderAggregates:
        """Make the provider's aggregates exactly ``aggregates``.

        :param generation: as for :meth:`set_inventories`.
        :raises GenerationConflict: with ``generation``, the provider is no longer at it.
        """
        uuids = validate_uuids(aggregates)
        return self._replace(ProviderAggregates, uuid, uuids, set, generation, global_request_id)

    # -- one field change under the policy ------------------------------------------
    def _change(
        self,
        kind: type[Field],
        uuid: str,
        compute: Callable[[Any], Any],
        idempotent: bool,
        request_id: str | None,
    ) -> Field:
        return self._ops.change(
            kind,
            validate_uuid(uuid, "uuid"),
            compute,
            idempotent=idempotent,
            global_request_id=validate_request_id(request_id),
        )[0]

    def _replace(
        self,
        kind: type[Field],
        uuid: str,
        value: Any,
        fresh: Callable[[Any], Any],
        generation: int | None,
        request_id: str | None,
    ) -> Field:
        """Make the field exactly ``value`` (each ``set_*``).

        With the caller's ``generation``: one PUT at it. Without: a
        read-modify-write under the policy whose mutate returns ``fresh(value)``,
        a new copy on every attempt.
        """
        if generation is not None:
            return self._put_at(kind, uuid, generation, value, request_id)
        return self._change(kind, uuid, lambda _current: fresh(value), True, request_id)

    def _put_at(
        self, kind: type[Field], uuid: str, generation: int, value: Any, request_id: str | None
    ) -> Field:
        """One PUT of ``value`` at the caller's ``generation``; any error is raised."""
        snapshot = kind(validate_uuid(uuid, "uuid"), validate_generation(generation))
        write = ProviderWrite(snapshot.uuid, kind.ROUTE, snapshot.generation, snapshot.body(value))
        return self._core.gateway.put_field(kind, write, validate_request_id(request_id))

    def _read(self, kind: type[Field], uuid: str, request_id: str | None) -> Field:
        return self._core.gateway.read_field(
            kind, validate_uuid(uuid, "uuid"), validate_request_id(request_id)
        )
