"""A provider tree as an agent describes it, and what a reconcile did to make it so."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reportclient._model.providers import Inventory
from reportclient._model.validation import validate_standard_name, validate_uuid

__all__ = ["ProviderSpec", "ReconcileReport"]


@dataclass(frozen=True)
class ProviderSpec:
    """What one provider of a tree should be; a field left None is not managed.

    :param uuid: the provider's identity (stable across agents and restarts).
    :param parent: the parent's uuid; None for the tree's root.
    """

    uuid: str
    name: str
    parent: str | None = None
    inventories: Mapping[str, Inventory | int | Mapping[str, Any]] | None = None
    traits: Iterable[str] | None = None
    aggregates: Iterable[str] | None = None

    def normalized(self) -> ProviderSpec:
        """A copy with validated uuids and names, inventories as :class:`Inventory`."""
        inventories = traits = aggregates = None
        if self.inventories is not None:
            inventories = {
                validate_standard_name(rc): Inventory.of(v) for rc, v in self.inventories.items()
            }
        if self.traits is not None:
            traits = frozenset(validate_standard_name(t, "trait") for t in self.traits)
        if self.aggregates is not None:
            aggregates = frozenset(validate_uuid(a, "aggregate") for a in self.aggregates)
        parent = None if self.parent is None else validate_uuid(self.parent, "parent")
        return ProviderSpec(
            validate_uuid(self.uuid, "uuid"), self.name, parent, inventories, traits, aggregates
        )


@dataclass(frozen=True)
class ReconcileReport:
    """What a reconcile did: every request it sent, and what it created and changed."""

    requests: int
    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    #: Provider fields written, as (uuid, "inventories" | "traits" | "aggregates").
    written: tuple[tuple[str, str], ...] = ()
    #: Each provider's generation when the reconcile finished with it.
    generations: Mapping[str, int] = field(default_factory=dict)
