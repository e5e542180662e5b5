"""The one attempt skeleton every generation-guarded write runs on.

A :class:`GuardedWrite` is one operation (a claim, an update, a release, a
multi-consumer POST, a provider field change, a reshape) and its attempts:
*read* the state the write depends on (or take it from the cache), *plan*
the write from it, *send* it, and *settle* what a lost answer left open. The
four steps are hooks a subclass fills in for its own subject; everything
between them is here, once:

* a conflict is judged by the attempt step (:mod:`.attempt_step`, a pure
  table): whether to look at once, and whether the next attempt goes at
  once (a wrong guess, an untouched field) or after the policy's wait over
  the window the client lends it (:mod:`.contention`), counted or not;
* a lost answer (reset, read timeout, 5xx) keeps the write as *pending*,
  reads at once, and judges every pending write by the one fate rule
  (:mod:`reportclient._engine.fate`): not landed is dropped, pending is
  kept (the next write carries the same generation, so at most one lands),
  and unknown ends the operation, in :class:`OutcomeUnknown`, unless it is
  idempotent and Placement already holds what it wants;
* an operation that ends in any way while a write of its own may still land
  (a refusal, a caller's callback raising, a premise gone, the policy giving
  up) ends in :class:`OutcomeUnknown`, chained from what ended it.

Deciding *whether* there is a next attempt, and when, is the retry policy's
job within the client's bounds (:func:`reportclient._engine.attempts.run_attempts`);
deciding what an attempt does is this class's.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from reportclient._engine.attempt_step import Conflict, Next, after_conflict, look
from reportclient._engine.contention import ContentionMemory
from reportclient._engine.fate import Evidence, Fate, combine, fate
from reportclient.errors import (
    ConsumerChanged,
    GenerationConflict,
    OutcomeUnknown,
    PlacementError,
    PlacementOverloaded,
    PlacementUnavailable,
    ProviderChanged,
)

__all__ = [
    "RETRIABLE",
    "Done",
    "GuardedWrite",
    "UnexplainedConflict",
    "request_fields",
    "retriable",
]

#: What a :class:`PlacementError` says of its request (the keywords of the same names).
_REQUEST_FIELDS = ("status", "code", "title", "detail", "request_id", "method", "url")


def request_fields(exc: PlacementError) -> dict[str, Any]:
    """The request an error answered, as keywords for an error that stands for it."""
    return {name: getattr(exc, name) for name in _REQUEST_FIELDS}


#: Decisions about an operation's fate (a lost answer settled by a read).
LOG = logging.getLogger("reportclient.engine")

StateT = TypeVar("StateT")
SentT = TypeVar("SentT")
ResultT = TypeVar("ResultT")

#: The kinds of failure an attempt may be retried after.
RETRIABLE = (GenerationConflict, PlacementUnavailable)


class UnexplainedConflict(GenerationConflict):
    """A conflict worded as none of Placement's, that a read at once did not explain.

    The operation ends on it (retrying cannot win): raised in place of the
    conflict, with its status, code, detail and request id.
    """

    @classmethod
    def of(cls, exc: GenerationConflict) -> UnexplainedConflict:
        return cls(
            exc.message,
            attempts=exc.attempts,
            consumer_uuid=exc.consumer_uuid,
            **request_fields(exc),
        )


# Subclasses of the retriable kinds that end an operation: retrying them
# would overwrite, apply a mutation twice, or spend what the client's retry
# budget already refused.
_TERMINAL = (
    ConsumerChanged,
    ProviderChanged,
    OutcomeUnknown,
    PlacementOverloaded,
    UnexplainedConflict,
)


def retriable(exc: BaseException | None) -> bool:
    """Whether ``exc`` leaves the operation worth another attempt."""
    return isinstance(exc, RETRIABLE) and not isinstance(exc, _TERMINAL)


@dataclass(frozen=True, slots=True)
class Done(Generic[ResultT]):
    """A plan's answer when there is nothing to write: the operation's result."""

    value: ResultT


class GuardedWrite(abc.ABC, Generic[StateT, SentT, ResultT]):
    """One operation's attempts; subclasses say how to read, plan and send.

    :param idempotent: applying the operation to its own result changes
        nothing; only then may an unknown fate be settled by finding that
        Placement already holds what the operation wants.
    :param memory: where the client learns how long contending writers of a
        subject need to spread out (:mod:`reportclient._engine.contention`);
        None suggests no window, and the policy's own wait applies.
    """

    def __init__(self, *, idempotent: bool, memory: ContentionMemory | None = None) -> None:
        self.idempotent = idempotent
        self._memory = memory
        self._contended_conflicts = 0
        self._window: float | None = None
        #: Writes whose answer was lost and which may still land.
        self.pending: list[SentT] = []
        #: The last state read during this operation.
        self.last_read: StateT | None = None
        #: What the attempt step decided after the last failure (None: it
        #: was no conflict, and the policy's own wait applies).
        self.next: Next | None = None
        self._lost: PlacementUnavailable | None = None
        self._prefetched: StateT | None = None
        self._must_read = False

    # -- hooks ---------------------------------------------------------------
    @property
    @abc.abstractmethod
    def subject(self) -> str:
        """What this operation writes, for logs."""

    @property
    def turn(self) -> str | None:
        """The subject on which this client's writers take turns; None takes no turn.

        A write of one subject names it; a write of several (a batch, a
        reshape) takes none, so that no thread ever waits for one turn
        while holding another.
        """
        return None

    @abc.abstractmethod
    def read(self) -> StateT:
        """Read, from Placement, everything the write depends on."""

    def start(self) -> tuple[StateT, bool]:
        """The state a first attempt computes from, and whether it was just read.

        The default reads; a subclass may take a cached state or a guess.
        """
        return self.fresh(), True

    @abc.abstractmethod
    def plan(self, state: StateT, fresh: bool) -> SentT | Done[ResultT]:
        """The write to send from ``state``, or the result when nothing is to be written."""

    @abc.abstractmethod
    def send(self, sent: SentT) -> ResultT:
        """Send the write; its result once Placement accepted it."""

    @abc.abstractmethod
    def evidence(self, sent: SentT, state: StateT) -> Iterable[Evidence]:
        """Per subject of ``sent``, what ``state`` (read after its answer was lost) shows."""

    @abc.abstractmethod
    def holds(self, sent: SentT, state: StateT, open_write: bool) -> ResultT | None:
        """The result if ``state`` already is what the operation wants, else None.

        :param open_write: a pending write may still land on ``state``.
        """

    @abc.abstractmethod
    def unknown(self, sent: SentT, state: StateT | None, why: str) -> OutcomeUnknown:
        """The error for ``sent``, whose fate ``state`` (None: unread) cannot settle."""

    def premise_read(self, sent: SentT) -> bool:
        """Whether ``sent`` was computed wholly from what a read just returned.

        False makes a conflict on it a wrong guess (retried at once), not
        contention, even on an attempt that read: a consumer's generation
        taken from a conflict's "expected N" is one.
        """
        return True

    def conflicted(self, sent: SentT, exc: GenerationConflict) -> None:
        """Learn from a conflict (read hints in its detail); the gateway forgot the subject."""

    def landed_since(self, sent: SentT, exc: GenerationConflict) -> int | None:
        """How many writes landed between ``sent``'s read and its conflict, if the conflict says."""
        return None

    def look_after_conflict(self, sent: SentT) -> tuple[StateT, bool] | None:
        """Read at once after a conflict, and say whether writers contend on what ``sent`` changes.

        Called after a conflict on a write computed from a fresh read, or on
        one that lost Placement's in-server race. The default reads nothing:
        the next attempt reads, after the policy's wait when the failed write
        was computed from a fresh read. A subject whose generation moves
        under writes of something else (a provider's, under allocations) or
        whose write can lose to other subjects' writes (a consumer's, to
        allocations on the same providers) overrides this: when the re-read
        shows what the write changes untouched, there is nothing to wait for.
        """
        return None

    def forget(self) -> None:
        """The operation ends while a write of its own may still land: forget its subjects.

        The gateway forgot them when the answer was lost; reads since then
        stored what they saw, which that write may still change.
        """

    # -- the skeleton ----------------------------------------------------------
    @property
    def memory(self) -> ContentionMemory | None:
        """The client's contention memory (windows and turns), if it keeps one."""
        return self._memory

    @property
    def lost(self) -> PlacementUnavailable | None:
        """The last lost answer's error."""
        return self._lost

    def fresh(self) -> StateT:
        """Read now (for hooks that must look before they plan)."""
        try:
            state = self.read()
        except PlacementError as exc:
            if self.pending and not retriable(exc):
                # A subject gone (404) proves nothing about a write of ours.
                raise self.unknown(self.pending[-1], None, f"{exc.message}; but ") from exc
            raise
        self._must_read = False
        self.last_read = state
        return state

    def attempt(self, number: int) -> ResultT:
        """Run attempt ``number``: the result once Placement holds what was asked.

        :raises GenerationConflict: the write lost a race (retriable).
        :raises PlacementUnavailable: Placement did not answer (retriable).
        :raises OutcomeUnknown: a write may have landed and cannot be risked again.
        """
        began = self._memory.clock() if self._memory is not None else 0.0
        state, fresh = self._start()
        if fresh and self.pending:
            settled = self._settle(state)
            if settled is not None:
                return settled.value
        planned = self._plan(state, fresh)
        if isinstance(planned, Done):
            return planned.value
        fresh = fresh and self.premise_read(planned)
        try:
            result = self.send(planned)
        except GenerationConflict as exc:
            self._must_read = True
            exc.attempts = number
            self.conflicted(planned, exc)
            conflict = Conflict(
                premise_read=fresh,
                stale=exc.consumer_conflict or exc.provider_conflict,
                ends=isinstance(exc, ConsumerChanged),
                explained=exc.explained,
            )
            touched = self._look_after_conflict(planned) if look(conflict) else None
            self.next = after_conflict(conflict, touched)
            if self.next is None and not conflict.ends:
                raise UnexplainedConflict.of(exc) from exc
            if self.next is Next.CONTENDED:
                # The look's read only serves a retry sent at once.
                self._prefetched = None
                self._must_read = True
                if self._memory is not None:
                    self._contended_conflicts += 1
                    cycle = self._memory.clock() - began
                    landed = self.landed_since(planned, exc)
                    self._window = self._memory.window(
                        self.subject, cycle, self._contended_conflicts, landed, self._window
                    )
            raise
        except PlacementUnavailable as exc:
            if not exc.outcome_unknown:
                raise  # nothing reached Placement; what we knew still holds
            self.pending.append(planned)
            self._lost = exc
            return self._after_lost_answer(exc)
        except PlacementError as exc:
            if self.pending:
                # Refused now, but an earlier write of ours may still land.
                raise self.unknown(
                    self.pending[-1], self.last_read, f"{exc.message}; but "
                ) from exc
            raise
        # Nothing open can land any more: each carried a generation (or
        # expected a subject to be missing) that this write consumed.
        self.pending.clear()
        return result

    @property
    def window(self) -> float | None:
        """The window lent to the policy's wait after a contended conflict, if any."""
        return self._window if self.next is Next.CONTENDED else None

    def succeeded(self) -> None:
        """Tell the contention memory what this operation needed."""
        if self._memory is not None:
            self._memory.done(self.subject, self._window, self._contended_conflicts)

    def still_pending(self, exc: PlacementError) -> OutcomeUnknown:
        """The error for giving up (``exc``) while a write of ours may still land."""
        return self.unknown(self.pending[-1], self.last_read, f"gave up ({exc.message}) while ")

    def _start(self) -> tuple[StateT, bool]:
        if self._prefetched is not None:
            state, self._prefetched = self._prefetched, None
            return state, True
        if self._must_read or self.pending:
            return self.fresh(), True
        return self.start()

    def _plan(self, state: StateT, fresh: bool) -> SentT | Done[ResultT]:
        try:
            return self.plan(state, fresh)
        except Exception as exc:  # the caller's callback raised, the premise is gone
            ended = self._ended_by(exc, state)
            if ended is exc:
                raise
            raise ended from exc

    def _ended_by(self, exc: Exception, state: StateT) -> Exception:
        """What to raise for ``exc`` ending the operation: itself, or OutcomeUnknown.

        Itself while nothing is open, or when it leaves the operation to the
        policy; otherwise a write of ours may still land, and the caller must
        hear that first.
        """
        if not self.pending or retriable(exc) or isinstance(exc, OutcomeUnknown):
            return exc
        why = f"the operation ended ({type(exc).__name__}: {exc}) while "
        return self.unknown(self.pending[-1], state, why)

    def _settle(self, state: StateT) -> Done[ResultT] | None:
        """Judge every pending write by ``state``; a result when that ends the operation."""
        verdicts = [combine(fate(e) for e in self.evidence(s, state)) for s in self.pending]
        unknown = [s for s, v in zip(self.pending, verdicts, strict=True) if v is Fate.UNKNOWN]
        open_write = Fate.PENDING in verdicts
        if self.idempotent:
            try:
                result = self.holds(self.pending[-1], state, open_write)
            except Exception as exc:  # a caller's compute, judging the state
                ended = self._ended_by(exc, state)
                if ended is exc:
                    raise
                raise ended from exc
            if result is not None:
                self.pending.clear()
                return Done(result)
        if unknown:
            raise self.unknown(unknown[-1], state, "") from self._lost
        self.pending[:] = [
            s for s, v in zip(self.pending, verdicts, strict=True) if v is Fate.PENDING
        ]
        return None

    def _look_after_conflict(self, sent: SentT) -> bool | None:
        """Look, keeping the read for a retry at once; whether it was touched (None: no look)."""
        try:
            looked = self.look_after_conflict(sent)
        except PlacementUnavailable:
            return None  # the next attempt reads anyway
        if looked is None:
            return None
        self._prefetched, touched = looked
        self._must_read = False
        return touched

    def _after_lost_answer(self, error: PlacementUnavailable) -> ResultT:
        """Look at once; settle the operation if the read proves enough, else retry later."""
        try:
            state = self.fresh()
        except PlacementUnavailable:
            # The caller's question is the write's fate, so the write's
            # error is raised; the read's is its __context__.
            raise error from error.__cause__
        settled = self._settle(state)
        if settled is not None:
            LOG.info("%s: answer lost, but Placement holds what was asked", self.subject)
            return settled.value
        self._prefetched = state
        self.next = None
        raise error
