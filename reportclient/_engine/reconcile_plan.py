"""Reconcile's plan: what a reconcile decides, from what it listed and knows, with no I/O.

The engine (:mod:`reportclient._engine.reconcile`) lists the trees, asks this
module what to do, does it, and asks again where an answer changes the plan
(a field read, a provider read again before its delete). Every decision is
here, as a function of the description, the listings and the snapshots known:

* **Providers** (:func:`provider_steps`): a described provider no listing
  holds is created; one listed with another name or parent is updated (and
  :func:`is_reparenting` says when that needs microversion 1.37: it has a
  parent and gets another one, or none); every other one is kept as it is.
* **What stands in for a read** (:func:`stand_in`): a cached snapshot of a
  field, only when the listing shows the provider at the snapshot's
  generation *and* the snapshot is young (taken within ``max_age`` of now).
  The generation alone never proves content: a provider deleted and
  re-created under its uuid by another writer can climb back to the cached
  number holding the other writer's content. Age counts from the request
  that proved the content; nothing re-stamps it.
* **What a write carries** (:func:`after_write`): a write moves the
  generation by one and changes only its own field, so every other field
  known at the old generation holds at the new one (as old as its proof);
  any other move means another writer, and nothing else is known.
* **What needs writing** (:func:`field_plans`, :func:`needs_write`,
  :func:`to_ensure`): each field the spec manages, how its content is
  computed (``merge`` adds, otherwise replaces), whether the start already
  holds it, and which custom classes or traits must exist first.
* **What is deleted** (:func:`prune_plan`, :func:`prune_verdict`,
  :func:`kept_by_refusal`): the listed providers no longer described that
  hang, after this call's updates, from a root the caller owns (a described
  root unless ``merge``, and every root named in ``delete_roots``), deepest
  first. The listings only nominate them: just before its DELETE each one is
  read again, and deleted only if that read still shows it under an owned
  root. One moved meanwhile into another tree (another agent's compute
  node) is left alone and reported moved; one gone is what was wanted. A
  doomed parent whose doomed child moved away is still deleted: it is
  re-read after the child (deepest first) and no longer has that child. One
  window stays open: a move between the re-read and the DELETE (one round
  trip), since Placement's DELETE of a provider carries no generation.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reportclient._gateway.gateway import Snapshot
from reportclient._model.provider_tree import ProviderSpec, ancestors, doomed_providers
from reportclient._model.providers import (
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ResourceProvider,
)

__all__ = [
    "FieldPlan",
    "Known",
    "PrunePlan",
    "PruneVerdict",
    "Step",
    "after_write",
    "field_plans",
    "is_reparenting",
    "kept_by_refusal",
    "needs_update",
    "needs_write",
    "provider_steps",
    "prune_plan",
    "prune_verdict",
    "stand_in",
    "to_ensure",
    "young",
]

#: A field's snapshot and when the request that proved its content was
#: cached (None: unknown, usable in this call but never cached on).
Known = tuple[Snapshot, float | None]


# -- providers --------------------------------------------------------------------------


class Step(enum.Enum):
    """What a described provider needs, given the listings."""

    CREATE = "create"  # no listing holds it
    UPDATE = "update"  # listed with another name or parent
    KEEP = "keep"  # listed as described


def needs_update(spec: ProviderSpec, rp: ResourceProvider) -> bool:
    """Whether the provider as listed differs from ``spec`` in name or parent."""
    return rp.name != spec.name or rp.parent_provider_uuid != spec.parent


def is_reparenting(spec: ProviderSpec, rp: ResourceProvider) -> bool:
    """Whether making ``rp`` as ``spec`` moves a provider that has a parent (1.37+).

    A root may always become a child; a child may change parent, or become a
    root, only by re-parenting.
    """
    return rp.parent_provider_uuid is not None and rp.parent_provider_uuid != spec.parent


def provider_steps(
    specs: Sequence[ProviderSpec], listing: Mapping[str, ResourceProvider]
) -> tuple[tuple[ProviderSpec, Step], ...]:
    """Each spec with its step, in the description's order (parents first)."""
    steps: list[tuple[ProviderSpec, Step]] = []
    for spec in specs:
        rp = listing.get(spec.uuid)
        if rp is None:
            steps.append((spec, Step.CREATE))
        elif needs_update(spec, rp):
            steps.append((spec, Step.UPDATE))
        else:
            steps.append((spec, Step.KEEP))
    return tuple(steps)


# -- fields -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldPlan:
    """One field a spec manages: its kind, how its content is computed, the custom names it needs.

    ``compute`` maps the field's current value to the value wanted: with
    ``merge`` the union with what is described, otherwise exactly that.
    """

    kind: type[Snapshot]
    compute: Callable[[Any], Any]
    custom: tuple[str, ...]


def field_plans(spec: ProviderSpec, merge: bool) -> tuple[FieldPlan, ...]:
    """Each field ``spec`` manages (inventories, traits, aggregates, in that order)."""
    plans: list[FieldPlan] = []
    if spec.inventories is not None:
        # Normalized by describe(): every value is an Inventory.
        wanted: dict[str, Any] = dict(spec.inventories)
        plans.append(FieldPlan(ProviderInventories, _inventories(wanted, merge), _custom(wanted)))
    if spec.traits is not None:
        plans.append(FieldPlan(ProviderTraits, _names(spec.traits, merge), _custom(spec.traits)))
    if spec.aggregates is not None:
        plans.append(FieldPlan(ProviderAggregates, _names(spec.aggregates, merge), ()))
    return tuple(plans)


