"""One write operation's read -> compute -> write attempts, and the invariants they keep.

A :class:`WriteCycle` carries what earlier attempts of the same operation
learned (that the cache was wrong, the generation a conflict revealed, a
state read after a lost answer, writes whose fate is still open) into the
next attempt. Deciding *whether* there is a next attempt is the retry
policy's job, in :mod:`client`.

The invariants (README.rst, "Write semantics"):

* **No clobber.** A claim replaces only what this client knew (its cache,
  however old, or nothing for a consumer it takes for new) or what it wrote
  itself; anything else raises :class:`ConsumerChanged` unless the caller
  asked to overwrite. An update's ``mutate`` is always called on the state
  the write will replace.
* **No resurrection.** Only a claim creates a consumer; an update of a
  consumer that does not exist raises :class:`ConsumerGone`.
* **No stale premise.** ``mutate`` sees a copy of a state Placement
  returned (or accepted) within the cache's trust window, never an
  invented one.
* **At most once.** When a write's answer is lost, generation arithmetic
  (:func:`reportclient.outcome.fate`) decides whether it landed; a mutation that is not
  idempotent is never written again unless the arithmetic proves the first
  write did not land and never can, and otherwise the caller gets
  :class:`OutcomeUnknown`.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reportclient.cache import ConsumerCache
from reportclient.candidates import MAPPINGS_VERSION
from reportclient.errors import (
    ConsumerChanged,
    ConsumerGone,
    GenerationConflict,
    OutcomeUnknown,
    PlacementError,
    PlacementUnavailable,
)
from reportclient.models import (
    Allocations,
    AllocationWrite,
    ConsumerAllocations,
    normalize_allocations,
)
from reportclient.outcome import Fate, already_holds, fate
from reportclient.transport import CONSUMER_TYPE_VERSION, LEAN_VERSION, Transport

__all__ = ["Kind", "Mutator", "Reader", "WriteCycle"]

LOG = logging.getLogger("reportclient")

#: Given the consumer's current state, return the allocations it should hold.
Mutator = Callable[[ConsumerAllocations], Allocations]
#: Reads a consumer from Placement (and refreshes the cache).
Reader = Callable[[str, str | None], ConsumerAllocations]

DEFAULT_CONSUMER_TYPE = "INSTANCE"


class Kind(enum.Enum):
    """What an operation may do to a consumer."""

    #: Hold exactly the given allocations; the only kind that creates.
    CLAIM = "claim"
    #: Read-modify-write of an existing consumer.
    UPDATE = "update"
    #: Remove whatever the consumer holds; a missing consumer is done.
    RELEASE = "release"


class WriteCycle:
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
    """

    def __init__(
        self,
        transport: Transport,
        cache: ConsumerCache,
        read: Reader,
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
    ) -> None:
        self._transport = transport
        self._cache = cache
        self._reader = read
        self.consumer = consumer
        self._mutate = mutate
        self._kind = kind
        self._idempotent = idempotent
        self._overwrite = overwrite
        self._owner = owner
        self._ctype = ctype
        self._request_id = request_id
        self._mappings = mappings  # an allocation candidate's, sent along (1.34+)
        self._need_read = False
        self._prefetched: ConsumerAllocations | None = None
        self._hint: int | None = None
        self._known: ConsumerAllocations | None = None
        self._known_taken = False
        #: Writes whose answer was lost and which may still land.
        self.pending: list[AllocationWrite] = []
        # The last lost answer's error, and an idempotent operation's write
        # that may have landed before others changed the consumer again.
        self._lost: PlacementUnavailable | None = None
        self._maybe_landed: AllocationWrite | None = None
        #: The last state read from Placement during this operation.
        self.last_read: ConsumerAllocations | None = None
        #: Whether the last failed write was computed from a state just read
        #: (a conflict then means writers contend, not that a cache was stale).
        self.contended = False

    @property
    def subject(self) -> str:
        """What this operation writes, for logs."""
        return f"consumer {self.consumer}"

    def still_pending(self, exc: PlacementError) -> OutcomeUnknown:
        """The error for giving up (``exc``) while a write of ours may still land."""
        return OutcomeUnknown(
            f"gave up while a write whose answer was lost may still land: {exc.message}",
            sent=self.pending[-1],
            state=self.last_read,
            status=exc.status,
            code=exc.code,
            request_id=exc.request_id,
            method="PUT",
            url=f"/allocations/{self.consumer}",
        )

    def attempt(self, number: int) -> ConsumerAllocations:
        """Run attempt ``number``; return the consumer's state once it holds what was asked.

        :raises GenerationConflict: the write lost a race (retriable).
        :raises PlacementUnavailable: Placement did not answer (retriable).
        :raises OutcomeUnknown: a write may have landed and cannot be risked again.
        :raises ConsumerChanged: a claim would overwrite what it never saw.
        :raises ConsumerGone: an update's consumer does not exist.
        """
        # Negotiated once per client, before anything that could write: a
        # failed GET / proves nothing was written.
        send_type = self._transport.supports(CONSUMER_TYPE_VERSION)
        current, fresh = self._start()
        planned = self._plan(current, fresh)
        if isinstance(planned, ConsumerAllocations):
            return planned
        try:
            return self._write(planned, send_type, current.consumer_type)
        except GenerationConflict as exc:
            self._cache.discard(self.consumer)
            self._need_read = True
            self._hint = exc.server_generation
            self.contended = fresh
            exc.attempts = number
            raise
        except PlacementUnavailable as exc:
            if not exc.outcome_unknown:
                raise  # nothing reached Placement; what we knew still holds
            self.pending.append(planned)
            self._lost = exc
            self._cache.discard(self.consumer)
            return self._after_lost_answer(exc)
        except PlacementError as exc:
            if self.pending:
                # Refused now, but an earlier write of ours may still land.
                refusal = f"{exc.message}; but "
                raise self._unknown(self.pending[-1], self.last_read, refusal) from exc
            raise

    def _after_lost_answer(self, write_error: PlacementUnavailable) -> ConsumerAllocations:
        """Look at once; settle the operation if the read proves enough, else retry later.

        If this read fails, the next attempt reads first anyway: an open
        write in ``pending`` makes it.
        """
        try:
            reread = self._read()
        except PlacementUnavailable:
            # The caller's question is the write's fate, so the write's
            # error is raised; the read's is its __context__.
            raise write_error from write_error.__cause__
        planned = self._plan(reread, True)
        if isinstance(planned, ConsumerAllocations):
            LOG.info("consumer %s: answer lost, but Placement holds what was asked", self.consumer)
            return planned
        self._prefetched = reread
        self.contended = False
        raise write_error

    def _start(self) -> tuple[ConsumerAllocations, bool]:
        """The state this attempt computes from, and whether it was just read."""
        if self._prefetched is not None:
            state, self._prefetched = self._prefetched, None
            return state, True
        if self._need_read or self.pending:
            return self._read(), True
        found = self._cache.lookup(self.consumer)
        if not self._known_taken:
            # What this client knew when the operation began: a claim's
            # premise (None: it takes the consumer for new).
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
        return self._read(), True

    def _plan(
        self, current: ConsumerAllocations, fresh: bool
    ) -> ConsumerAllocations | AllocationWrite:
        """Either the operation's result (nothing to write) or the write to send."""
        if fresh:
            done = self._settle_pending(current)
            if done is not None:
                return done
        if self._kind is Kind.UPDATE and not current.exists:
            raise ConsumerGone(
                "the consumer does not exist; updates never create one (claim does)",
                state=current,
                consumer_uuid=self.consumer,
            )
        if self._kind is Kind.RELEASE and fresh and not current.allocations:
            return current  # nothing left to release
        if callable(self._mutate):
            desired = normalize_allocations(self._mutate(_copy(current)))
        else:
            desired = self._mutate
        if not desired and not fresh and not current.exists:
            # Emptying a consumer we believe missing: an empty write as a new
            # consumer would leave Placement an invisible generation-0 record
            # if it is, so look instead.
            return self._plan(self._read(), True)
        if fresh and self._kind is Kind.CLAIM:
            self._check_premise(current, desired)
        owner = self._owner or _owner_of(current)
        if fresh and already_holds(current, desired, owner, self._ctype):
            return current
        # A type goes only where it is asked for or needed: a consumer this
        # write makes appear (missing, or Placement's invisible empty
        # record). Otherwise Placement keeps the consumer's own type, and
        # the write can go at a version without consumer types.
        ctype = self._ctype
        if ctype is None and not current.allocations and desired:
            ctype = DEFAULT_CONSUMER_TYPE
        return AllocationWrite(self.consumer, desired, current.generation, *owner, ctype)

    def _settle_pending(self, state: ConsumerAllocations) -> ConsumerAllocations | None:
        """Apply what a fresh read proves about writes whose answers were lost.

        Returns ``state`` when it already is what an idempotent operation
        wanted; raises :class:`OutcomeUnknown` when a mutation that is not
        idempotent may have landed; drops writes that can no longer land.
        """
        if not self.pending:
            return None
        still_open = []
        for write in self.pending:
            verdict = fate(write, state)
            if self._idempotent:
                if already_holds(state, write.allocations, (write.project_id, write.user_id), None):
                    if verdict is Fate.PENDING:
                        # Right, but the write may still land and move the
                        # generation: do not write from this state later.
                        self._cache.put(state, trusted=False)
                    self.pending.clear()
                    return state
                if verdict is Fate.PENDING:
                    still_open.append(write)
                elif verdict is Fate.UNKNOWN:
                    self._maybe_landed = write
            elif verdict is Fate.UNKNOWN:
                raise self._unknown(write, state) from self._lost
            elif verdict is Fate.PENDING:
                still_open.append(write)
        self.pending[:] = still_open
        return None

    def _check_premise(
        self, state: ConsumerAllocations, desired: dict[str, dict[str, int]]
    ) -> None:
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
            self._cache.discard(self.consumer)
        else:
            self._cache.put(known, trusted=False)
        if self._maybe_landed is not None:
            # "Nothing was overwritten" would be a guess: this claim's own
            # write may have landed before the other writer's.
            raise self._unknown(self._maybe_landed, state) from self._lost
        raise ConsumerChanged(
            f"another writer changed the consumer: it holds {_describe(state)}, "
            f"where this client knew {_describe(known)}; nothing was overwritten",
            state=state,
            known=known,
            consumer_uuid=self.consumer,
        )

    def _unknown(
        self, write: AllocationWrite, state: ConsumerAllocations | None, refusal: str = ""
    ) -> OutcomeUnknown:
        """The error for ``write``, whose fate ``state`` (None: unread) cannot settle."""
        lost = self._lost
        answer = lost.message if lost is not None else "no answer"
        now = "was not read" if state is None else f"holds {_describe(state)}"
        return OutcomeUnknown(
            f"{refusal}a write carrying generation {write.consumer_generation} may or may not "
            f"have landed ({answer}); Placement {now}",
            sent=write,
            state=state,
            lost=lost,
            method="PUT",
            url=f"/allocations/{self.consumer}",
        )

    def _read(self) -> ConsumerAllocations:
        """Read the consumer, trusting a conflict's "expected N" over an empty GET.

        Placement keeps a generation for a consumer that was written empty
        while it did not exist, yet GET shows that consumer as missing; only
        the conflict's detail reveals the generation it expects.
        """
        state = self._reader(self.consumer, self._request_id)
        if self._hint is not None and not state.exists and not state.allocations:
            state = dataclasses.replace(state, generation=self._hint)
        self._need_read = False
        self.last_read = state
        return state

    def _write(
        self, write: AllocationWrite, send_type: bool, current_type: str | None
    ) -> ConsumerAllocations:
        """PUT ``write``; the state it makes (``current_type`` stays unless a type is sent)."""
        body: dict[str, Any] = {
            "allocations": {rp: {"resources": res} for rp, res in write.allocations.items()},
            "consumer_generation": write.consumer_generation,
            "project_id": write.project_id,
            "user_id": write.user_id,
        }
        if send_type and write.consumer_type is not None:
            body["consumer_type"] = write.consumer_type
        if self._mappings and write.allocations and self._transport.supports(MAPPINGS_VERSION):
            body["mappings"] = {group: list(rps) for group, rps in self._mappings.items()}
        self._transport.request(
            "PUT",
            f"/allocations/{self.consumer}",
            json=body,
            consumer_uuid=self.consumer,
            global_request_id=self._request_id,
            at_most=(
                None
                if "consumer_type" in body
                else MAPPINGS_VERSION
                if "mappings" in body
                else LEAN_VERSION
            ),
        )
        # Nothing else can land now: every open write carried a generation
        # this one consumed (or expected the consumer this one created).
        self.pending.clear()
        if write.allocations:
            # Placement answers 204 without a body; its generation rule is
            # new consumer -> 1, every write +1. A wrong guess costs a retry.
            new = ConsumerAllocations(
                self.consumer,
                write.allocations,
                (write.consumer_generation or 0) + 1,
                write.project_id,
                write.user_id,
                write.consumer_type if send_type and write.consumer_type else current_type,
            )
        else:
            new = ConsumerAllocations.missing(self.consumer)  # an empty write deletes it
        self._cache.put(new)
        return new


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
