"""A bounded, thread-safe LRU cache of consumer states.

An entry is a flat tuple rather than a :class:`ConsumerAllocations`, and its
strings are interned, because a scheduler may track hundreds of thousands of
consumers: provider uuids, resource classes and owner ids repeat across
consumers and are then stored once. For the same reason the LRU order is a
plain dict's insertion order (a hit moves the key to the end) rather than an
OrderedDict, whose linked list costs about 50 bytes a consumer. Eviction only
ever costs a later re-read.

Trust is bounded by age (``ttl``). Placement restarts a consumer's
generation at 1 when it is deleted and re-created, so a generation that
still matches does not prove the cached content is what Placement holds;
only a recent entry is trusted for the content or the generation of a
write. An older entry is still returned, marked untrusted: it tells what
this client last knew (whether a claim would overwrite something it never
saw) and whether the consumer is likely to exist (which request to send
first), never what to write. Each entry stores the start of the current
clock *tick*, one float object shared by every entry written during that
tick, so the age costs a tuple slot (8 bytes) rather than a float apiece; a
tick start is never later than the real write, so ages only err long.

The cache never goes back in time for a consumer. Threads sharing a client
overlap their requests, so an answer can be processed after the answer of
a request sent later (a slow GET after the same client's newer write). Each
request takes a *ticket* from one counter before it is sent, and the cache
notes the counter value when it stores or forgets an entry; what an answer
that overlapped the stored entry does is the one ordering rule of
:mod:`reportclient._gateway.ordering` (the same answer: kept; a different
one, or one overlapping a forget: kept *in doubt*, never trusted, so the
next operation reads). Only overlapping requests race, and they are
recent, so store times are kept for the latest 4,096 puts only (a bounded
half megabyte, not an int per entry); an older entry counts as stored at
that window's edge, which can only make a late answer look overlapping,
never newer than it is.

Only the gateway (:mod:`reportclient._gateway.gateway`) calls :meth:`put`,
:meth:`forget` and :meth:`clear`: every answer, and every lost answer,
reaches the cache on one path.
"""

from __future__ import annotations

import itertools
import math
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from reportclient._gateway.ordering import Order, Version, order
from reportclient._model.consumers import ConsumerAllocations

__all__ = ["DEFAULT_CACHE_SIZE", "DEFAULT_CACHE_TTL", "CacheStats", "ConsumerCache"]

#: Enough for every instance a large cell's scheduler tracks at once.
DEFAULT_CACHE_SIZE = 100_000
#: Seconds a cached state is trusted for a write; 0 trusts none (doc/source/cache.rst).
DEFAULT_CACHE_TTL = 0.0
# Longest clock tick; shorter for short ttls so an entry is never judged
# more than a sixteenth of the ttl older than it is.
_MAX_TICK = 1.0
# Evict this share of the bound at a time: finding a dict's oldest keys scans
# past the holes earlier deletions left at its front, so one scan per batch
# keeps eviction cheap where one scan per eviction would grow quadratic.
_EVICT_SHARE = 64

#: The tick of an entry in doubt (two overlapping answers that cannot be
#: ordered): never trusted, not shown by get(), kept as what the client knew.
_DOUBT = object()

# (tick, generation, project_id, user_id, consumer_type,
#  then per provider to the end: rp_uuid, n_resources, rc, amount, rc, amount, ...)
_Entry = tuple[object, ...]
_HEAD = 5
# Consumers whose store time is remembered exactly (the most recent puts).
_RECENT = 4096


def _intern(value: str | None) -> str | None:
    return sys.intern(value) if type(value) is str else value


