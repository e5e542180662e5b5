"""The attempt step: what a write's conflict leads to, as a pure table (no I/O).

Like the fate rule (:mod:`.fate`) and h11's state machine, this decides and
the skeleton (:mod:`.guarded_write`) does the I/O. After a conflict the
skeleton asks :func:`look` whether to re-read at once, does so if told, and
asks :func:`after_conflict` what comes next. The retry policy then only
decides how long a wait is and when to stop; whether there is a wait at all,
and whether the attempt counts against the policy, is decided here:

==============  ===========  ================  ==================
premise         conflict     the look showed   next
==============  ===========  ================  ==================
any             ends it      (no look)         the operation ends
any             unexplained  touched           ``CONTENDED``
any             unexplained  untouched, none   the operation ends
a read          stale        untouched         ``UNTOUCHED``
a read          stale        touched, or none  ``CONTENDED``
cache or guess  stale        (no look)         ``WRONG_GUESS``
any             race         untouched         ``UNTOUCHED``
any             race         touched, or none  ``CONTENDED``
==============  ===========  ================  ==================

"stale": Placement named a stale consumer or provider generation; "race":
the write lost Placement's own in-server race (its generation bump beside
other writers); "ends it": ``ConsumerChanged``; "unexplained": a 409
``placement.concurrent_update`` worded as none of Placement's own
(:attr:`~reportclient.errors.GenerationConflict.explained`). Only a read
showing the subject changed explains one; otherwise retrying cannot win
(nova's functional tests stub Placement to answer every write this way, and
nova fails at once: the library now does too, after one read).

* ``UNTOUCHED``: the generation moved under writes of something else (a
  provider's under allocations, a consumer's write lost the race inside
  Placement to allocations on the same providers). Nothing to wait for: the
  next attempt goes at once from the look's read, and is not counted against
  the policy's attempts (issue 21: at 100 claims/s on one provider, counted,
  12 attempts finished 0-43% of inventory and trait writes).
* ``WRONG_GUESS``: the write was computed from the cache or a guess (a
  consumer taken for new, a generation from a conflict's "expected N"): a
  re-read at once, counted, logged at DEBUG.
* ``CONTENDED``: writers contend on what the write changes: the policy's
  wait, over the window the engine lends it (:mod:`.contention`), then a
  read (the look's read is as stale as a cache after the wait: measured at
  64 writers on one consumer, a third of the retries sent from it collided).

Whichever it is, a retry then goes only if the policy would go on and the
client's bounds allow it (:func:`reportclient._budget.next_retry`, then the
retry budget): an ``UNTOUCHED`` retry is free of the policy's count, never
of the budget or the request bound (issue 37).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Conflict", "Next", "after_conflict", "look"]


class Next(enum.Enum):
    """What follows a conflict that leaves the operation to its policy."""

    UNTOUCHED = "retry at once from the look, not counted"
    WRONG_GUESS = "read and retry at once"
    CONTENDED = "wait the contention window, then read"

    @property
    def at_once(self) -> bool:
        """Whether the next attempt goes without the policy's wait."""
        return self is not Next.CONTENDED

    @property
    def counted(self) -> bool:
        """Whether the failed attempt counts against the policy's attempts."""
        return self is not Next.UNTOUCHED


@dataclass(frozen=True, slots=True)
class Conflict:
    """What the skeleton knows of a conflict when it decides.

    :param premise_read: the write was computed wholly from a state just read.
    :param stale: Placement named a stale generation (consumer or provider),
        rather than its own in-server race.
    :param ends: the conflict ends the operation (``ConsumerChanged``).
    :param explained: Placement worded it as one of its own conflicts.
    """

    premise_read: bool
    stale: bool
    ends: bool = False
    explained: bool = True


def look(conflict: Conflict) -> bool:
    """Whether to re-read at once, to see if what the write changes was touched.

    A stale generation on a write from a cache or a guess says the guess was
    wrong, nothing about contention: the next attempt reads anyway. An
    unexplained conflict is always looked at: only the read can explain it.
    """
    if conflict.ends:
        return False
    return conflict.premise_read or not conflict.stale or not conflict.explained


def after_conflict(conflict: Conflict, touched: bool | None) -> Next | None:
    """What comes after ``conflict``; None when it ends the operation.

    :param touched: what the look showed: whether what the write changes was
        touched (None: no look, or none possible).
    """
    if conflict.ends:
        return None
    if not conflict.explained:
        return Next.CONTENDED if touched else None
    if touched is False:
        return Next.UNTOUCHED
    if conflict.stale and not conflict.premise_read:
        return Next.WRONG_GUESS
    return Next.CONTENDED
