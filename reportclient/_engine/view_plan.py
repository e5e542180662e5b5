"""What a tree view decides, with no I/O: staleness, and what a flush writes against which base.

A tree view (:mod:`.tree_views`) keeps providers the way nova's report
client keeps its ``ProviderTree``: handed out without a request while its
refresh window lasts, proven again past it. Every decision it makes is a
function here, tabled in ``tests/unit/engine/test_view_plan.py``:

* **Stale** (:func:`stale`): nova's ``_associations_stale``, whose option
  (``[compute] resource_provider_association_refresh``) the window follows:
  never proven is stale; a window of 0 never goes stale once proven; any
  other window goes stale that many seconds after the proof.
* **What a listing proves**, past the window: :mod:`.proofs`, shared with
  the agent setting (every write Placement accepts, and which of them no
  listing sees).
* **One generation per provider** (:class:`~reportclient.ProviderView`): the
  newest its fields were proven at, as nova's cache keeps one. Each field
  keeps its own underneath: a flush writes a field at the generation its
  content was proven at, never at the provider's newest (a field proven at
  a lower one may have been changed by another writer since).
* **A flush** (:func:`flush_plan`, :func:`field_writes`): what the caller's
  tree adds (parents first), removes (leaves first, within its scope) and
  which fields differ from the view; only those are written, each at the
  generation the view proved it at (three-way: :mod:`.tree_views`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reportclient._gateway.gateway import Snapshot
from reportclient._model.provider_tree import ProviderSpec
from reportclient._model.providers import ProviderAggregates, ProviderInventories, ProviderTraits
from reportclient._model.tree_view import ProviderView, TreeView

__all__ = [
    "FLUSH_ORDER",
    "Bases",
    "FlushPlan",
    "base_of",
    "field_writes",
    "flush_plan",
    "stale",
    "view_value",
]

#: The order nova's ``update_from_provider_tree`` writes a provider's fields in.
FLUSH_ORDER: tuple[type[Snapshot], ...] = (ProviderInventories, ProviderAggregates, ProviderTraits)


def stale(refreshed_at: float | None, now: float, window: float) -> bool:
    """Whether a provider proven at ``refreshed_at`` (None: never) must be proven again.

    nova's rule for ``resource_provider_association_refresh``: 0 means a
    provider proven once is never refreshed (until its cache is cleared).
    """
    if refreshed_at is None:
        return True
    if window == 0:
        return False
    return now - refreshed_at > window


@dataclass(frozen=True)
class Bases:
    """What each provider of a caller's tree was computed from, as the view knows it.

    :param bound: the providers as handed out in the very object being
        flushed (:meth:`~.handouts.Handouts.bound`); None: a copy, or a
        tree the view never handed out.
    :param carried: the generation the caller's tree carries for each
        provider (None: it says none, as a tree built by hand or a provider
        it added).
    :param handed: for each provider with a carried generation, what the
        view showed at that generation, and whether two showings there differed.
    :param last: each provider as this view last handed it out or flushed it.
    """

    bound: Mapping[str, ProviderView] | None = None
    carried: Mapping[str, int | None] = field(default_factory=dict)
    handed: Mapping[str, tuple[ProviderView | None, bool]] = field(default_factory=dict)
    last: Mapping[str, ProviderView] = field(default_factory=dict)


def base_of(uuid: str, bases: Bases, current: ProviderView | None) -> ProviderView | None:
    """The provider ``uuid`` as the caller's tree saw it; None when that cannot be known.

    The object handed out knows its own base. A tree that carries no
    generation (built by hand, flushed before) starts from what this view
    last handed out or flushed, as nova's cache would, else from the view.
    One that carries a generation starts from what the view showed at it,
    or from the view when it is at that generation now; at any other
    generation it is a stale view (older than Placement's provider, or from
    elsewhere), never a licence to overwrite.
    """
    if bases.bound is not None and uuid in bases.bound:
        return bases.bound[uuid]
    carried = bases.carried.get(uuid)
    if carried is None:
        return bases.last.get(uuid) or current
    handed, ambiguous = bases.handed.get(uuid, (None, False))
    if handed is not None and not ambiguous:
        return handed
    if current is not None and current.generation == carried:
        return current
    return None


@dataclass(frozen=True)
class FlushPlan:
    """What a flush does to the providers themselves, and what it compares with.

    :param described: the caller's description, normalized, parents first.
    :param old: what the caller's tree was computed from (:func:`base_of`),
        each field's base for the three-way write: what differs from it is
        the caller's change.
    :param add: described providers the view does not hold, parents first.
    :param remove: providers the caller's tree saw in the flush's scope that
        the description no longer holds, leaves first.
    :param stale: providers whose base cannot be known (a stale view) and
        that the flush would write or remove: nothing may be written.
    :param ensured: (route, name) of the custom classes and traits this
        flush made sure exist (filled as it goes, so each is ensured once; a
        trait and a class may share a name).
    """

    described: tuple[ProviderSpec, ...]
    old: TreeView
    add: tuple[ProviderSpec, ...]
    remove: tuple[str, ...]
    stale: tuple[str, ...] = ()
    ensured: set[tuple[str, str]] = field(default_factory=set, compare=False)


def flush_plan(
    current: TreeView, new: Sequence[ProviderSpec], scope: str | None, bases: Bases | None = None
) -> FlushPlan:
    """What a flush of ``new`` creates, deletes and compares with, given the view ``current``.

    A provider the view holds that the description lacks is removed only
    if the caller's tree saw it: handed out in that very object (one another
    writer added since is not the caller's to remove, and is kept), or, for
    a tree judged by its generations, shown by this view before (otherwise
    nobody can say, and the plan is :attr:`~FlushPlan.stale`). So is one
    whose base is unknown and that the flush would write.

    :param scope: a root: the flush describes that subtree only, and
        removes nothing outside it (nova's ``ProviderSubTree``); None: it
        describes every provider the view holds.
    :param bases: what the caller's tree was computed from (None: the view as it is).
    """
    bases = Bases() if bases is None else bases
    held = current.subtree(scope).uuids if scope is not None else current.uuids
    wanted = {spec.uuid for spec in new}
    add = tuple(spec for spec in new if spec.uuid not in current)
    old: list[ProviderView] = []
    stale: list[str] = []
    for spec in new:
        now = current.get(spec.uuid)
        if now is None:
            continue
        base = base_of(spec.uuid, bases, now)
        if base is None:
            if field_writes(now, spec):
                stale.append(spec.uuid)
        else:
            old.append(base)
    remove = []
    for uuid in reversed(held):
        if uuid in wanted:
            continue
        seen = bases.bound.get(uuid) if bases.bound is not None else bases.last.get(uuid)
        if seen is not None:
            remove.append(uuid)
            old.append(seen)
        elif bases.bound is None:
            stale.append(uuid)  # never shown to the caller: did its tree ever see it?
        # else another writer added it after the handout: not the caller's to remove
    return FlushPlan(tuple(new), TreeView(tuple(old)), add, tuple(remove), tuple(stale))


def view_value(provider: ProviderView, kind: type[Snapshot]) -> Any:
    """The field ``kind`` of a provider as the view holds it."""
    if kind is ProviderInventories:
        return dict(provider.inventories)
    if kind is ProviderTraits:
        return set(provider.traits)
    return set(provider.aggregates)


def spec_value(spec: ProviderSpec, kind: type[Snapshot]) -> Any:
    """The field ``kind`` as ``spec`` describes it (None: not managed)."""
    if kind is ProviderInventories:
        return None if spec.inventories is None else dict(spec.inventories)
    if kind is ProviderTraits:
        return None if spec.traits is None else set(spec.traits)
    return None if spec.aggregates is None else set(spec.aggregates)


def field_writes(held: ProviderView, spec: ProviderSpec) -> list[tuple[type[Snapshot], Any]]:
    """The fields of a normalized ``spec`` that differ from the view's ``held``, in nova's order."""
    out = []
    for kind in FLUSH_ORDER:
        wanted = spec_value(spec, kind)
        if wanted is not None and wanted != view_value(held, kind):
            out.append((kind, wanted))
    return out
