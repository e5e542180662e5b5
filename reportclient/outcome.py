"""Generation arithmetic: what Placement's state proves about a write.

Placement has no idempotency key, so when a write's answer is lost the only
evidence of its fate is the consumer's generation and content read
afterwards. These functions turn that evidence into a verdict without
guessing; :mod:`reportclient.cycle` decides what each verdict allows.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from reportclient.models import AllocationWrite, ConsumerAllocations

__all__ = ["Fate", "already_holds", "fate"]


class Fate(enum.Enum):
    """What a re-read proves about a write whose answer was lost."""

    #: Placement still holds the generation the write carried: it has not
    #: landed, and any write carrying that generation excludes it.
    PENDING = "pending"
    #: Exactly one write moved the generation, and not to what this write
    #: would have made: it did not land and never can.
    NOT_LANDED = "not landed"
    #: The state is what the write would have made, or several writes (or
    #: a delete) happened since: only guessing could say more.
    UNKNOWN = "unknown"


def fate(write: AllocationWrite, state: ConsumerAllocations) -> Fate:
    """Decide a lost write's fate from a state read afterwards, by generation arithmetic.

    A write carrying generation N can only land while Placement holds N, and
    landing makes N+1 (holding the write's allocations) or deletes the
    consumer (an empty write). Content equal to the write's proves nothing:
    another writer may have written the same. A write that expected a new
    consumer (N is None) is pending while the consumer is missing.
    """
    sent = write.consumer_generation
    if sent is None:
        return Fate.PENDING if not state.exists else Fate.UNKNOWN
    if not state.exists or state.generation is None:
        return Fate.UNKNOWN  # deleted since, before or after the write landed
    if state.generation == sent:
        return Fate.PENDING
    # Exactly one write since N. Had it been this one, Placement would hold
    # its allocations (or, for an empty write, no consumer at all).
    if state.generation == sent + 1 and (
        not write.allocations or state.allocations != write.allocations
    ):
        return Fate.NOT_LANDED
    return Fate.UNKNOWN


def already_holds(
    current: ConsumerAllocations,
    desired: Mapping[str, Mapping[str, int]],
    owner: tuple[str, str],
    ctype: str | None,
) -> bool:
    """Whether writing ``desired`` would change nothing Placement holds."""
    if not desired:
        return not current.exists
    return (
        current.exists
        and current.allocations == desired
        and (current.project_id, current.user_id) == owner
        and (ctype is None or current.consumer_type in (None, ctype))
    )
