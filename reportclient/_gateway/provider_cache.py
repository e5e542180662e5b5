"""What this client last saw of each provider field, and for how long it is trusted.

Every read and every successful write of a provider's inventories, traits or
aggregates answers with the field and the provider generation, so each is
cached as an exact snapshot (never a guess). A snapshot saves a GET only
while it is *proven* or *young*:

* **Proven**: a request of this same operation showed the provider at the
  snapshot's generation. Every change to inventories, traits or aggregates
  (and every allocation against the provider) moves the generation, so
  same generation means same content, with one exception Placement gives no
  way to detect: a provider deleted and re-created under the same uuid
  restarts at generation 0 and can climb back to the cached number (nova
  re-creates a compute node's provider under its old uuid). Hence:
* **Young**: within ``ttl`` seconds of the read or write that produced it.
  Reconcile trusts a snapshot only if it is both proven by the tree listing
  and young; the default ``ttl`` of 0 trusts none, and every field written
  is read first, as for consumers (doc/source/cache.rst).

Age counts from the request that produced the content, and nothing
re-stamps it: a snapshot used again without a request (reconcile trusting
it, or carrying it to the generation its own write of another field made)
keeps its first ``taken_at``. Otherwise an agent reconciling more often
than ``ttl`` would renew its first read forever and the ttl would bound
nothing.

Overlapping answers follow the consumers' ordering rule
(:mod:`reportclient._gateway.ordering`): each request takes a ticket before
it is sent, and an answer that was in flight when a different one for the
same field was stored (or when the provider was forgotten, after a DELETE,
a lost answer or a raw write) is kept *in doubt*: shown by :meth:`get`,
never returned by :meth:`entry` or :meth:`trusted`, so the next write and
the next reconcile read the field. Only the gateway writes here.

One lock, one dict: provider counts are in the thousands, not the
consumers' hundreds of thousands, so no LRU bound is worth its bookkeeping.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from reportclient._gateway.ordering import Order, Version, order
from reportclient._model.providers import ProviderAggregates, ProviderInventories, ProviderTraits

__all__ = ["FIELDS", "FIELD_KINDS", "Field", "ProviderCache", "Snapshot"]

Snapshot = ProviderInventories | ProviderTraits | ProviderAggregates
#: The three generation-guarded fields of a provider, as types.
FIELD_KINDS: tuple[type[Snapshot], ...] = (ProviderInventories, ProviderTraits, ProviderAggregates)
#: One of the three, the same one in and out (a read or write of that field).
Field = TypeVar("Field", ProviderInventories, ProviderTraits, ProviderAggregates)
#: Every field a provider cache entry can hold, by route.
FIELDS = ("inventories", "traits", "aggregates")


class ProviderCache:
    """Thread-safe map of (provider uuid, field) to the last snapshot and when it was taken.

    :param ttl: seconds a snapshot is trusted for a write's content and generation.
    :param clock: monotonic seconds; tests pass a fake.
    """

    def __init__(self, ttl: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl < 0:
            raise ValueError(f"cache_ttl must be >= 0, got {ttl!r}")
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        # (uuid, route) -> (snapshot, taken_at, in doubt, proven: the
        # server's time of the answer that proved it, when it said one)
        self._entries: dict[tuple[str, str], tuple[Snapshot, float, bool, float | None]] = {}
        self._tickets = itertools.count(1)
        # When each field was last stored or forgotten (a ticket), and
        # whether what was stored answered this client's own write.
        self._stored: dict[tuple[str, str], tuple[int, bool]] = {}
        # Every answer sent before this was sent before a clear().
        self._floor = 0
        # Per field: every answer sent before this was sent before a catalogue
        # write that may have renamed or removed a name it holds.
        self._route_floor: dict[str, int] = {}

    @property
    def clock(self) -> Callable[[], float]:
        """The clock snapshots are stamped on."""
        return self._clock

    def ticket(self) -> int:
        """A ticket to take just before sending a request whose answer will be :meth:`put`."""
        return next(self._tickets)

    def put(
        self,
        snapshot: Snapshot,
        taken_at: float | None = None,
        *,
        sent: int | None = None,
        written: bool = False,
        proven: float | None = None,
    ) -> None:
        """Remember ``snapshot`` as the latest seen, produced at ``taken_at`` (default: now).

        Not "the highest generation wins": a provider re-created under the
        same uuid starts again at 0. An answer that overlapped a different
        stored one is kept in doubt (the ordering rule).

        :param taken_at: when the read or write that proved this content
            happened, on this cache's clock. A snapshot carried to a new
            generation (reconcile's own write changed another field) was
            proven when it was first read, not when it was carried: passing
            that time keeps its age, so ``ttl`` still bounds how long a
            content never re-read is trusted.
        :param sent: the :meth:`ticket` taken before the request that
            produced it; None for a snapshot known as of now.
        :param written: the answer to this client's own write (kept over a
            read it overlapped).
        :param proven: the server's clock (POSIX seconds) when it answered
            with this content, if it said (its ``Date``); see :meth:`proven`.
        """
        at = self._clock() if taken_at is None else taken_at
        key = (snapshot.uuid, snapshot.ROUTE)
        with self._lock:
            old = self._entries.get(key)
            verdict = Order.REPLACE
            stored, mine = self._stored.get(key, (self._floor, False))
            floor = self._route_floor.get(snapshot.ROUTE, 0)
            if floor > stored:
                stored, mine = floor, False
            if sent is not None and sent < stored:
                before = None if old is None else old[0]
                verdict = order(
                    overlapped=True,
                    old=None if before is None else Version(True, before.generation, mine),
                    new=Version(True, snapshot.generation, written),
                    same=before is not None and before.holds(snapshot.value),  # type: ignore[arg-type]
                )
            if verdict is Order.KEEP:
                return
            keeps_old = verdict in (Order.DOUBT_OLD, Order.NEWER_OLD)
            self._stored[key] = (next(self._tickets), mine if keeps_old else written)
            # A field has no "shown but untrusted": the later of two is in doubt too.
            if keeps_old:
                assert old is not None
                self._entries[key] = (old[0], old[1], True, old[3])
            else:
                self._entries[key] = (snapshot, at, verdict is not Order.REPLACE, proven)

    def get(self, uuid: str, kind: type[Snapshot]) -> Snapshot | None:
        """The last snapshot of the field, however old, in doubt or not (for inspection)."""
        with self._lock:
            found = self._entries.get((uuid, kind.ROUTE))
        return found[0] if found is not None else None

    def entry(self, uuid: str, kind: type[Snapshot]) -> tuple[Snapshot, float] | None:
        """The last snapshot of the field and when it was taken, however old; None in doubt."""
        with self._lock:
            found = self._entries.get((uuid, kind.ROUTE))
        if found is None or found[2]:
            return None
        return found[0], found[1]

    def proven(self, uuid: str, kind: type[Snapshot]) -> float | None:
        """The server's time of the answer that proved the field; None if unknown or in doubt."""
        with self._lock:
            found = self._entries.get((uuid, kind.ROUTE))
        return None if found is None or found[2] else found[3]

    def trusted(
        self, uuid: str, kind: type[Snapshot], generation: int | None = None
    ) -> Snapshot | None:
        """The snapshot if it is young, and (when ``generation`` is given) proven at it."""
        entry = self.trusted_entry(uuid, kind, generation)
        return entry[0] if entry is not None else None

    def trusted_entry(
        self, uuid: str, kind: type[Snapshot], generation: int | None = None
    ) -> tuple[Snapshot, float] | None:
        """As :meth:`trusted`, with the time the snapshot was taken (to carry it on)."""
        entry = self.entry(uuid, kind)
        if entry is None or self._ttl <= 0 or self._clock() - entry[1] > self._ttl:
            return None
        if generation is not None and entry[0].generation != generation:
            return None
        return entry

    def carry(self, uuid: str, written: type[Snapshot], generation: int) -> None:
        """This client's write of one field moved the provider from ``generation`` by one.

        Placement applied it only at ``generation`` and changed nothing but
        that field, so every other field known (and not in doubt) at
        ``generation`` holds at ``generation + 1``, as old as its proof.
        """
        with self._lock:
            for route in FIELDS:
                found = self._entries.get((uuid, route))
                if route == written.ROUTE or found is None or found[2]:
                    continue
                snapshot, taken_at, _doubt, proven = found
                if snapshot.generation == generation:
                    moved = dataclasses.replace(snapshot, generation=generation + 1)
                    self._entries[(uuid, route)] = (moved, taken_at, False, proven)

    def reprove(self, snapshot: Snapshot, taken_at: float, proven: float | None) -> bool:
        """Stamp the stored ``snapshot`` proven again as of ``taken_at`` (the server's ``proven``).

        A compare-and-set, for a proof that involved no read of the field
        (a tree listing, or the provider's own ``Last-Modified``): it
        applies only while the entry is still that very snapshot and not in
        doubt. An answer stored, carried or forgotten since the caller took
        the entry wins, and the proof, about content no longer stored, is
        dropped: re-storing the older snapshot would make a field this
        client has since written (or doubted) trusted at its older content
        again. The ordering ticket is not moved, since the content is not
        new; ``proven`` None keeps the entry's own server time.

        :returns: whether the entry was re-stamped.
        """
        key = (snapshot.uuid, snapshot.ROUTE)
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[2] or found[0] is not snapshot:
                return False
            self._entries[key] = (snapshot, taken_at, False, found[3] if proven is None else proven)
            return True

    def forget(self, uuid: str, kind: type[Snapshot] | None = None) -> None:
        """Forget one field of a provider, or all of them; answers in flight arrive in doubt."""
        with self._lock:
            for route in (kind.ROUTE,) if kind else FIELDS:
                self._entries.pop((uuid, route), None)
                self._stored[(uuid, route)] = (next(self._tickets), False)

    def forget_naming(self, kind: type[Snapshot], names: Iterable[str]) -> None:
        """Forget every provider's ``kind`` that names one of ``names`` (a catalogue write).

        A resource class renamed or deleted, or a trait deleted, changes
        what any provider's inventories or traits may name, and no
        generation moves. Every such field cached is forgotten, and every
        answer of that field in flight across this (for any provider: it
        may have been read before the rename) arrives in doubt.
        """
        wanted = set(names)
        with self._lock:
            for key, found in list(self._entries.items()):
                if key[1] == kind.ROUTE and wanted & set(found[0].value):
                    del self._entries[key]
            self._route_floor[kind.ROUTE] = next(self._tickets)

    def clear(self) -> None:
        """Forget every provider; answers in flight now arrive in doubt."""
        with self._lock:
            self._entries.clear()
            self._stored.clear()
            self._floor = next(self._tickets)
