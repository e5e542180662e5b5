"""The one ordering rule for answers that overlap: pure, no I/O, shared by both caches.

Threads sharing a client overlap their requests, so the gateway can receive
an answer after another answer about the same subject (a consumer, or one
field of a provider) whose request was sent later. Every request takes a
*ticket* from one counter before it is sent, and the cache notes the
counter when it stores an entry (or forgets one): an answer whose ticket is
below the stored entry's was *overlapping*: its request was in flight when
the stored one arrived, so Placement may have served the two in either
order. An answer sent after the stored one arrived is not: it saw
everything the stored one saw.

The rule (:func:`order`):

* Not overlapping: the new answer replaces the entry.
* Overlapping, and both say the same (same existence, generation and
  content): nothing changes.
* Overlapping, both showing the subject at different generations: within
  one life of the subject generations only grow, so the higher one is the
  later; only a delete, a re-creation and as many writes as the generation,
  all inside one round trip, could make it the earlier. The higher is kept
  and shown, but *untrusted*: the next write reads first.
* Overlapping, and they differ otherwise, or nothing is stored because the entry was
  forgotten after the new request was sent (a lost answer, a conflict, a
  raw write, a DELETE): the two cannot be ordered. A consumer's generation
  restarts at 1 when it is deleted and re-created, and a provider's at 0,
  so neither "missing beside a generation" nor "a higher generation" says
  which came last. The entry is kept *in doubt*: never trusted for a write
  (the next operation reads), and kept only as what the client last knew,
  choosing the answer that shows the subject existing, and of two that
  exist the higher generation, because what the client knew is used to
  tell its own writes from another writer's (a claim refuses to replace
  allocations it never saw), and "missing" beside its own acknowledged
  create would make it refuse its own write.

Why this is enough (the invariant): *a trusted entry is never older than
an answer this client has already received for its subject.* An entry
becomes trusted only by replacing (answer sent after everything stored had
arrived, hence after every answer received so far, since each received
answer was stored, kept or forgotten at arrival). Every later answer either
replaces it (not overlapping), agrees with it, or leaves it untrusted or in
doubt. A *shown* entry (``cached()``) is never older than an answer it
could be ordered with: the later of two generations, or the only answer.
A lost answer forgets at once, so an answer overlapping the lost request is
in doubt too. What the rule cannot see is a write that lands after its
answer was lost and after a later read: the engine's fate rule owns that
(:mod:`reportclient._engine.fate`), and every write carries a generation.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Order", "Version", "order"]


@dataclass(frozen=True, slots=True)
class Version:
    """What the rule compares of an answer: whether the subject exists, and its generation."""

    exists: bool
    generation: int | None
    #: The answer acknowledged this client's own write (not a read).
    written: bool = False


class Order(enum.Enum):
    """What the cache does with an answer."""

    #: Store the new answer as given (trusted within the ttl).
    REPLACE = "replace"
    #: Keep the entry as it is: the answer says the same.
    KEEP = "keep"
    #: Store the new answer (the higher generation), shown but untrusted.
    NEWER_NEW = "newer new"
    #: Keep the stored entry (the higher generation), shown but untrusted.
    NEWER_OLD = "newer old"
    #: Store the new answer, in doubt (never trusted).
    DOUBT_NEW = "doubt new"
    #: Keep the stored entry, now in doubt (never trusted).
    DOUBT_OLD = "doubt old"


def order(*, overlapped: bool, old: Version | None, new: Version, same: bool) -> Order:
    """What to do with an answer ``new`` given the entry ``old`` stored for its subject.

    :param overlapped: the answer's request was sent before ``old`` was
        stored (or before the subject was last forgotten).
    :param old: the stored entry's version; None when nothing is stored.
    :param same: ``old`` and ``new`` hold the same content (only read when
        both exist at the same generation).
    """
    if not overlapped:
        return Order.REPLACE
    if old is None:
        return Order.DOUBT_NEW
    if (old.exists, old.generation) == (new.exists, new.generation) and (same or not new.exists):
        return Order.KEEP
    if old.exists and new.exists and old.generation != new.generation:
        return Order.NEWER_NEW if (new.generation or 0) > (old.generation or 0) else Order.NEWER_OLD
    if new.written != old.written:
        return Order.DOUBT_NEW if new.written else Order.DOUBT_OLD
    if new.exists != old.exists:
        return Order.DOUBT_NEW if new.exists else Order.DOUBT_OLD
    return Order.DOUBT_OLD  # the same generation with other content: another life
