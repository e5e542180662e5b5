"""Several consumers' allocations written in one ``POST /allocations``, all or nothing.

The multi-consumer write on the attempt skeleton, keeping the same
invariants as one consumer's (doc/source/write_semantics.rst):

* every attempt reads every consumer it writes, computes what each should
  hold from those reads (a move's target depends on its source), and sends
  one POST carrying each consumer's generation; a conflict on any of them
  writes nothing, so the next attempt re-reads them all and recomputes;
* a part that may create a consumer (a claim, a move's target) replaces only
  what the caller expected it to hold, else :class:`ConsumerChanged`; a part
  that updates never creates (:class:`ConsumerGone`);
* a lost answer is judged consumer by consumer by the fate rule, and the
  verdicts combined (:func:`reportclient._engine.fate.combine`): the POST
  lands whole or not at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reportclient._engine.consumer_write import (
    DEFAULT_CONSUMER_TYPE,
    Kind,
    Sent,
    changed,
    check_release,
    consumer_evidence,
)
from reportclient._engine.contention import ContentionMemory
from reportclient._engine.fate import Evidence
from reportclient._engine.guarded_write import Done, GuardedWrite
from reportclient._gateway.gateway import Gateway
from reportclient._model.consumers import AllocationWrite, ConsumerAllocations, already_holds
from reportclient._model.microversions import CONSUMER_TYPE_VERSION
from reportclient._model.validation import is_valid_name
from reportclient.errors import (
    ConsumerGone,
    GenerationConflict,
    OutcomeUnknown,
    PlacementError,
)

__all__ = ["BatchWrite", "Part", "Plan", "States"]

#: Each consumer's state, as read at the start of an attempt.
States = Mapping[str, ConsumerAllocations]
#: From every part's current state, the allocations each part should hold.
Plan = Callable[[States], Mapping[str, Mapping[str, Mapping[str, int]]]]
#: One POST as sent: each consumer's write with its premise.
Post = tuple[Sent, ...]


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
    :param seen_only: for a RELEASE, empty only what the first read showed
        (a caller's release); False lets the plan decide (a move's source,
        whose allocations move with it).
    """

    consumer: str
    kind: Kind
    owner: tuple[str, str] | None = None
    owner_from: str | None = None
    ctype: str | None = None
    expected: Mapping[str, Mapping[str, int]] | None = None
    seen_only: bool = False


