"""A bounded, thread-safe LRU cache of consumer states.

An entry is a flat tuple rather than a :class:`ConsumerAllocations`, and its
strings are interned, because a scheduler may track hundreds of thousands of
consumers: provider uuids, resource classes and owner ids repeat across
consumers and are then stored once. For the same reason the LRU order is a
plain dict's insertion order (a hit moves the key to the end) rather than an
OrderedDict, whose linked list costs about 50 bytes a consumer. Eviction only
ever costs a later re-read.
"""

from __future__ import annotations

import itertools
import sys
import threading
from dataclasses import dataclass

from reportclient.models import ConsumerAllocations

__all__ = ["DEFAULT_CACHE_SIZE", "CacheStats", "ConsumerCache"]

#: Enough for every instance a large cell's scheduler tracks at once.
DEFAULT_CACHE_SIZE = 100_000
# Evict this share of the bound at a time: finding a dict's oldest keys scans
# past the holes earlier deletions left at its front, so one scan per batch
# keeps eviction cheap where one scan per eviction would grow quadratic.
_EVICT_SHARE = 64

# (generation, project_id, user_id, consumer_type,
#  then per provider to the end: rp_uuid, n_resources, rc, amount, rc, amount, ...)
_Entry = tuple[object, ...]


def _intern(value: str | None) -> str | None:
    return sys.intern(value) if type(value) is str else value


def _encode(state: ConsumerAllocations) -> _Entry:
    flat: list[object] = [
        state.generation,
        _intern(state.project_id),
        _intern(state.user_id),
        _intern(state.consumer_type),
    ]
    for rp_uuid, resources in state.allocations.items():
        flat.append(_intern(rp_uuid))
        flat.append(len(resources))
        for rc, amount in resources.items():
            flat.append(_intern(rc))
            flat.append(amount)
    return tuple(flat)


def _decode(consumer_uuid: str, entry: _Entry) -> ConsumerAllocations:
    allocations: dict[str, dict[str, int]] = {}
    pos = 4
    while pos < len(entry):
        rp_uuid = entry[pos]
        count = entry[pos + 1]
        pos += 2
        resources: dict[str, int] = {}
        for _ in range(count):  # type: ignore[call-overload]
            resources[entry[pos]] = entry[pos + 1]  # type: ignore[index,assignment]
            pos += 2
        allocations[rp_uuid] = resources  # type: ignore[index]
    return ConsumerAllocations(
        consumer_uuid=consumer_uuid,
        allocations=allocations,
        generation=entry[0],  # type: ignore[arg-type]
        project_id=entry[1],  # type: ignore[arg-type]
        user_id=entry[2],  # type: ignore[arg-type]
        consumer_type=entry[3],  # type: ignore[arg-type]
    )


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Counters since the cache was made."""

    hits: int
    misses: int
    evictions: int
    size: int
    maxsize: int


class ConsumerCache:
    """Last known state per consumer, least recently used evicted first.

    Once full, the least recently used 1/64 of the bound goes at once.

    :param maxsize: entries kept at most; 0 disables caching.
    """

    def __init__(self, maxsize: int = DEFAULT_CACHE_SIZE) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 0:
            raise ValueError(f"cache_size must be an int >= 0, got {maxsize!r}")
        self._maxsize = maxsize
        self._batch = max(1, maxsize // _EVICT_SHARE)
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._hits = self._misses = self._evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, consumer_uuid: str) -> ConsumerAllocations | None:
        """The cached state, or None; a hit counts as a use."""
        with self._lock:
            entry = self._entries.get(consumer_uuid)
            if entry is None:
                self._misses += 1
                return None
            # Re-inserting moves the key to the end: the most recently used.
            del self._entries[consumer_uuid]
            self._entries[consumer_uuid] = entry
            self._hits += 1
        return _decode(consumer_uuid, entry)

    def put(self, state: ConsumerAllocations) -> None:
        """Remember ``state`` as the consumer's latest."""
        if not self._maxsize:
            return
        entry = _encode(state)
        with self._lock:
            self._entries.pop(state.consumer_uuid, None)
            self._entries[state.consumer_uuid] = entry
            if len(self._entries) > self._maxsize:
                excess = len(self._entries) - self._maxsize
                oldest = list(itertools.islice(self._entries, max(excess, self._batch)))
                for key in oldest:
                    del self._entries[key]
                self._evictions += len(oldest)

    def discard(self, consumer_uuid: str) -> None:
        """Forget a consumer, e.g. when its state is no longer known."""
        with self._lock:
            self._entries.pop(consumer_uuid, None)

    def clear(self) -> None:
        """Forget every consumer."""
        with self._lock:
            self._entries.clear()

    def stats(self) -> CacheStats:
        """A snapshot of the counters."""
        with self._lock:
            return CacheStats(
                self._hits, self._misses, self._evictions, len(self._entries), self._maxsize
            )
