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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reportclient._gateway.gateway import Snapshot
from reportclient._model.provider_tree import ProviderSpec
from reportclient._model.providers import ProviderAggregates, ProviderInventories, ProviderTraits
from reportclient._model.tree_view import ProviderView, TreeView

__all__ = [
    "FLUSH_ORDER",
    "FlushPlan",
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
class FlushPlan:
    """What a flush does to the providers themselves, and what it compares with.

    :param described: the caller's description, normalized, parents first.
    :param old: the view as the flush found it: what the caller's tree was
        computed from, each field's base for the three-way write.
    :param add: described providers the view does not hold, parents first.
    :param remove: providers the view holds in the flush's scope that the
        description does not, leaves first.
    :param ensured: (route, name) of the custom classes and traits this
        flush made sure exist (filled as it goes, so each is ensured once; a
        trait and a class may share a name).
    """

    described: tuple[ProviderSpec, ...]
    old: TreeView
    add: tuple[ProviderSpec, ...]
    remove: tuple[str, ...]
    ensured: set[tuple[str, str]] = field(default_factory=set, compare=False)


def flush_plan(old: TreeView, new: Sequence[ProviderSpec], scope: str | None) -> FlushPlan:
    """The providers a flush of ``new`` creates and deletes, given the view ``old``.

    :param scope: a root: the flush describes that subtree only, and
        removes nothing outside it (nova's ``ProviderSubTree``); None: it
        describes every provider the view holds.
    """
    held = old.subtree(scope).uuids if scope is not None else old.uuids
    wanted = {spec.uuid for spec in new}
    add = tuple(spec for spec in new if spec.uuid not in old)
    remove = tuple(uuid for uuid in reversed(held) if uuid not in wanted)
    return FlushPlan(tuple(new), old, add, remove)


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
