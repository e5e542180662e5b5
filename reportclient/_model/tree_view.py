"""A provider-tree view: immutable, the way nova's ``ProviderTree.data(uuid)`` hands a provider out.

What :class:`~reportclient._engine.tree_views.TreeViews` answers: every
provider it keeps, with its name, parent, one generation and the three
fields, each proven by an answer of the gateway at that generation. Values
only; the rules for when a view may be handed out without a request are the
engine's (:mod:`reportclient._engine.view_plan`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from reportclient._model.providers import Inventory

__all__ = ["ProviderView", "TreeView"]


@dataclass(frozen=True, slots=True)
class ProviderView:
    """One provider as a view holds it.

    :param parent: as the view presents it: a sharing provider of a tree's
        aggregates is presented as a root (``sharing`` True), as nova's
        resource tracker sees it, whatever its parent in Placement.
    :param generation: the one generation all three fields were proven at.
    """

    uuid: str
    name: str
    parent: str | None
    generation: int
    inventories: Mapping[str, Inventory] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    sharing: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "inventories", MappingProxyType(dict(self.inventories)))


@dataclass(frozen=True, slots=True)
class TreeView:
    """The providers a view keeps, parents before children, each root followed by its tree."""

    providers: tuple[ProviderView, ...] = ()

    def __iter__(self) -> Iterator[ProviderView]:
        return iter(self.providers)

    def __len__(self) -> int:
        return len(self.providers)

    def __contains__(self, uuid: object) -> bool:
        return any(p.uuid == uuid for p in self.providers)

    def get(self, uuid: str) -> ProviderView | None:
        """The provider ``uuid``, or None when the view does not hold it."""
        return next((p for p in self.providers if p.uuid == uuid), None)

    @property
    def uuids(self) -> list[str]:
        """Every provider's uuid, parents first."""
        return [p.uuid for p in self.providers]

    def subtree(self, uuid: str) -> TreeView:
        """``uuid`` and its descendants (an empty view when it holds no ``uuid``)."""
        inside = {uuid}
        kept = []
        for p in self.providers:
            if p.uuid == uuid or p.parent in inside:
                inside.add(p.uuid)
                kept.append(p)
        return TreeView(tuple(kept))

    def tree_of(self, uuid: str) -> TreeView:
        """The whole tree ``uuid`` is in, from its root (as the view presents parents)."""
        by_uuid = {p.uuid: p for p in self.providers}
        root = by_uuid.get(uuid)
        while root is not None and root.parent is not None and root.parent in by_uuid:
            root = by_uuid[root.parent]
        return TreeView() if root is None else self.subtree(root.uuid)
