"""One consumer's claim, update or release, on the attempt skeleton.

The invariants (doc/source/write_semantics.rst):

* **No clobber.** A claim replaces only what this client knew (its cache,
  however old, or nothing for a consumer it takes for new) or what it wrote
  itself; a release empties only what it saw when it began. Anything else
  raises :class:`ConsumerChanged` unless the caller asked to overwrite. An
  update's ``mutate`` is always called on the state the write will replace.
* **No resurrection.** Only a claim creates a consumer; an update of a
  consumer that does not exist raises :class:`ConsumerGone`.
* **No stale premise.** ``mutate`` sees a copy of a state Placement
  returned (or accepted) within the cache's trust window, never an
  invented one.
* **At most once.** A lost answer is settled by the fate rule
  (:mod:`reportclient._engine.fate`), which compares the consumer's content
  at the carried generation with the premise the write was computed from,
  so a consumer deleted and re-created in between is never taken for the
  same one; nothing is written again on an unknown.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from reportclient._engine.contention import ContentionMemory
from reportclient._engine.fate import Evidence
from reportclient._engine.guarded_write import Done, GuardedWrite
from reportclient._gateway.gateway import Gateway
from reportclient._model.consumers import AllocationWrite, ConsumerAllocations, already_holds
from reportclient._model.microversions import CONSUMER_TYPE_VERSION, Microversion
from reportclient._model.mutators import Mutator
from reportclient._model.validation import normalize_allocations
from reportclient.errors import (
    ConsumerChanged,
    ConsumerGone,
    GenerationConflict,
    OutcomeUnknown,
    PlacementError,
)

__all__ = [
    "DEFAULT_CONSUMER_TYPE",
    "ConsumerWrite",
    "Kind",
    "changed",
    "check_release",
    "consumer_evidence",
]

#: The type a write gives a consumer it creates when the caller names none
#: (a client's ``default_consumer_type`` overrides it).
DEFAULT_CONSUMER_TYPE = "INSTANCE"


class Kind(enum.Enum):
    """What an operation may do to a consumer."""

    #: Hold exactly the given allocations; the only kind that creates.
    CLAIM = "claim"
    #: Read-modify-write of an existing consumer.
    UPDATE = "update"
    #: Remove whatever the consumer holds; a missing consumer is done.
    RELEASE = "release"


@dataclass(frozen=True, slots=True)
class Sent:
    """A write as sent, with the allocations it was computed from (its premise)."""

    write: AllocationWrite
    premise: Mapping[str, Mapping[str, int]]
    #: The consumer's type as read (None: not read); an acknowledged write keeps it.
    premise_type: str | None = None
    #: The generation carried came from a conflict's "expected N", not from a read.
    guessed: bool = False


class ConsumerWrite(GuardedWrite[ConsumerAllocations, Sent, ConsumerAllocations]):
    """The attempts of one claim, update or release of one consumer.

    :param kind: what the operation may do (see :class:`Kind`).
    :param mutate: computes the allocations to hold from a copy of the
        current state; or, for a claim or a release, the allocations
        themselves, already normalised (they do not depend on the state).
    :param idempotent: ``mutate`` applied to its own result changes nothing.
    :param overwrite: a claim may replace allocations it never saw.
    :param owner: (project_id, user_id) to write, or None to keep the
        consumer's own (a release).
    :param ctype: the consumer type asked for, or None to keep the
        consumer's own.
    :param default_type: the type of a consumer this write creates when
        ``ctype`` is None (the client's ``default_consumer_type``).
    :param start: the consumer as the caller just read it through this
        client, to compute the first attempt from instead of reading again.
        Taken as a cache entry is: a conflict on it is a wrong guess, read
        again at once, never contention.
    """

    def __init__(
        self,
        gateway: Gateway,
        consumer: str,
        mutate: Mutator | dict[str, dict[str, int]],
        *,
        kind: Kind,
        idempotent: bool,
        overwrite: bool = False,
        owner: tuple[str, str] | None,
        ctype: str | None,
        request_id: str | None,
        mappings: Mapping[str, Sequence[str]] | None = None,
        memory: ContentionMemory | None = None,
        default_type: str = DEFAULT_CONSUMER_TYPE,
        read_at_most: Microversion | None = None,
        start: ConsumerAllocations | None = None,
    ) -> None:
        super().__init__(idempotent=idempotent, memory=memory)
        self._start_with = start
        self._default_type = default_type
        self._gateway = gateway
        self._read_at_most = read_at_most
        self.consumer = consumer
        self._mutate = mutate
        self._kind = kind
        self._overwrite = overwrite
        self._owner = owner
        self._ctype = ctype
        self._request_id = request_id
        self._mappings = mappings  # an allocation candidate's, sent along (1.34+)
        self._hint: int | None = None
        # The last 409 this operation met: a refusal it led to names it.
        self._conflict: GenerationConflict | None = None
        self._about_consumer = False
        # What this client knew when the operation began: a claim's premise
        # (None: it takes the consumer for new).
        self._known: ConsumerAllocations | None = None
        self._known_taken = False
        # What a release saw first: the only allocations it may empty.
        self._seen: Mapping[str, Mapping[str, int]] | None = None
        self._send_type = False

    @property
    def subject(self) -> str:
        """What this operation writes, for logs."""
        return f"consumer {self.consumer}"

    @property
    def turn(self) -> str:
        """This client's writers of the consumer take turns."""
        return self.subject

    # -- read ----------------------------------------------------------------
    def read(self) -> ConsumerAllocations:
        """Read the consumer: the state as Placement returned it, nothing added."""
        return self._gateway.read_consumer(self.consumer, self._request_id, self._read_at_most)

    def start(self) -> tuple[ConsumerAllocations, bool]:
        """The caller's state, a trusted cached one, the guess "new" for a claim, else a read."""
        if self._start_with is not None:
            start, self._start_with = self._start_with, None
            if not self._known_taken:
                self._known = start if start.exists else None
                self._known_taken = True
            return start, False
        found = self._gateway.consumer_entry(self.consumer)
        if not self._known_taken:
            self._known = found[0] if found is not None and found[0].exists else None
            self._known_taken = True
        if found is not None and found[1] and (found[0].exists or self._kind is Kind.CLAIM):
            return found[0], False
        if self._kind is Kind.CLAIM and (found is None or not found[0].exists):
            # A consumer this client never saw (or saw missing) is new: one
            # request. A wrong guess costs a conflict and a read.
            return ConsumerAllocations.missing(self.consumer), False
        # An untrusted entry, or an update or release without any entry:
        # read first, as a guess would cost a conflict and a read.
        return self.fresh(), True

    # -- plan ----------------------------------------------------------------
    def plan(self, current: ConsumerAllocations, fresh: bool) -> Sent | Done[ConsumerAllocations]:
        """The write to send from ``current``, or the result when nothing is to be written."""
        # Negotiated once per client, before anything that could write: a
        # failed GET / proves nothing was written.
        self._send_type = self._gateway.supports(CONSUMER_TYPE_VERSION)
        # A conflict's "expected N" serves the attempt right after it, once.
        hint, self._hint = self._hint, None
        if self._kind is Kind.UPDATE and not current.exists:
            raise ConsumerGone(
                "the consumer does not exist; updates never create one (claim does)",
                state=current,
                consumer_uuid=self.consumer,
            )
        if self._kind is Kind.RELEASE:
            if fresh and not current.allocations:
                return Done(current)  # nothing left to release
            self._check_release(current)
        if callable(self._mutate):
            desired = normalize_allocations(self._mutate(_copy(current)))
        else:
            desired = self._mutate
        if not desired and not fresh and not current.exists:
            # Emptying a consumer we believe missing: an empty write as a new
            # consumer would leave Placement an invisible generation-0 record
            # if it is, so look instead.
            return self.plan(self.fresh(), True)
        if fresh and self._kind is Kind.CLAIM:
            self._check_claim(current, desired)
        owner = self._owner or _owner_of(current)
        if fresh and already_holds(current, desired, owner, self._ctype):
            return Done(current)
        # A type goes only where it is asked for or needed: a consumer this
        # write makes appear (missing, or Placement's invisible empty
        # record). Otherwise Placement keeps the consumer's own type, and
        # the write can go at a version without consumer types.
        ctype = self._ctype
        if ctype is None and not current.allocations and desired:
            ctype = self._default_type
        generation, guessed = current.generation, False
        if hint is not None and fresh and not current.exists and desired:
            # Placement keeps a generation for a consumer written empty while
            # it did not exist, yet GET shows it missing; only the conflict
            # said which. It is evidence for this write's generation, never
            # a state: mutate saw the consumer missing, as read. Should the
            # record be gone since, this write collides on a guess, which is
            # retried at once, not waited on as contention.
            generation, guessed = hint, True
        write = AllocationWrite(self.consumer, desired, generation, *owner, ctype)
        return Sent(write, current.allocations, current.consumer_type, guessed)

    def _check_claim(self, state: ConsumerAllocations, desired: dict[str, dict[str, int]]) -> None:
        """Refuse a claim that would replace allocations this client never saw."""
        # A consumer holding nothing (missing, or Placement's invisible
        # generation-0 record) has nothing to clobber.
        if self._overwrite or not state.allocations or state.allocations == desired:
            return
        known = self._known
        if known is not None and known.exists and state.allocations == known.allocations:
            return
        # The read that found the change must not become what this client
        # knew: a caller retrying blindly would then overwrite it. Reading it
        # with get_allocations() (or overwrite=True) is how a caller says so.
        if known is None:
            self._gateway.forget_consumer(self.consumer)
        else:
            self._gateway.keep_known(known)
        raise changed(
            state,
            f"this client knew {_describe(known)}",
            "nothing was overwritten",
            known,
            conflict=self._conflict,
        )

    def _check_release(self, state: ConsumerAllocations) -> None:
        """Refuse to empty allocations this release never saw (a writer came in between)."""
        if self._seen is None:
            self._seen = state.allocations
        check_release(state, self._seen)

    # -- send ----------------------------------------------------------------
    def send(self, sent: Sent) -> ConsumerAllocations:
        """PUT the write; the state it makes (the consumer's type stays unless one is sent)."""
        return self._gateway.put_consumer(
            sent.write,
            send_type=self._send_type,
            kept_type=sent.premise_type,
            mappings=self._mappings,
            request_id=self._request_id,
        )

    def premise_read(self, sent: Sent) -> bool:
        """False for a write whose generation came from a conflict's detail, not a read."""
        return not sent.guessed

    def conflicted(self, sent: Sent, exc: GenerationConflict) -> None:
        """A stale generation: keep the server's "expected N" for the next attempt only.

        Only from a write sent as new (``null``): then "expected N" with a
        read showing the consumer missing is Placement's invisible record
        (an empty write to a missing consumer), which only the conflict
        names. After a write carrying a generation, "expected N" was a
        consumer that existed; a read showing it missing since means it was
        deleted, and the next write goes as new (issue 49: it carried N and
        collided again). The gateway has already forgotten the consumer.
        """
        self._hint = exc.server_generation if sent.write.consumer_generation is None else None
        self._about_consumer = exc.consumer_conflict or exc.consumer_moved
        self._conflict = exc

    def look_after_conflict(self, sent: Sent) -> tuple[ConsumerAllocations, bool] | None:
        """After an in-server race on the providers, re-read: was the consumer touched?

        Placement answers "Inventory and/or allocations changed while
        attempting to allocate: ...the resource provider data" when its own
        provider-generation bump lost to other allocations on the same
        providers, after retrying that itself
        (``allocation_conflict_retry_count``): schedulers claiming beside
        this write, not writers of this consumer. When the re-read shows the
        consumer at the generation the write carried, the next attempt goes
        at once from it (measured in the mixed cell, issue 20: a pair
        updating one consumer beside 14 claiming threads backed off as if
        contending and made 0.63-0.71x nova's updates/s).

        A stale consumer generation ("expected N but got M"), or the race
        Placement words "...updated the data" (the consumer's own bump lost
        inside the write's transaction), is contention on the consumer
        itself: no look, the policy waits and the next attempt reads after
        the wait. Every such look came back touched (16 writers on one
        consumer, PostgreSQL: 40 of 40), so it was a GET spent for nothing.
        """
        if self._about_consumer:
            return None
        state = self.fresh()
        return state, state.generation != sent.write.consumer_generation

    def landed_since(self, sent: Sent, exc: GenerationConflict) -> int | None:
        """Placement's "expected N but got M": M - N writes landed since the read."""
        carried, now = sent.write.consumer_generation, exc.server_generation
        if carried is None or now is None or now <= carried:
            return None
        return now - carried

    # -- settle --------------------------------------------------------------
    def evidence(self, sent: Sent, state: ConsumerAllocations) -> Iterator[Evidence]:
        """The consumer's part of the fate rule."""
        yield consumer_evidence(sent.write, sent.premise, state)

    def holds(
        self, sent: Sent, state: ConsumerAllocations, open_write: bool
    ) -> ConsumerAllocations | None:
        """``state`` if Placement already holds what the write asked for."""
        write = sent.write
        if write.allocations:
            done = already_holds(state, write.allocations, (write.project_id, write.user_id), None)
        else:
            done = not state.allocations
        if not done:
            return None
        if open_write:
            # Right, but the open write may still land and move the
            # generation: never write from this state later.
            self._gateway.keep_known(state)
        return state

    def unknown(self, sent: Sent, state: ConsumerAllocations | None, why: str) -> OutcomeUnknown:
        """The error for ``sent``, whose fate ``state`` (None: unread) cannot settle."""
        lost = self.lost
        answer = lost.message if lost is not None else "no answer"
        now = "was not read" if state is None else f"holds {_describe(state)}"
        return OutcomeUnknown(
            f"{why}a write carrying generation {sent.write.consumer_generation} may or may "
            f"not have landed ({answer}); Placement {now}; nothing is written again",
            sent=sent.write,
            state=state,
            lost=lost,
            method="PUT",
            url=lost.url if lost is not None else None,
        )


def check_release(state: ConsumerAllocations, seen: Mapping[str, Mapping[str, int]]) -> None:
    """A release empties only what it saw first (``seen``), or nothing at all.

    :raises ConsumerChanged: ``state`` holds other allocations; nothing is written.
    """
    if not state.allocations or state.allocations == seen:
        return
    raise changed(
        state,
        f"the release saw {dict(seen) or 'nothing'}",
        "nothing was removed (force_release removes whatever is there)",
    )


def changed(
    state: ConsumerAllocations,
    premise: str,
    outcome: str,
    known: ConsumerAllocations | None = None,
    *,
    conflict: GenerationConflict | None = None,
) -> ConsumerChanged:
    """The refusal of a write whose premise another writer changed: ``state`` is what it holds.

    Every claim, batch and release refuses the same way, worded once:
    what the consumer holds, what the write was computed from
    (``premise``), and that nothing was written (``outcome``).
    """
    return ConsumerChanged(
        f"another writer changed the consumer: it holds {_describe(state)}, "
        f"where {premise}; {outcome}",
        state=state,
        known=known,
        conflict=conflict,
        consumer_uuid=state.consumer_uuid,
    )


def consumer_evidence(
    write: AllocationWrite,
    premise: Mapping[str, Mapping[str, int]],
    state: ConsumerAllocations,
) -> Evidence:
    """What ``state``, read after ``write``'s answer was lost, shows (the fate rule's input)."""
    if write.allocations:
        as_written = state.exists and state.allocations == write.allocations
    else:
        as_written = not state.allocations  # an empty write deletes the consumer
    seen = state.generation
    if seen is not None and not state.allocations and state.project_id is None:
        # A generation taken from a conflict's "expected N" for a consumer the
        # read showed missing (Placement's invisible empty record, see read())
        # says what the next write should carry, not what landed: the consumer
        # may as well have been deleted since the conflict. Missing it is.
        seen = None
    return Evidence(
        carried=write.consumer_generation,
        seen=seen,
        as_premised=state.allocations == premise,
        as_written=as_written,
    )


def _copy(state: ConsumerAllocations) -> ConsumerAllocations:
    """A copy ``mutate`` may edit freely without touching what the client compares with."""
    return dataclasses.replace(
        state, allocations={rp: dict(res) for rp, res in state.allocations.items()}
    )


def _describe(state: ConsumerAllocations | None) -> str:
    if state is None:
        return "nothing (a new consumer)"
    if not state.exists:
        return "no consumer"
    return f"{dict(state.allocations)} at generation {state.generation}"


def _owner_of(state: ConsumerAllocations) -> tuple[str, str]:
    if state.project_id is None or state.user_id is None:
        raise PlacementError(
            "Placement did not report the consumer's project and user",
            consumer_uuid=state.consumer_uuid,
        )
    return state.project_id, state.user_id
