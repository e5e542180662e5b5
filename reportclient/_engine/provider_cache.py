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
  is read first, as for consumers (README "Cache").

Age counts from the request that produced the content, and nothing
re-stamps it: a snapshot used again without a request (reconcile trusting
it, or carrying it to the generation its own write of another field made)
keeps its first ``taken_at``. Otherwise an agent reconciling more often
than ``ttl`` would renew its first read forever and the ttl would bound
nothing.

One lock, one dict: provider counts are in the thousands, not the
consumers' hundreds of thousands, so no LRU bound is worth its bookkeeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from reportclient._model.providers import ProviderAggregates, ProviderInventories, ProviderTraits

__all__ = ["ProviderCache", "Snapshot"]

Snapshot = ProviderInventories | ProviderTraits | ProviderAggregates


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
        self._entries: dict[tuple[str, str], tuple[Snapshot, float]] = {}

    def put(self, snapshot: Snapshot, taken_at: float | None = None) -> None:
        """Remember ``snapshot`` as the latest seen, produced at ``taken_at`` (default: now).

        Not "the highest generation wins": a provider re-created under the
        same uuid starts again at 0, and what was just seen is the truth.

        :param taken_at: when the read or write that proved this content
            happened, on this cache's clock. A snapshot carried to a new
            generation (reconcile's own write changed another field) was
            proven when it was first read, not when it was carried: passing
            that time keeps its age, so ``ttl`` still bounds how long a
            content never re-read is trusted.
        """
        at = self._clock() if taken_at is None else taken_at
        with self._lock:
            self._entries[(snapshot.uuid, snapshot.ROUTE)] = (snapshot, at)

    def get(self, uuid: str, kind: type[Snapshot]) -> Snapshot | None:
        """The last snapshot of the field, however old (for inspection)."""
        entry = self.entry(uuid, kind)
        return entry[0] if entry is not None else None

    def entry(self, uuid: str, kind: type[Snapshot]) -> tuple[Snapshot, float] | None:
        """The last snapshot of the field and when it was taken, however old."""
        with self._lock:
            return self._entries.get((uuid, kind.ROUTE))

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

    def discard(self, uuid: str, kind: type[Snapshot] | None = None) -> None:
        """Forget one field of a provider, or all of them."""
        with self._lock:
            for route in (kind.ROUTE,) if kind else ("inventories", "traits", "aggregates"):
                self._entries.pop((uuid, route), None)