def _encode(state: ConsumerAllocations, tick: object) -> _Entry:
    flat: list[object] = [
        tick,
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
    pos = _HEAD
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
        generation=entry[1],  # type: ignore[arg-type]
        project_id=entry[2],  # type: ignore[arg-type]
        user_id=entry[3],  # type: ignore[arg-type]
        consumer_type=entry[4],  # type: ignore[arg-type]
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
    :param ttl: seconds an entry is trusted for a write; 0 never, ``inf``
        always.
    :param clock: monotonic seconds; tests pass a fake one.
    """

    def __init__(
        self,
        maxsize: int = DEFAULT_CACHE_SIZE,
        ttl: float = DEFAULT_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 0:
            raise ValueError(f"cache_size must be an int >= 0, got {maxsize!r}")
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl >= 0:
            raise ValueError(f"cache_ttl must be a number of seconds >= 0, got {ttl!r}")
        self._maxsize = maxsize
        self._batch = max(1, maxsize // _EVICT_SHARE)
        self._ttl = float(ttl)
        # Only a finite, non-zero ttl needs the clock at all.
        self._timed = 0 < self._ttl < math.inf
        self._clock = clock
        self._tick_length = min(_MAX_TICK, self._ttl / 16) if self._timed else 0.0
        self._tick = -math.inf
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._hits = self._misses = self._evictions = 0
        self._tickets = itertools.count(1)
        # When each of the most recent puts was stored; every older put was
        # stored before ``_horizon``.
        self._recent: dict[str, tuple[int, bool]] = {}
        self._horizon = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def ttl(self) -> float:
        """Seconds an entry is trusted for a write."""
        return self._ttl

    def get(self, consumer_uuid: str) -> ConsumerAllocations | None:
        """The cached state however old, or None (also when in doubt); a hit counts as a use."""
        entry = self._use(consumer_uuid)
        if entry is None or entry[0] is _DOUBT:
            return None
        return _decode(consumer_uuid, entry)

    def known(self, consumer_uuid: str) -> ConsumerAllocations | None:
        """What the client last knew, in doubt or not: a claim's premise (see :meth:`put`)."""
        entry = self._use(consumer_uuid)
        return None if entry is None else _decode(consumer_uuid, entry)

    def lookup(self, consumer_uuid: str) -> tuple[ConsumerAllocations, bool] | None:
        """The cached state, in doubt or not, and whether it may be trusted, or None."""
        entry = self._use(consumer_uuid)
        if entry is None:
            return None
        return _decode(consumer_uuid, entry), self._trusted(entry[0])

    def _use(self, consumer_uuid: str) -> _Entry | None:
        """The raw entry, counted as a hit (moved to most recently used) or a miss."""
        with self._lock:
            entry = self._entries.get(consumer_uuid)
            if entry is None:
                self._misses += 1
                return None
            # Re-inserting moves the key to the end: the most recently used.
            del self._entries[consumer_uuid]
            self._entries[consumer_uuid] = entry
            self._hits += 1
        return entry

    def _trusted(self, tick: object) -> bool:
        # None marks an entry never to trust: any entry when ttl is 0, or one
        # put back as what the client last knew rather than what is there;
        # _DOUBT one that overlapped an answer it cannot be ordered with.
        if tick is None or tick is _DOUBT:
            return False
        return not self._timed or self._clock() - tick < self._ttl  # type: ignore[operator]

    def _stamp(self, trusted: bool) -> float | None:
        if not trusted or self._ttl == 0:
            return None
        if not self._timed:
            return math.inf
        now = self._clock()
        if now - self._tick >= self._tick_length:
            self._tick = now  # a new shared float object for this tick's entries
        return self._tick

    def ticket(self) -> int:
        """A ticket to take just before sending a request whose answer will be :meth:`put`."""
        return next(self._tickets)

    def put(
        self,
        state: ConsumerAllocations,
        *,
        trusted: bool = True,
        sent: int | None = None,
        written: bool = False,
    ) -> None:
        """Remember ``state`` as the consumer's latest, by the ordering rule.

        :param trusted: False keeps it only as what the client knew, never
            to be written from, whatever its age.
        :param sent: the :meth:`ticket` taken before the request that
            produced ``state``; None for a state known as of now.
        :param written: ``state`` is what this client's own acknowledged
            write made (kept over a read it overlapped).
        """
        if not self._maxsize:
            return
        with self._lock:
            consumer = state.consumer_uuid
            old = self._entries.get(consumer)
            verdict = Order.REPLACE
            if sent is not None:
                # An entry stored before the recent window was stored before the
                # horizon: taking the horizon errs towards "overlapped".
                stored, mine = self._recent.get(consumer, (self._horizon, False))
                if sent < stored:
                    known = None if old is None else _decode(consumer, old)
                    verdict = order(
                        overlapped=True,
                        old=None
                        if known is None
                        else Version(known.exists, known.generation, mine),
                        new=Version(state.exists, state.generation, written),
                        same=known == state,
                    )
            if verdict is Order.KEEP:
                return
            keeps_old = verdict in (Order.DOUBT_OLD, Order.NEWER_OLD)
            self._remember(consumer, mine if keeps_old else written)
            # In doubt: hidden and never trusted; the later of two: shown, not trusted.
            stamp: object = self._stamp(trusted) if verdict is Order.REPLACE else None
            if verdict in (Order.DOUBT_NEW, Order.DOUBT_OLD):
                stamp = _DOUBT
            if keeps_old:
                assert old is not None  # order() keeps nothing that is not there
                entry = (stamp, *old[1:])
            else:
                entry = _encode(state, stamp)
            self._entries.pop(consumer, None)
            self._entries[consumer] = entry
            if len(self._entries) > self._maxsize:
                excess = len(self._entries) - self._maxsize
                oldest = list(itertools.islice(self._entries, max(excess, self._batch)))
                for key in oldest:
                    del self._entries[key]
                self._evictions += len(oldest)

    def _remember(self, consumer: str, written: bool = False) -> None:
        """Note when ``consumer``'s entry is stored, and whether by our own write (locked)."""
        self._recent.pop(consumer, None)
        self._recent[consumer] = (next(self._tickets), written)
        if len(self._recent) > _RECENT + _RECENT // 4:
            # Trimmed in batches and rebuilt, for the reason the entries are
            # evicted in batches (see _EVICT_SHARE).
            kept = list(self._recent.items())
            self._horizon = kept[-_RECENT - 1][1][0]
            self._recent = dict(kept[-_RECENT:])

    def forget(self, consumer_uuid: str) -> None:
        """Forget a consumer whose state is no longer known (a lost answer, a conflict).

        The forget counts as an answer of unknown content: an answer whose
        request was sent before it and arrives after it is kept in doubt.
        """
        if not self._maxsize:
            return
        with self._lock:
            self._entries.pop(consumer_uuid, None)
            self._remember(consumer_uuid)

    def clear(self) -> None:
        """Forget every consumer; answers in flight now arrive in doubt."""
        with self._lock:
            self._entries.clear()
            self._recent.clear()
            self._horizon = next(self._tickets)

    def stats(self) -> CacheStats:
        """A snapshot of the counters."""
        with self._lock:
            return CacheStats(
                self._hits, self._misses, self._evictions, len(self._entries), self._maxsize
            )
