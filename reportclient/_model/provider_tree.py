"""A provider tree as an agent describes it, and what a reconcile did to make it so.

Every rule a description must meet is here, checked before any request:
one spec's own (:meth:`ProviderSpec.normalized`) and those of the specs
together (:func:`describe`: each uuid and each name once, no loops). So is
which listed providers a reconcile deletes (:func:`doomed_providers`): a
pure function of the trees, the description and the roots the caller owns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reportclient._model.providers import Inventory, inventories_of
from reportclient._model.validation import (
    validate_names,
    validate_provider_name,
    validate_uuid,
    validate_uuids,
)
from reportclient.errors import InvalidInput

__all__ = ["ProviderSpec", "ReconcileReport", "ancestors", "describe", "doomed_providers"]


@dataclass(frozen=True)
class ProviderSpec:
    """What one provider of a tree should be; a field left None is not managed.

    :param uuid: the provider's identity (stable across agents and restarts).
    :param name: 1 to 200 characters, unique in Placement.
    :param parent: the parent's uuid; None for the tree's root.
    :param inventories: resource class -> an :class:`Inventory`, a total,
        or a mapping of Inventory's fields (``total`` required).
    :param traits: trait names (a set or list, never one string).
    :param aggregates: aggregate uuids (a set or list, never one string).
    """

    uuid: str
    name: str
    parent: str | None = None
    inventories: Mapping[str, Inventory | int | Mapping[str, Any]] | None = None
    traits: Iterable[str] | None = None
    aggregates: Iterable[str] | None = None

    def normalized(self) -> ProviderSpec:
        """A validated copy: lower-case uuids, inventories as :class:`Inventory`, frozensets.

        :raises InvalidInput: a malformed uuid, parent or name; inventories
            that are not a mapping, or an entry with a bad class name, an
            unknown key, no ``total``, a field out of Placement's range or
            a negative capacity (:class:`Inventory`); traits or aggregates
            given as one string or with a malformed member.
        """
        uuid = validate_uuid(self.uuid, "uuid")
        try:
            name = validate_provider_name(self.name)
            inventories = None
            if self.inventories is not None:
                inventories = inventories_of(self.inventories, "inventories")
            traits = None if self.traits is None else validate_names(self.traits, "trait")
            aggregates = None
            if self.aggregates is not None:
                aggregates = validate_uuids(self.aggregates, "aggregate")
            parent = None if self.parent is None else validate_uuid(self.parent, "parent")
        except InvalidInput as exc:
            raise InvalidInput(f"ProviderSpec {uuid}: {exc.message}") from exc
        return ProviderSpec(uuid, name, parent, inventories, traits, aggregates)


def describe(specs: Iterable[ProviderSpec]) -> list[ProviderSpec]:
    """Validate a whole description; return its specs normalized, parents first.

    :raises InvalidInput: no spec, a malformed one, a uuid or a name given
        twice (Placement names are unique), or a loop of parents.
    """
    normalized = [spec.normalized() for spec in specs]
    if not normalized:
        raise InvalidInput("reconcile needs at least one ProviderSpec")
    for what, values in (
        ("uuid", [s.uuid for s in normalized]),
        ("name", [s.name for s in normalized]),
    ):
        twice = sorted(v for v, n in Counter(values).items() if n > 1)
        if twice:
            raise InvalidInput(f"each provider {what} may be described once, got twice: {twice}")
    return _parents_first(normalized)


def _parents_first(specs: Sequence[ProviderSpec]) -> list[ProviderSpec]:
    by_uuid = {s.uuid: s for s in specs}
    ordered: list[ProviderSpec] = []
    seen: set[str] = set()

    def visit(spec: ProviderSpec, path: tuple[str, ...]) -> None:
        if spec.uuid in seen:
            return
        if spec.uuid in path:
            raise InvalidInput(f"the described tree has a loop through {spec.uuid}")
        parent = by_uuid.get(spec.parent) if spec.parent else None
        if parent is not None:
            visit(parent, (*path, spec.uuid))
        seen.add(spec.uuid)
        ordered.append(spec)

    for spec in specs:
        visit(spec, ())
    return ordered


def ancestors(uuid: str, parents: Mapping[str, str | None]) -> set[str]:
    """Every provider ``uuid`` hangs from, by ``parents`` (provider -> its parent)."""
    out: set[str] = set()
    parent = parents.get(uuid)
    while parent is not None and parent not in out:
        out.add(parent)
        parent = parents.get(parent)
    return out


def doomed_providers(
    parents: Mapping[str, str | None], described: set[str], owned_roots: set[str]
) -> list[str]:
    """The listed providers to delete, deepest first: undescribed, in an owned root's tree.

    ``parents`` is each listed provider's parent after this call's updates;
    a provider's tree is found by walking it, never by the listing's
    ``root_provider_uuid``, which a re-parenting in this call made stale.
    A provider a described one hangs from is kept, described or not. A
    provider whose chain leaves the listings (hangs from a provider not
    listed) is in no owned tree and never deleted.
    """
    needed = set(described)  # and every provider a described one hangs from
    for uuid in described:
        needed |= ancestors(uuid, parents)
    depth: dict[str, int] = {}
    for uuid in parents:
        if uuid in needed:
            continue
        chain = [uuid]
        parent = parents.get(uuid)
        while parent is not None and parent in parents and parent not in chain:
            chain.append(parent)
            parent = parents.get(parent)
        if parent is None and chain[-1] in owned_roots:
            depth[uuid] = len(chain)
    return sorted(depth, key=lambda u: (-depth[u], u))


@dataclass(frozen=True)
class ReconcileReport:
    """What a reconcile did: every request it sent, and what it created, changed and deleted."""

    requests: int
    created: tuple[str, ...] = ()
    #: Providers renamed or re-parented (also one moved in from another tree).
    updated: tuple[str, ...] = ()
    #: Provider fields written, as (uuid, "inventories" | "traits" | "aggregates").
    written: tuple[tuple[str, str], ...] = ()
    #: Each provider's generation when the reconcile finished with it.
    generations: Mapping[str, int] = field(default_factory=dict)
    #: Providers deleted: children dropped from a described root's tree, and
    #: the trees of the roots named in ``delete_roots``; leaves first.
    deleted: tuple[str, ...] = ()
    #: True when the agent setting (``max_staleness``) trusted the tree this
    #: client last proved, within its window: nothing was listed or read.
    trusted: bool = False
    #: Providers the listings showed in an owned tree and the description
    #: dropped, but which a read just before their DELETE showed moved into a
    #: tree the caller does not own (re-parented by another writer): left
    #: alone, never deleted. Disjoint from ``deleted``; leaves first.
    moved: tuple[str, ...] = ()
