"""What this client last saw of each provider itself, and which trees a listing proved whole.

The provider cache (:mod:`.provider_cache`) holds each provider's fields;
this one holds the providers: uuid, name, parent, root and the generation
the answer showed. A tree view (:mod:`reportclient._engine.tree_views`)
answers "which providers make up this tree" from here and "what does each
hold" from there, so it is invalidated by exactly the answers that
invalidate either. Only the gateway writes here.

The rules, each from what an answer proves:

* **An answer carrying a provider** (a listing, a read, a create, a rename)
  stores it, under the ticket taken before its request was sent. An answer
  that overlapped a later change stored for the same provider (or its
  forgetting) is dropped: a record is one read away, so it is never kept in
  doubt (the provider cache's ordering rule, with "doubt" spelled "drop").
* **A tree listing** (``?in_tree=``) proves the tree *whole* as of its
  answer: a provider recorded under that root that the listing does not
  show, and that was stored before the listing was sent, is gone or moved
  away, and is dropped.
* **A create** adds its provider; a tree stays whole when its new member is
  known, and a new root starts a whole tree of one.
* **A delete** drops the provider, answered or not, and so does a lost
  answer to a create, rename or delete, or a raw write naming it; a whole
  tree it was in stays whole only after an answered delete (its member is
  known to be gone). A rename or re-parent that moves a provider to another
  tree leaves neither tree whole: its descendants moved with it, unseen.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable

from reportclient._model.providers import ResourceProvider

__all__ = ["ProviderRecords", "parents_first"]


def _root(rp: ResourceProvider) -> str:
    return rp.root_provider_uuid or rp.uuid


class ProviderRecords:
    """Thread-safe map of provider uuid to its last record, and the set of trees known whole."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, ResourceProvider] = {}
        self._whole: set[str] = set()
        self._tickets = itertools.count(1)
        # When each provider (or tree root, for wholeness) was last stored or dropped.
        self._stored: dict[str, int] = {}
        self._floor = 0

    def ticket(self) -> int:
        """A ticket to take just before sending a request whose answer will be stored."""
        return next(self._tickets)

    def _overlapped(self, uuid: str, sent: int | None) -> bool:
        return sent is not None and sent < self._stored.get(uuid, self._floor)

    def _put(self, rp: ResourceProvider, sent: int | None) -> bool:
        if self._overlapped(rp.uuid, sent):
            return False
        old = self._records.get(rp.uuid)
        if old is not None and _root(old) != _root(rp):
            # Moved to another tree (another writer re-parented it): both
            # trees lost or gained members this answer does not list.
            self._whole.discard(_root(old))
            self._whole.discard(_root(rp))
        self._records[rp.uuid] = rp
        self._stored[rp.uuid] = next(self._tickets)
        return True

    def put(self, providers: Iterable[ResourceProvider], sent: int | None = None) -> None:
        """Store providers an answer showed (a read, a filtered listing, a rename)."""
        with self._lock:
            for rp in providers:
                self._put(rp, sent)

    def listed(self, anchor: str, providers: Iterable[ResourceProvider], sent: int) -> None:
        """Store a tree listing (``?in_tree=``); its tree is whole unless an answer overlapped."""
        shown = list(providers)
        with self._lock:
            if not shown:
                return
            root = _root(shown[0])
            if self._overlapped(root, sent) or any(self._overlapped(rp.uuid, sent) for rp in shown):
                return  # a change stored meanwhile: this answer may predate it
            members = {rp.uuid for rp in shown}
            for uuid, rp in list(self._records.items()):
                if _root(rp) == root and uuid not in members and not self._overlapped(uuid, sent):
                    del self._records[uuid]
                    self._stored[uuid] = next(self._tickets)
            for rp in shown:
                self._put(rp, sent)
            self._whole.add(root)

    def created(self, rp: ResourceProvider, sent: int) -> None:
        """Store a provider this client just created; its tree stays whole if it was."""
        with self._lock:
            if not self._put(rp, sent):
                return
            if rp.parent_provider_uuid is None:
                self._whole.add(rp.uuid)

    def dropped(self, uuid: str, *, answered: bool) -> None:
        """Drop a provider deleted (``answered``) or whose fate a lost answer left open."""
        with self._lock:
            old = self._records.pop(uuid, None)
            self._stored[uuid] = next(self._tickets)
            self._whole.discard(uuid)
            if old is not None and not answered:
                self._whole.discard(_root(old))

    def forget(self, uuid: str) -> None:
        """A raw write or a lost answer may have changed the provider: drop it and its tree."""
        self.dropped(uuid, answered=False)

    def clear(self) -> None:
        """Drop everything; answers in flight are dropped when they arrive."""
        with self._lock:
            self._records.clear()
            self._whole.clear()
            self._stored.clear()
            self._floor = next(self._tickets)

    # -- reads ------------------------------------------------------------------------
    def get(self, uuid: str) -> ResourceProvider | None:
        """The provider's last record, or None."""
        with self._lock:
            return self._records.get(uuid)

    def tree(self, root: str) -> list[ResourceProvider] | None:
        """Every provider of ``root``'s tree, parents first, if a listing proved it whole."""
        with self._lock:
            if root not in self._whole:
                return None
            members = [rp for rp in self._records.values() if _root(rp) == root]
        return parents_first(members)


def parents_first(members: list[ResourceProvider]) -> list[ResourceProvider]:
    """``members`` ordered so every parent comes before its children."""
    by_parent: dict[str | None, list[ResourceProvider]] = {}
    uuids = {rp.uuid for rp in members}
    for rp in sorted(members, key=lambda r: r.uuid):
        parent = rp.parent_provider_uuid if rp.parent_provider_uuid in uuids else None
        by_parent.setdefault(parent, []).append(rp)
    out: list[ResourceProvider] = []
    todo = list(by_parent.get(None, []))
    while todo:
        rp = todo.pop(0)
        out.append(rp)
        todo[:0] = by_parent.get(rp.uuid, [])
    return out