class BatchWrite(
    GuardedWrite[dict[str, ConsumerAllocations], Post, dict[str, ConsumerAllocations]]
):
    """The attempts of one all-or-nothing write of several consumers.

    :param parts: the consumers written, each with its rules (:class:`Part`).
    :param plan: computes every part's allocations from all parts' states;
        may raise to refuse (a move whose source holds nothing).
    :param idempotent: ``plan`` applied to its own result changes nothing;
        only then may Placement holding what a lost POST asked for settle it.
    :param overwrite: CLAIM parts may replace allocations nobody expected.
    :param by_content: Placement holding what a lost POST asked for settles
        the operation even though it is not idempotent: true of a move, whose
        end state (source empty, target holding its allocations) says what
        was asked whoever made it, and which is never written again anyway.
    :param default_type: the type of a consumer created with no type of its
        own to take (the client's ``default_consumer_type``).
    """

    def __init__(
        self,
        gateway: Gateway,
        parts: Sequence[Part],
        plan: Plan,
        *,
        idempotent: bool,
        overwrite: bool = False,
        by_content: bool = False,
        request_id: str | None = None,
        memory: ContentionMemory | None = None,
        default_type: str = DEFAULT_CONSUMER_TYPE,
    ) -> None:
        super().__init__(idempotent=idempotent or by_content, memory=memory)
        self._default_type = default_type
        self._gateway = gateway
        self._parts = {part.consumer: part for part in parts}
        self._compute = plan
        self._overwrite = overwrite
        self._request_id = request_id
        # What this client knew of each CLAIM part when the operation began.
        self._known: dict[str, Mapping[str, Mapping[str, int]]] = {}
        for part in parts:
            if part.kind is Kind.CLAIM:
                found = self._gateway.consumer_known(part.consumer)
                known = found.allocations if found is not None and found.exists else {}
                self._known[part.consumer] = part.expected if part.expected is not None else known
        self._hints: dict[str, int] = {}
        # What each seen_only RELEASE part held when first read.
        self._seen: dict[str, Mapping[str, Mapping[str, int]]] = {}

    @property
    def subject(self) -> str:
        """What this operation writes, for logs."""
        return "consumers " + ", ".join(self._parts)

    def read(self) -> dict[str, ConsumerAllocations]:
        """Read every consumer, as Placement returns it."""
        return {c: self._gateway.read_consumer(c, self._request_id) for c in self._parts}

    def plan(
        self, states: dict[str, ConsumerAllocations], fresh: bool
    ) -> Post | Done[dict[str, ConsumerAllocations]]:
        """The POST's writes, or every consumer's state when nothing is to be written."""
        for consumer, part in self._parts.items():
            if part.kind is Kind.UPDATE and not states[consumer].exists:
                raise ConsumerGone(
                    "the consumer does not exist; a multi-consumer write updates it, "
                    "and updates never create one",
                    state=states[consumer],
                    consumer_uuid=consumer,
                )
        desired = {c: _plain(a) for c, a in self._compute(_copies(states)).items()}
        # A conflict's "expected N" serves the attempt right after it, once.
        hints, self._hints = self._hints, {}
        guessed = False
        writes = []
        changed = False
        for consumer, part in self._parts.items():
            state = states[consumer]
            wanted = desired.get(consumer, {})
            if part.kind is Kind.CLAIM:
                self._check_premise(state, wanted)
            elif part.seen_only:
                self._check_release(state)
            if not wanted and not state.exists:
                continue  # nothing to empty; an empty write would leave a phantom record
            owner = self._owner(part, states)
            changed = changed or not already_holds(state, wanted, owner, part.ctype)
            ctype = part.ctype or self._type(part, states)
            generation = state.generation
            hint = hints.get(consumer)
            if hint is not None and fresh and not state.exists and wanted:
                # Placement's invisible generation-0 record
                # (doc/source/placement_behaviour.rst): only a conflict's detail shows it.
                # Evidence for this write's generation, never a state.
                generation, guessed = hint, True
            write = AllocationWrite(consumer, wanted, generation, *owner, ctype)
            writes.append(Sent(write, state.allocations, state.consumer_type, guessed))
        # A consumer that already holds its share still goes into the POST with
        # its generation: all or nothing must check every premise at once.
        return tuple(writes) if changed else Done(states)

    def premise_read(self, post: Post) -> bool:
        """False when a generation in the POST came from a conflict's detail."""
        return not any(sent.guessed for sent in post)

    def _check_premise(self, state: ConsumerAllocations, wanted: Mapping[str, Any]) -> None:
        if self._overwrite or not state.allocations or state.allocations == wanted:
            return
        known = self._known.get(state.consumer_uuid, {})
        if state.allocations == known:
            return
        self._gateway.forget_consumer(state.consumer_uuid)
        raise changed(
            state, f"the caller expected {dict(known) or 'nothing'}", "nothing was written"
        )

    def _check_release(self, state: ConsumerAllocations) -> None:
        """A release empties only what it saw first (the rule ``release`` keeps)."""
        check_release(state, self._seen.setdefault(state.consumer_uuid, state.allocations))

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
        return self._default_type

    def send(self, post: Post) -> dict[str, ConsumerAllocations]:
        """POST every write; every consumer's state afterwards."""
        send_type = self._gateway.supports(CONSUMER_TYPE_VERSION)
        return self._gateway.post_allocations(
            [(sent.write, sent.premise_type) for sent in post],
            self._parts,
            send_type=send_type,
            request_id=self._request_id,
        )

    def conflicted(self, post: Post, exc: GenerationConflict) -> None:
        """Keep "expected N" if it can only be about one consumer (the gateway forgot them all)."""
        # Placement names no consumer in a POST's conflict: "expected N but got
        # None" is about a write sent as new, and unambiguous only when exactly
        # one write was (an "expected N" for another consumer must not stick).
        if exc.server_generation is not None and (exc.detail or "").endswith("but got None"):
            new = [s.write.consumer_uuid for s in post if s.write.consumer_generation is None]
            if len(new) == 1:
                self._hints[new[0]] = exc.server_generation

    def forget(self) -> None:
        """A POST of ours may still land: every consumer in it is in doubt."""
        for consumer in self._parts:
            self._gateway.forget_consumer(consumer)

    def evidence(self, post: Post, states: dict[str, ConsumerAllocations]) -> Iterator[Evidence]:
        """Each consumer's part of the fate rule."""
        for sent in post:
            yield consumer_evidence(sent.write, sent.premise, states[sent.write.consumer_uuid])

    def holds(
        self, post: Post, states: dict[str, ConsumerAllocations], open_write: bool
    ) -> dict[str, ConsumerAllocations] | None:
        """Every state, if each consumer already holds its part of the POST."""
        for sent in post:
            write, state = sent.write, states[sent.write.consumer_uuid]
            if write.allocations:
                owner = (write.project_id, write.user_id)
                if not already_holds(state, write.allocations, owner, None):
                    return None
            elif state.allocations:
                return None
        if open_write:
            for state in states.values():
                self._gateway.keep_known(state)
        return dict(states)

    def unknown(
        self, post: Post, states: dict[str, ConsumerAllocations] | None, why: str
    ) -> OutcomeUnknown:
        """The error for ``post``, whose fate ``states`` (None: unread) cannot settle."""
        lost = self.lost
        answer = lost.message if lost is not None else "no answer"
        writes = tuple(sent.write for sent in post)
        carried = ", ".join(f"{w.consumer_uuid}@{w.consumer_generation}" for w in writes)
        return OutcomeUnknown(
            f"{why}a POST /allocations carrying {carried} may or may not have landed "
            f"({answer}); nothing is written again",
            sent=writes[0],
            state=None if states is None else states.get(writes[0].consumer_uuid),
            writes=writes,
            states=states,
            lost=lost,
            method="POST",
            url=lost.url if lost is not None else None,
        )


def _plain(allocations: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    return {rp: dict(res) for rp, res in allocations.items()}


def _copies(states: States) -> dict[str, ConsumerAllocations]:
    """Copies a plan may edit freely without touching what the engine compares with."""
    return {c: dataclasses.replace(s, allocations=_plain(s.allocations)) for c, s in states.items()}