def needs_write(plan: FieldPlan, start: Snapshot) -> bool:
    """Whether the field, as ``start`` shows it, differs from what ``plan`` computes from it."""
    held: Any = start
    return not held.holds(plan.compute(start.value))


def to_ensure(plan: FieldPlan, start: Snapshot, ensured: Iterable[str]) -> list[str]:
    """The custom classes or traits to create before writing: named, not held, not yet ensured."""
    return sorted(set(plan.custom) - set(start.value) - set(ensured))


def young(taken_at: float, now: float, max_age: float) -> bool:
    """Whether content proven at ``taken_at`` is within ``max_age`` seconds of ``now``."""
    return now - taken_at <= max_age


def stand_in(
    entry: tuple[Snapshot, float] | None,
    listed_generation: int,
    *,
    now: float = 0.0,
    max_age: float | None = None,
) -> tuple[Snapshot, float] | None:
    """The cached ``entry`` if it may replace a read of its field, else None.

    It may only if the listing shows the provider at the snapshot's
    generation and, when ``max_age`` is given, the snapshot was taken within
    ``max_age`` of ``now``, whatever the generations say (a re-created
    provider can be back at the cached one). Without ``max_age`` the caller
    has already bounded the age (the cache's own ``ttl``, or a snapshot this
    call just created).
    """
    if entry is None or entry[0].generation != listed_generation:
        return None
    if max_age is not None and not young(entry[1], now, max_age):
        return None
    return entry


def after_write(
    known: Mapping[str, Known], generation: int, result: Snapshot, wrote: bool
) -> dict[str, Known]:
    """What is still known of the other fields once a field is at ``result``.

    Our own write from ``generation`` to ``generation + 1`` changed only its
    field: every other field known at ``generation`` holds at the new one,
    keeping the time its content was proven. Any other move of the
    generation is another writer's: nothing else is known any more.
    """
    if wrote and result.generation == generation + 1:
        return {
            route: (_at(snap, result.generation), taken)
            for route, (snap, taken) in known.items()
            if snap.generation == generation
        }
    if result.generation != generation:
        return {}
    return dict(known)


def _at(snap: Snapshot, generation: int) -> Snapshot:
    return dataclasses.replace(snap, generation=generation)


def _inventories(wanted: dict[str, Any], merge: bool) -> Callable[[Any], Any]:
    if merge:
        return lambda current: {**current, **wanted}
    return lambda _current: dict(wanted)


def _names(names: Iterable[str], merge: bool) -> Callable[[Any], Any]:
    wanted = set(names)
    if merge:
        return lambda current: set(current) | wanted
    return lambda _current: set(wanted)


def _custom(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(n for n in names if n.startswith("CUSTOM_"))


# -- deletes ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PrunePlan:
    """What the listings nominate for deletion; each is confirmed by a read before its DELETE.

    :param owned: the roots whose whole trees the caller owns.
    :param doomed: listed providers under an owned root and not described,
        nor hanging a described one; deepest first.
    :param parents: each listed provider's parent after this call's updates.
    """

    owned: frozenset[str]
    doomed: tuple[str, ...]
    parents: Mapping[str, str | None]


def prune_plan(
    specs: Sequence[ProviderSpec],
    listing: Mapping[str, ResourceProvider],
    delete_roots: Iterable[str],
    merge: bool,
) -> PrunePlan:
    """The deletions the listings (after this call's creates and updates) nominate.

    A root the description names is the caller's, with its tree, unless
    ``merge`` says the tree is shared; a root named in ``delete_roots`` is
    the caller's whatever ``merge`` says.
    """
    owned = set(delete_roots)
    if not merge:
        owned |= {s.uuid for s in specs if s.parent is None}
    parents = {uuid: rp.parent_provider_uuid for uuid, rp in listing.items()}
    doomed = doomed_providers(parents, {s.uuid for s in specs}, owned)
    return PrunePlan(frozenset(owned), tuple(doomed), parents)


class PruneVerdict(enum.Enum):
    """What a read just before its DELETE says about a doomed provider."""

    DELETE = "delete"  # still under an owned root: the caller's to delete
    MOVED = "moved"  # now in a tree the caller does not own: left alone, reported
    GONE = "gone"  # deleted by someone else: what was wanted


def prune_verdict(reread: ResourceProvider | None, owned: frozenset[str]) -> PruneVerdict:
    """The verdict on one doomed provider from its re-read (None: 404)."""
    if reread is None:
        return PruneVerdict.GONE
    if reread.root_provider_uuid in owned:
        return PruneVerdict.DELETE
    return PruneVerdict.MOVED


def kept_by_refusal(uuid: str, plan: PrunePlan) -> set[str]:
    """The doomed ancestors a refused DELETE of ``uuid`` keeps (they would be refused too)."""
    return ancestors(uuid, plan.parents) & set(plan.doomed)
