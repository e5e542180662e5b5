"""Several consumers' allocations written in one ``POST /allocations``, all or nothing.

The multi-consumer twin of :class:`reportclient.cycle.WriteCycle`, run by
the same :func:`reportclient.retry.run_attempts` engine and keeping the same
invariants (README.rst, "Write semantics"):

* every attempt reads every consumer it writes, computes what each should
  hold from those reads (a move's target depends on its source), and sends
  one POST carrying each consumer's generation; a conflict on any of them
  writes nothing, so the next attempt re-reads them all and recomputes;
* a part that may create a consumer (a claim, a move's target) replaces only
  what the caller expected it to hold, else :class:`ConsumerChanged`; a part
  that updates never creates (:class:`ConsumerGone`);
* a lost answer is settled by generation arithmetic, consumer by consumer.

Why per consumer and then combined: a POST lands whole or not at all, and
landing moves *every* consumer in it. So one consumer proving the POST can
never land (exactly one other write moved it elsewhere) settles the whole
POST as not landed; one consumer still at the generation the POST carried
proves it has not landed yet, and the next attempt carries that generation
too, so at most one of the two can. Only when every consumer's verdict is
open is the content consulted, and then only an idempotent operation may
take "Placement holds what was asked" as success.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reportclient.cache import ConsumerCache
from reportclient.cycle import DEFAULT_CONSUMER_TYPE, Kind, Reader
from reportclient.errors import (
    ConsumerChanged,
    ConsumerGone,
    GenerationConflict,
    OutcomeUnknown,
    PlacementError,
    PlacementUnavailable,
)
from reportclient.models import AllocationWrite, ConsumerAllocations, is_valid_name
from reportclient.outcome import Fate, already_holds, fate
from reportclient.transport import CONSUMER_TYPE_VERSION, Transport

__all__ = ["MultiWriteCycle", "Part", "Plan", "States", "combined_fate"]

LOG = logging.getLogger("reportclient")

#: Each consumer's state, as read at the start of an attempt.
States = Mapping[str, ConsumerAllocations]
#: From every part's current state, the allocations each part should hold.
Plan = Callable[[States], Mapping[str, Mapping[str, Mapping[str, int]]]]


@dataclass(frozen=True, slots=True)
class Part:
    """One consumer's share of a multi-consumer write.

    :param kind: CLAIM may create the consumer and replaces only what is
        expected; UPDATE needs it to exist; RELEASE has no premise and need
        not exist (a move's source, guarded by its generation alone).
    :param owner: (project_id, user_id) to write; None keeps the consumer's
        own, else the owner of ``owner_from``.
    :param owner_from: another part whose owner (and type) a new consumer
        takes, as a migration record takes its instance's.
    :param ctype: the consumer type asked for; None keeps the consumer's own.
    :param expected: for a CLAIM, what the caller knows it holds (None: what
        this client's cache knew when the operation began).
    """

    consumer: str
    kind: Kind
    owner: tuple[str, str] | None = None
    owner_from: str | None = None
    ctype: str | None = None
    expected: Mapping[str, Mapping[str, int]] | None = None


def combined_fate(writes: Sequence[AllocationWrite], states: States) -> Fate:
    """The fate of one lost POST from each of its consumers' states read afterwards."""
    verdicts = [fate(write, states[write.consumer_uuid]) for write in writes]
    if Fate.NOT_LANDED in verdicts:
        return Fate.NOT_LANDED
    if Fate.PENDING in verdicts:
        return Fate.PENDING
    return Fate.UNKNOWN


class MultiWriteCycle:
    """The attempts of one all-or-nothing write of several consumers.

    :param parts: the consumers written, each with its rules (:class:`Part`).
    :param plan: computes every part's allocations from all parts' states;
        may raise to refuse (a move whose source holds nothing).
    :param idempotent: ``plan`` applied to its own result changes nothing;
        only then may a lost answer be settled by content and written again.
    :param overwrite: CLAIM parts may replace allocations nobody expected.
    :param by_content: Placement holding what a lost POST asked for settles
        the operation even though it is not idempotent: true of a move, whose
        end state (source empty, target holding its allocations) says what
        was asked whoever made it, and which is not written again anyway.
    """

    def __init__(
        self,
        transport: Transport,
        cache: ConsumerCache,
        read: Reader,
        parts: Sequence[Part],
        plan: Plan,
        *,
        idempotent: bool,
        overwrite: bool = False,
        by_content: bool = False,
        request_id: str | None = None,
    ) -> None:
        self._transport = transport
        self._cache = cache
        self._reader = read
        self._parts = {part.consumer: part for part in parts}
        self._plan = plan
        self._idempotent = idempotent
        self._overwrite = overwrite
        self._by_content = by_content
        self._request_id = request_id
        # What this client knew of each CLAIM part when the operation began.
        self._known: dict[str, Mapping[str, Mapping[str, int]]] = {}
        for part in parts:
            if part.kind is Kind.CLAIM:
                found = self._cache.get(part.consumer)
                known = found.allocations if found is not None and found.exists else {}
                self._known[part.consumer] = part.expected if part.expected is not None else known
        self._prefetched: dict[str, ConsumerAllocations] | None = None
        # Lost POSTs, each the tuple of its consumers' writes.
        self._lost_posts: list[tuple[AllocationWrite, ...]] = []
        self._lost: PlacementUnavailable | None = None
        self._maybe_landed: tuple[AllocationWrite, ...] | None = None
        self._hints: dict[str, int] = {}
        #: Every consumer as last read during the operation.
        self.last_read: dict[str, ConsumerAllocations] | None = None
        self.contended = False

    @property
    def subject(self) -> str:
        """What this operation writes, for logs."""
        return "consumers " + ", ".join(self._parts)

    @property
    def pending(self) -> list[AllocationWrite]:
        """Writes whose answer was lost and which may still land."""
        return [write for post in self._lost_posts for write in post]

    def attempt(self, number: int) -> dict[str, ConsumerAllocations]:
        """Run attempt ``number``; return every consumer's state once all hold what was asked.

        :raises GenerationConflict: the POST lost a race (retriable).
        :raises PlacementUnavailable: Placement did not answer (retriable).
        :raises OutcomeUnknown: the POST may have landed and cannot be risked again.
        :raises ConsumerChanged: a part would overwrite what nobody expected.
        :raises ConsumerGone: an updated consumer does not exist.
        """
        send_type = self._transport.supports(CONSUMER_TYPE_VERSION)
        states = self._start()
        planned = self._compute(states)
        if isinstance(planned, dict):
            return planned
        try:
            return self._post(planned, send_type)
        except GenerationConflict as exc:
            self._learn_hint(planned, states, exc)
            for consumer in self._parts:
                self._cache.discard(consumer)
            self.contended = True  # every write here was computed from a fresh read
            exc.attempts = number
            raise
        except PlacementUnavailable as exc:
            if not exc.outcome_unknown:
                raise
            self._lost_posts.append(planned)
            self._lost = exc
            for consumer in self._parts:
                self._cache.discard(consumer)
            return self._after_lost_answer(exc)
        except PlacementError as exc:
            if self._lost_posts:
                raise self._unknown(self._lost_posts[-1], f"{exc.message}; but ") from exc
            raise

    def still_pending(self, exc: PlacementError) -> OutcomeUnknown:
        """The error for giving up (``exc``) while a lost POST may still land."""
        return self._unknown(
            self._lost_posts[-1],
            f"gave up ({exc.message}) while a write whose answer was lost may still land; ",
        )

    def _after_lost_answer(self, error: PlacementUnavailable) -> dict[str, ConsumerAllocations]:
        try:
            states = self._read_all()
        except PlacementUnavailable:
            raise error from error.__cause__
        planned = self._compute(states)
        if isinstance(planned, dict):
            LOG.info("%s: answer lost, but Placement holds what was asked", self.subject)
            return planned
        self._prefetched = states
        self.contended = False
        raise error

    def _start(self) -> dict[str, ConsumerAllocations]:
        states, self._prefetched = self._prefetched, None
        return states if states is not None else self._read_all()

    def _read_all(self) -> dict[str, ConsumerAllocations]:
        states = {}
        for consumer in self._parts:
            state = self._reader(consumer, self._request_id)
            hint = self._hints.get(consumer)
            if hint is not None and not state.exists and not state.allocations:
                # Placement's invisible generation-0 record (README, "Placement
                # behaviour worth knowing"): only a conflict's detail shows it.
                state = dataclasses.replace(state, generation=hint)
            states[consumer] = state
        self._hints.clear()
        self.last_read = states
        return states

    def _compute(
        self, states: dict[str, ConsumerAllocations]
    ) -> dict[str, ConsumerAllocations] | tuple[AllocationWrite, ...]:
        """Either every consumer's final state (nothing to write) or the POST's writes."""
        if self._settle(states):
            return states
        for consumer, part in self._parts.items():
            if part.kind is Kind.UPDATE and not states[consumer].exists:
                raise ConsumerGone(
                    "the consumer does not exist; a multi-consumer write updates it, "
                    "and updates never create one",
                    state=states[consumer],
                    consumer_uuid=consumer,
                )
        desired = {c: _plain(a) for c, a in self._plan(_copies(states)).items()}
        writes = []
        changed = False
        for consumer, part in self._parts.items():
            state = states[consumer]
            wanted = desired.get(consumer, {})
            if part.kind is Kind.CLAIM:
                self._check_premise(state, wanted)
            if not wanted and not state.exists:
                continue  # nothing to empty; an empty write would leave a phantom record
            owner = self._owner(part, states)
            changed = changed or not already_holds(state, wanted, owner, part.ctype)
            ctype = part.ctype or self._type(part, states)
            writes.append(AllocationWrite(consumer, wanted, state.generation, *owner, ctype))
        # A consumer that already holds its share still goes into the POST with
        # its generation: all or nothing must check every premise at once.
        return tuple(writes) if changed else states

    def _settle(self, states: States) -> bool:
        """Apply what fresh reads prove about lost POSTs; True when that settles the operation."""
        if not self._lost_posts:
            return False
        still_open = []
        for post in self._lost_posts:
            holds = all(
                already_holds(
                    states[w.consumer_uuid], w.allocations, (w.project_id, w.user_id), None
                )
                for w in post
            )
            verdict = combined_fate(post, states)
            if holds and (self._idempotent or self._by_content):
                self._lost_posts.clear()
                return True
            if verdict is Fate.PENDING:
                still_open.append(post)
            elif verdict is Fate.UNKNOWN:
                if not self._idempotent:
                    raise self._unknown(post) from self._lost
                self._maybe_landed = post
        self._lost_posts[:] = still_open
        return False

    def _check_premise(self, state: ConsumerAllocations, wanted: Mapping[str, Any]) -> None:
        if self._overwrite or not state.allocations or state.allocations == wanted:
            return
        known = self._known.get(state.consumer_uuid, {})
        if state.allocations == known:
            return
        if self._maybe_landed is not None:
            raise self._unknown(self._maybe_landed)
        self._cache.discard(state.consumer_uuid)
        raise ConsumerChanged(
            f"the consumer holds {dict(state.allocations)} at generation {state.generation}, "
            f"where the caller expected {dict(known) or 'nothing'}; nothing was written",
            state=state,
            known=None,
            consumer_uuid=state.consumer_uuid,
        )

    def _owner(self, part: Part, states: States) -> tuple[str, str]:
        if part.owner is not None:
            return part.owner
        for name in (part.consumer, part.owner_from):
            state = states.get(name) if name is not None else None
            if state is not None and state.project_id and state.user_id:
                return state.project_id, state.user_id
        raise PlacementError(
            "no project and user to write: the consumer is new and none was given",
            consumer_uuid=part.consumer,
        )

    def _type(self, part: Part, states: States) -> str:
        for name in (part.consumer, part.owner_from):
            state = states.get(name) if name is not None else None
            if state is not None and state.exists and is_valid_name(state.consumer_type):
                return state.consumer_type
        return DEFAULT_CONSUMER_TYPE

    def _learn_hint(
        self, writes: Sequence[AllocationWrite], states: States, exc: GenerationConflict
    ) -> None:
        # Placement names no consumer in a POST's conflict: "expected N but got
        # None" is about a write sent as new, and unambiguous only when exactly
        # one write was (an "expected N" for another consumer must not stick).
        if exc.server_generation is None or not (exc.detail or "").endswith("but got None"):
            return
        new = [w.consumer_uuid for w in writes if w.consumer_generation is None]
        if len(new) == 1 and not states[new[0]].exists:
            self._hints[new[0]] = exc.server_generation

    def _post(
        self, writes: Sequence[AllocationWrite], send_type: bool
    ) -> dict[str, ConsumerAllocations]:
        body: dict[str, Any] = {}
        for sent in writes:
            part: dict[str, Any] = {
                "allocations": {rp: {"resources": dict(r)} for rp, r in sent.allocations.items()},
                "consumer_generation": sent.consumer_generation,
                "project_id": sent.project_id,
                "user_id": sent.user_id,
            }
            if send_type and sent.consumer_type is not None:
                part["consumer_type"] = sent.consumer_type
            body[sent.consumer_uuid] = part
        self._transport.request(
            "POST", "/allocations", json=body, global_request_id=self._request_id
        )
        # Every open POST carried generations this one consumed.
        self._lost_posts.clear()
        result = {}
        for consumer in self._parts:
            write = next((w for w in writes if w.consumer_uuid == consumer), None)
            new: ConsumerAllocations
            if write is None:
                new = ConsumerAllocations.missing(consumer)
            elif write.allocations:
                new = ConsumerAllocations(
                    consumer,
                    _plain(write.allocations),
                    (write.consumer_generation or 0) + 1,
                    write.project_id,
                    write.user_id,
                    write.consumer_type if send_type else None,
                )
            else:
                new = ConsumerAllocations.missing(consumer)  # an empty write deletes it
            self._cache.put(new)
            result[consumer] = new
        return result

    def _unknown(self, post: Sequence[AllocationWrite], prefix: str = "") -> OutcomeUnknown:
        lost = self._lost
        answer = lost.message if lost is not None else "no answer"
        carried = ", ".join(f"{w.consumer_uuid}@{w.consumer_generation}" for w in post)
        return OutcomeUnknown(
            f"{prefix}a POST /allocations carrying {carried} may or may not have landed "
            f"({answer}); nothing is written again",
            sent=post[0],
            state=None if self.last_read is None else self.last_read.get(post[0].consumer_uuid),
            writes=post,
            states=self.last_read,
            lost=lost,
            method="POST",
            url="/allocations",
        )


def _plain(allocations: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    return {rp: dict(res) for rp, res in allocations.items()}


def _copies(states: States) -> dict[str, ConsumerAllocations]:
    """Copies a plan may edit freely without touching what the cycle compares with."""
    return {c: dataclasses.replace(s, allocations=_plain(s.allocations)) for c, s in states.items()}
