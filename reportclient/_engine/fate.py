"""The fate rule: what a state read after a lost answer proves about the write.

Everything that decides whether a write whose answer was lost has landed
lives here, and nothing here does I/O: the engine gathers the evidence (what
the write carried, what it was computed from, what it would make, and what a
read afterwards shows), this module gives the verdict, and the engine acts
on it. Every generation-guarded write (one consumer, several consumers in
one POST, one provider field, a reshape) is judged by the same rule, subject
by subject, then combined.

Placement has no idempotency key. A write carrying generation N can only
land while the subject is at N, and landing makes N+1 holding what it wrote
(an empty allocation write deletes the consumer instead). Generations restart
after a delete (a consumer re-created by a claim is at 1 again, a provider
re-created under its uuid at 0), so *equal numbers do not prove the same
subject*: the content at N is compared with the content the write was
computed from at N, and a difference proves a delete and re-create
happened in between. "Missing" proves nothing about a write that created or
deleted the subject: it may have landed and been deleted since. Whatever
the read cannot tell apart is :attr:`Fate.UNKNOWN`, and the engine never
writes again on an unknown (an idempotent operation may still find that
Placement already holds what it wants, which needs no write).

Two histories remain that no read can tell from a simpler one, and the
verdicts below take the simpler: a subject deleted and re-created back to
exactly N *with the same content* as the premise (taken for "nothing
happened", :attr:`Fate.PENDING`), and one deleted after the write landed and
re-created to exactly N+1 with other content (taken for "one other write",
:attr:`Fate.NOT_LANDED`). Each needs a delete, a re-creation and the right
number of writes inside one round trip.

A third window is not the fate rule's but the generation guard's own: a
subject deleted and re-created back to exactly the generation a write
carries, between the read the write was computed from and the write, takes
the write (doc/source/write_semantics.rst, the ABA column). No read can see
it; the model checker (``tests/machines/write_machine.py``) counts all three apart
from violations.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Evidence", "Fate", "combine", "fate"]


class Fate(enum.Enum):
    """What a re-read proves about a write whose answer was lost."""

    #: The subject is still at the generation the write carried, holding
    #: what the write was computed from: the write has not landed, and any
    #: write carrying the same generation excludes it.
    PENDING = "pending"
    #: Exactly one write moved the generation, and not to what this write
    #: would have made: it did not land and never can.
    NOT_LANDED = "not landed"
    #: The read cannot tell whether the write landed (what it would have
    #: made, several writes since, a delete, a re-created subject).
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One subject's part of a lost write, and what a read afterwards showed.

    :param carried: the generation the write carried; None when it expected
        the subject not to exist (it creates it).
    :param seen: the generation read afterwards; None when the subject is missing.
    :param as_premised: the read shows the content the write was computed
        from (compared as Placement stores it).
    :param as_written: the read shows what the write would have made (for a
        write that deletes the subject: that it is missing).
    """

    carried: int | None
    seen: int | None
    as_premised: bool
    as_written: bool


def fate(evidence: Evidence) -> Fate:
    """The verdict on one subject's part of a lost write."""
    carried, seen = evidence.carried, evidence.seen
    if carried is None or seen is None:
        # A create may have landed and been deleted since, or not yet; a
        # subject gone may have been deleted before or after the write.
        return Fate.UNKNOWN
    if seen == carried:
        # Same number: the same subject only if it holds the same content.
        return Fate.PENDING if evidence.as_premised else Fate.UNKNOWN
    if seen == carried + 1 and not evidence.as_written:
        return Fate.NOT_LANDED
    # N+1 holding what was written (ours, or another writer's same write),
    # N+2 and on, or below N (deleted and re-created).
    return Fate.UNKNOWN


def combine(verdicts: Iterable[Fate]) -> Fate:
    """The verdict on one all-or-nothing write from its subjects' verdicts.

    The write lands whole or not at all, and landing moves every subject it
    carries. One subject proving it can never land settles it; one still at
    the generation it carried, holding its premise, proves it has not landed
    yet (the next write carries that generation too, so at most one of the
    two can). Only when every subject is open is the whole unknown.
    """
    seen = set(verdicts)
    if Fate.NOT_LANDED in seen:
        return Fate.NOT_LANDED
    if Fate.PENDING in seen:
        return Fate.PENDING
    return Fate.UNKNOWN
