"""What a tree view holds: which trees it shows, when each provider was proven, and each
provider as the gateway's records and caches hold it.

:class:`ViewState` is the part of :class:`~.tree_views.TreeViews` every other
part reads: its own state is which roots it shows (nova's roots), when each
provider was last proven (nova's refresh times) and what it handed out
(:class:`~.handouts.Handouts`); everything a provider holds comes from the
gateway, so the view is invalidated by exactly the answers that invalidate
the caches. Proving a tree is :mod:`.tree_proof`, flushing one :mod:`.tree_flush`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from reportclient._engine.handouts import Handouts
from reportclient._engine.provider_ops import ProviderOps
from reportclient._engine.view_plan import stale
from reportclient._gateway.gateway import FIELD_KINDS, Snapshot
from reportclient._model.providers import (
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ResourceProvider,
)
from reportclient._model.tree_view import ProviderView, TreeView
from reportclient.errors import ProviderNotFound

__all__ = ["ViewState"]


class ViewState:
    """The trees one caller (one nova report client) keeps in view, and their refresh times.

    Thread-safe: its own state is small maps under one lock, released
    around every request; everything else is the gateway's.

    :param ops: the client's provider operations (its gateway, policy and contention memory).
    :param clock: the client's clock (seconds), for the refresh window.
    :param window: the refresh window in seconds, asked on every call (nova's
        option is mutable); 0: a proven provider is never refreshed.
    """

    def __init__(
        self, ops: ProviderOps, clock: Callable[[], float], window: Callable[[], float]
    ) -> None:
        self._ops = ops
        self._gateway = ops.gateway
        self._clock = clock
        self._window = window
        self._lock = threading.Lock()
        # Roots shown, in the order they came into view; True for a sharing
        # provider shown as a root (nova's new_root), whatever its parent.
        self._roots: dict[str, bool] = {}
        self._refreshed: dict[str, float] = {}
        self._handouts = Handouts()

    # -- what is in view ----------------------------------------------------------------
    def _track(self, root: str, *, sharing: bool = False) -> None:
        with self._lock:
            if root not in self._roots:
                self._roots[root] = sharing

    def _refresh(self, uuids: Iterable[str], at: float) -> None:
        with self._lock:
            for uuid in uuids:
                self._refreshed[uuid] = at

    def _stale(self, uuids: Iterable[str], now: float, window: float) -> bool:
        with self._lock:
            return any(stale(self._refreshed.get(u), now, window) for u in uuids)

    def refreshed(self) -> dict[str, float]:
        """Each provider's last proof, on the client's clock (nova's association refresh times)."""
        with self._lock:
            return dict(self._refreshed)

    def shown(self) -> list[tuple[ResourceProvider, bool]]:
        """Every provider in view as the gateway's records hold it, no request made.

        Each with whether it is a sharing provider shown as a root. A tree
        the gateway no longer knows whole contributes its root's record only.
        """
        with self._lock:
            roots = list(self._roots.items())
        out: list[tuple[ResourceProvider, bool]] = []
        seen: set[str] = set()
        for root, sharing in roots:
            members = None if sharing else self._gateway.tree_members(root)
            if members is None:
                record = self._gateway.provider_record(root)
                members = [] if record is None else [record]
            for rp in members:
                if rp.uuid not in seen:
                    seen.add(rp.uuid)
                    out.append((rp, sharing))
        return out

    def current(self, *, request_id: str | None = None) -> TreeView:
        """The view as kept: no request, but for what the gateway forgot since it was proven.

        A tree the gateway no longer knows whole is listed again; a field it
        forgot is read. Nothing else is proven again inside the window.
        """
        with self._lock:
            roots = list(self._roots.items())
        out: list[ProviderView] = []
        seen: set[str] = set()
        for root, sharing in roots:
            for rp in self._members(root, sharing, request_id):
                if rp.uuid in seen:
                    continue
                seen.add(rp.uuid)
                out.append(self._provider(rp, sharing, request_id))
        return TreeView(tuple(out))

    def _members(self, root: str, sharing: bool, request_id: str | None) -> list[ResourceProvider]:
        gateway = self._gateway
        if sharing:
            rp = gateway.provider_record(root)
            if rp is None:
                try:
                    rp = gateway.read_provider(root, request_id).providers[0]
                except ProviderNotFound:
                    self._drop_root(root)
                    return []
            return [rp]
        members = gateway.tree_members(root)
        if members is None:
            listing = gateway.list_tree(root, request_id)
            if not listing.providers:
                self._drop_root(root)
                return []
            members = gateway.tree_members(root) or listing.providers
        return members

    def _drop_root(self, root: str) -> None:
        with self._lock:
            self._roots.pop(root, None)
            self._refreshed.pop(root, None)

    def _provider(
        self, rp: ResourceProvider, sharing: bool, request_id: str | None
    ) -> ProviderView:
        """One provider as the view holds it, reading a field the cache forgot."""
        fields = self._fields(rp.uuid, request_id)
        inventories = fields[ProviderInventories.ROUTE]
        traits = fields[ProviderTraits.ROUTE]
        aggregates = fields[ProviderAggregates.ROUTE]
        assert isinstance(inventories, ProviderInventories)
        assert isinstance(traits, ProviderTraits)
        assert isinstance(aggregates, ProviderAggregates)
        # The newest generation any field was proven at. Each field keeps its
        # own: a flush writes it at the generation its content was proven at.
        return ProviderView(
            rp.uuid,
            rp.name,
            None if sharing else rp.parent_provider_uuid,
            max(inventories.generation, traits.generation, aggregates.generation),
            inventories.inventories,
            traits.traits,
            aggregates.aggregates,
            sharing,
        )

    def _fields(self, uuid: str, request_id: str | None) -> dict[str, Snapshot]:
        """The provider's three fields as cached, each read when the gateway forgot it."""
        cache, out = self._gateway.fields, {}
        for kind in FIELD_KINDS:
            entry = cache.entry(uuid, kind)
            out[kind.ROUTE] = entry[0] if entry is not None else self._read(kind, uuid, request_id)
        return out

    def _read(self, kind: type[Snapshot], uuid: str, request_id: str | None) -> Snapshot:
        # The union of field types is not a value of the TypeVar: Any bridges it.
        any_kind: Any = kind
        snapshot: Snapshot = self._ops.read(any_kind, uuid, request_id)
        return snapshot
