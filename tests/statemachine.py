"""A Jepsen-style checker: one PlacementClient, another writer and faults, a model of outcomes.

Each client rule is one operation on one consumer with at most one injected fault and at most
one write by another writer *during* it (right after the operation's k-th request). The model
knows the state P the consumer held before (read back after the previous rule) and what the
other writer saw and wrote, and computes the final state of every history that applies the
operation 0, 1 or 2 times around that write and is consistent with what the other writer saw
(``finals``). Placement is read back after every rule (never through the client) and must hold
a final state the outcome allows: success is "applied once", ``OutcomeUnknown`` "once or not
at all", any other typed error "not at all". Backends (the fake; the real Placement behind a
fault proxy) only inject faults and write as the other writer; the judgement is shared.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import reportclient as rc
from tests.machine_stats import Stats as MachineStats

PROJECT = "project-statemachine"
USER = "user-statemachine"
TTL = 60.0
CONSUMERS = 3
#: Ample inventory: capacity never refuses a write.
INVENTORY = {cls: {"total": 10**8, "max_unit": 10**8} for cls in ("VCPU", "MEMORY_MB")}
#: The fault armed before a client operation; each hits the operation's first PUT.
FAULTS = ("none", "lost-reset", "lost-timeout", "5xx-before-commit", "5xx-after-commit")
FAULTS += ("slow-write", "failing-reread")
DURING = "other writer during op"
VIOLATIONS = ("applied twice", "lost", "other violation")
#: Allocations drawn for claims, additions, replacements and the other writer, on providers 0/1.
SHAPES = (
    {0: {"VCPU": 1}}, {0: {"VCPU": 2}}, {1: {"VCPU": 1}}, {1: {"VCPU": 3, "MEMORY_MB": 64}},
    {0: {"VCPU": 1}, 1: {"VCPU": 1}}, {0: {"VCPU": 2, "MEMORY_MB": 128}, 1: {"VCPU": 1}},
)  # fmt: skip

State = tuple[tuple[str, tuple[tuple[str, int], ...]], ...]  # frozen allocations
EMPTY: State = ()  # no allocations: the consumer does not exist


def freeze(allocs: Mapping[str, Mapping[str, int]]) -> State:
    return tuple(sorted((rp, tuple(sorted(res.items()))) for rp, res in allocs.items() if res))


def thaw(state: State) -> dict[str, dict[str, int]]:
    return {rp: dict(res) for rp, res in state}


def plus(a: State, b: State) -> State:
    total = thaw(a)
    for rp, res in b:
        for rclass, amount in res:
            total.setdefault(rp, {})[rclass] = total.get(rp, {}).get(rclass, 0) + amount
    return freeze(total)


@dataclasses.dataclass(frozen=True)
class Op:
    """A client operation; ``apply`` is its effect on a state (None: it cannot apply there)."""

    kind: str  # claim, add, remove, replace, release
    arg: Any = None  # a State (claim, add, replace) or a provider uuid (remove)

    idempotent = property(lambda self: self.kind != "add")

    def apply(self, s: State | None) -> State | None:
        if s is not None and self.kind in ("claim", "release"):
            return self.arg or EMPTY  # type: ignore[no-any-return]
        if s is None or s == EMPTY:
            return None  # updates never create: ConsumerGone
        if self.kind == "add":
            return plus(s, self.arg)
        if self.kind == "remove":
            return tuple(entry for entry in s if entry[0] != self.arg)
        return self.arg  # type: ignore[no-any-return]

    def call(self, client: rc.PlacementClient, consumer: str) -> tuple[State, int | None]:
        """Run it; return what the client says the consumer now holds, and its generation."""
        owner = {"project_id": PROJECT, "user_id": USER}
        if self.kind == "release":
            client.release(consumer)
            return EMPTY, None
        if self.kind == "claim":
            result = client.claim(consumer, thaw(self.arg), **owner)
        else:
            make = {"add": rc.add_allocations, "replace": rc.replace_allocations}.get(self.kind)
            mutate = make(thaw(self.arg)) if make else rc.remove_providers([self.arg])
            result = client.update_allocations(consumer, mutate, **owner)
        return freeze(result.allocations), result.generation


@dataclasses.dataclass(frozen=True)
class Other:
    """The other writer's write during the operation: how it writes, what it saw and wrote."""

    kind: str  # put, add (on top of what it sees) or delete
    arg: State
    creates: bool  # whether it writes to a missing consumer
    saw: State
    wrote: State

    def redo(self, s: State) -> State:
        """What the same writer would have written had it seen ``s``."""
        if self.kind == "delete" or (s == EMPTY and not self.creates):
            return EMPTY
        return self.arg if self.kind == "put" else plus(s, self.arg)


def finals(op: Op, before: State, other: Other | None, times: int) -> set[State]:
    """Final states of the histories applying ``op`` ``times`` times around ``other``'s write.

    Consistent histories are those whose applications before the other write produce exactly
    the state the other writer saw. Each application is atomic (Placement's generation guard).
    """

    def run(s: State | None, n: int) -> State | None:
        for _ in range(n):
            s = op.apply(s)
        return s

    if other is None:
        return {end for end in [run(before, times)] if end is not None}
    out = set()
    for first in range(times + 1):
        end = run(other.wrote, times - first)
        if run(before, first) == other.saw and end is not None:
            out.add(end)
    return out


@dataclasses.dataclass
class Outcome:
    """One client operation as the rule ran it, waiting for the read-back to judge it."""

    index: int
    op: Op
    fault: str
    before: State
    seen: State | None  # what the client knew of the consumer before (None: unknowable)
    other: Other | None
    other_drawn: bool  # another writer was to write during the op (it may have had no chance)
    answer: State | None  # the allocations a success reported
    answer_generation: int | None
    error: Exception | None
    fired: bool  # the fault reached a request
    disturbed: bool  # some request failed (the fault or anything else)


def successes(o: Outcome) -> set[tuple[State, State, State]]:
    """(answer, final state, state replaced) triples a success may show."""
    op, other, out = o.op, o.other, set()
    mine = op.apply(o.before)
    if other is None:
        return set() if mine is None else {(mine, mine, o.before)}
    if mine == other.saw:  # landed first, then the other writer wrote
        out.add((mine, other.wrote, o.before))
    after = op.apply(other.wrote)
    # Landed after the other write. An idempotent operation may have landed before it too: it
    # is "settled by content" and written again, and f(W(f(P))) == f(W(P)) for these writes.
    if after is not None and (o.before == other.saw or op.idempotent):
        out.add((after, after, other.wrote))
    if op.idempotent and mine == other.wrote:  # the other writer wrote just what it wanted
        out.add((mine, mine, o.before))
    return out


def judge(o: Outcome, final: State, generation: int | None) -> str:
    """Classify ``o`` against what Placement holds; a violation starts with '!'."""
    op, other, err = o.op, o.other, o.error
    once, never = finals(op, o.before, other, 1), finals(op, o.before, other, 0)
    won = {t[1] for t in successes(o)}
    twice = finals(op, o.before, other, 2) - once - never - won
    # Landed first, then the other writer wrote just what it would have written had the
    # operation never landed: Placement keeps no trace of it, as if it had not been applied.
    erased = set()
    if other is not None and op.apply(o.before) == other.saw:
        erased = {other.wrote} & {other.redo(o.before)}

    def wrong(allowed: set[State], what: str) -> str:
        if final in allowed:
            return ""
        if final in twice:
            return "!applied twice"
        if final in never and err is None:
            return "!lost"
        return f"!other violation: {what}; Placement holds {thaw(final)}"

    if err is None:
        verdict = wrong(won, "success, yet not a state of one application")
        triples = {t for t in successes(o) if t[1] == final and t[0] == o.answer}
        if verdict or not triples:
            return verdict or f"!other violation: success reported {o.answer}, not {final}"
        if other is None and op.kind != "release" and o.answer_generation != generation:
            # Known, reported: with a trusted cache an idempotent op verifies by writing; its
            # slow write lands after the re-read that settled it, moving the generation only.
            if o.fault == "slow-write" and generation == (o.answer_generation or 0) + 1:
                return "recovered, stale generation"
            return f"!other violation: generation {o.answer_generation} reported, {generation} held"
        allowed = {EMPTY, op.arg, o.seen}
        if op.kind == "claim" and o.seen is not None and all(t[2] not in allowed for t in triples):
            return "!other violation: the claim replaced allocations it never saw (clobber)"
        return "recovered"
    name = type(err).__name__
    if (
        isinstance(err, rc.PlacementUnavailable)
        and not isinstance(err, rc.PlacementOverloaded)  # the budget: conflicts suffice
        and not o.disturbed
    ):
        return f"!other violation: {name} while every request was answered"
    if isinstance(err, rc.OutcomeUnknown):
        return wrong(once | never | won, "neither applied once nor not") or "typed"
    held = {o.before} | ({other.saw, other.wrote} if other else set())
    if isinstance(err, rc.ConsumerChanged):
        found = freeze(err.state.allocations)
        if op.kind == "release":
            # A release empties only what it saw first (its read, or its trusted cache).
            if found == EMPTY or found not in held or found == o.before == o.seen:
                return f"!other violation: release refused to empty {thaw(found)}, which it saw"
        elif op.kind != "claim" or found in {EMPTY, op.arg, o.seen} or found not in held:
            return f"!other violation: ConsumerChanged found {thaw(found)}, client knew {o.seen}"
    elif isinstance(err, rc.ConsumerGone):
        if op.kind in ("claim", "release") or EMPTY not in held or err.state.exists:
            return "!other violation: ConsumerGone, yet the consumer never went missing"
    elif type(err) not in (rc.PlacementUnavailable, rc.PlacementOverloaded):  # ample capacity
        return f"!other violation: unexpected {name}: {err}"
    return wrong(never | erased, f"{name}, yet Placement holds the op's write") or "typed"


def knows_after(o: Outcome) -> State | None:
    """What the client knows of the consumer after ``o`` (its claims' premise); None: unknown."""
    if o.error is None:
        return o.answer
    if isinstance(o.error, rc.ConsumerChanged) and o.op.kind == "release":
        return freeze(o.error.state.allocations)  # it read them; it only refused to empty them
    if isinstance(o.error, rc.ConsumerChanged):  # the read is not adopted: it keeps what it knew
        known = o.error.known
        return freeze(known.allocations) if known is not None else EMPTY
    return EMPTY if isinstance(o.error, rc.ConsumerGone) else None


class Stats(MachineStats):
    """This machine's per-fault table: its faults, and the violations its judge names."""

    def __init__(self, title: str) -> None:
        super().__init__(title, (*FAULTS, DURING), VIOLATIONS, width=16)


class Backend(Protocol):
    """A Placement to check the client against, able to inject faults and write as another."""

    providers: tuple[str, str]
    full_check_every: int  # read back every consumer after every n-th rule (else the touched)

    def client(self, **kwargs: Any) -> rc.PlacementClient: ...
    def read(self, consumer: str) -> tuple[int | None, State]: ...
    def write(self, consumer: str, state: State) -> None: ...  # EMPTY deletes
    def arm(self, consumer: str, fault: str, after: int, action: Callable[[], None]) -> None: ...
    def disarm(self) -> tuple[bool, bool]: ...  # (the fault fired, some request failed)
    def close(self) -> None: ...


consumers = st.integers(0, CONSUMERS - 1)
shapes = st.sampled_from(range(len(SHAPES)))
faults = st.sampled_from(FAULTS)
others = st.none() | st.tuples(st.sampled_from(["put", "add", "delete"]), st.integers(1, 3), shapes)


class PlacementMachine(RuleBasedStateMachine):
    """The client under test, another writer and faults, judged against Placement's read-back."""

    def __init__(self, backend: Backend, ttl: float, stats: Stats, variant: str) -> None:
        super().__init__()
        self.backend, self.ttl, self.stats, self.variant = backend, ttl, stats, variant
        self.now = 1000.0  # the client's monotonic clock, moved only by cache_ttl_passes
        retry = rc.default_retry(sleep=lambda s: None, rand=lambda: 0.5)
        self.client = backend.client(retry=retry, cache_ttl=ttl, clock=lambda: self.now)
        self.consumers = [str(uuid.uuid4()) for _ in range(CONSUMERS)]
        self.possible: list[set[State]] = [{EMPTY} for _ in range(CONSUMERS)]
        self.seen: list[State | None] = [EMPTY] * CONSUMERS  # what the client knows
        self.contact: dict[int, float] = {}  # the clock at the client's last op per consumer
        self.outcome: Outcome | None = None
        self.touched: set[int] = set(range(CONSUMERS))  # read back after the next rule
        self.steps = 0

    def teardown(self) -> None:
        self.backend.close()

    def shape(self, index: int) -> State:
        return freeze({self.backend.providers[i]: res for i, res in SHAPES[index].items()})

    def may_create(self, index: int, during: bool = False) -> bool:
        """With a cache_ttl, no other writer re-creates a consumer the client may trust."""
        last = self.contact.get(index)
        return not self.ttl or (not during and (last is None or self.now - last > self.ttl))

    def existing(self, index: int) -> int:
        """``index``, or the next consumer that exists if it does not (an update's target)."""
        order = [(index + i) % CONSUMERS for i in range(CONSUMERS)]
        return next((i for i in order if self.possible[i] != {EMPTY}), index)

    def _op(self, index: int, op: Op, fault: str, other: Any) -> None:
        consumer, before = self.consumers[index], next(iter(self.possible[index]))
        self.touched.add(index)
        written: list[Other] = []

        def write() -> None:  # the other writer, right after the op's k-th request
            kind, arg = other[0], self.shape(other[2])
            saw = self.backend.read(consumer)[1]
            done = Other(kind, arg, self.may_create(index, during=True), saw, EMPTY)
            done = dataclasses.replace(done, wrote=done.redo(saw))
            if done.wrote != saw or kind != "delete":
                if saw == EMPTY and not done.creates:
                    return
                self.backend.write(consumer, done.wrote)
            written.append(done)

        self.backend.arm(consumer, fault, other[1] if other else 0, write)
        answer: tuple[State | None, int | None] = (None, None)
        error: Exception | None = None
        try:
            answer = op.call(self.client, consumer)
        except rc.PlacementError as exc:
            error = exc
        fired, disturbed = self.backend.disarm()
        self.contact[index] = self.now
        during = written[0] if written else None
        self.outcome = Outcome(index, op, fault, before, self.seen[index], during,
                               other is not None, *answer, error, fired, disturbed)  # fmt: skip
        # The branches: applied once or not at all; the read-back prunes them to one.
        self.possible[index] = finals(op, before, during, 0) | finals(op, before, during, 1)

    @rule(c=consumers, allocs=shapes, fault=faults, other=others)
    def claim(self, c: int, allocs: int, fault: str, other: Any) -> None:
        self._op(c, Op("claim", self.shape(allocs)), fault, other)

    @rule(c=consumers, allocs=shapes, fault=faults, other=others)
    def add(self, c: int, allocs: int, fault: str, other: Any) -> None:
        self._op(self.existing(c), Op("add", self.shape(allocs)), fault, other)

    @rule(c=consumers, rp=st.integers(0, 1), fault=faults, other=others)
    def remove(self, c: int, rp: int, fault: str, other: Any) -> None:
        self._op(self.existing(c), Op("remove", self.backend.providers[rp]), fault, other)

    @rule(c=consumers, allocs=shapes, fault=faults, other=others)
    def replace(self, c: int, allocs: int, fault: str, other: Any) -> None:
        self._op(self.existing(c), Op("replace", self.shape(allocs)), fault, other)

    @rule(c=consumers, fault=faults, other=others)
    def release(self, c: int, fault: str, other: Any) -> None:
        self._op(c, Op("release"), fault, other)

    @initialize(first=shapes, second=shapes)
    def other_writer_creates_two(self, first: int, second: int) -> None:
        self.other_writer_puts(0, first)
        self.other_writer_puts(1, second)

    @rule(c=consumers, allocs=shapes, recreate=st.booleans())
    def other_writer_puts(self, c: int, allocs: int, recreate: bool = False) -> None:
        if recreate:  # delete and re-create: the consumer's generation restarts at 1
            self.other_writer_deletes(c)
        if self.possible[c] == {EMPTY} and not self.may_create(c):
            self.cache_ttl_passes()  # re-creating inside the window is the documented risk
        self.backend.write(self.consumers[c], self.shape(allocs))
        self.possible[c] = {self.shape(allocs)}
        self.touched.add(c)

    @rule(c=consumers)
    def other_writer_deletes(self, c: int) -> None:
        if self.possible[c] != {EMPTY}:
            self.backend.write(self.consumers[c], EMPTY)
            self.possible[c] = {EMPTY}
            self.touched.add(c)

    @precondition(lambda self: self.ttl > 0)
    @rule()
    def cache_ttl_passes(self) -> None:
        self.now += self.ttl + 1

    @invariant()
    def placement_holds_a_possible_state(self) -> None:
        outcome, self.outcome = self.outcome, None
        self.steps += 1
        if self.steps % self.backend.full_check_every == 0:
            self.touched.update(range(CONSUMERS))  # also: nothing changed what no rule touched
        for index in sorted(self.touched):
            consumer = self.consumers[index]
            generation, final = self.backend.read(consumer)
            if outcome is not None and outcome.index == index:
                self.judge(outcome, final, generation)
            assert final in self.possible[index], (consumer, thaw(final), self.possible[index])
            self.possible[index] = {final}
        self.touched.clear()

    def judge(self, o: Outcome, final: State, generation: int | None) -> None:
        verdict = judge(o, final, generation)
        self.stats.add(self.variant, o.fault, o.fault == "none" or o.fired, verdict)
        if o.other_drawn:
            self.stats.add(self.variant, DURING, o.other is not None, verdict)
        if o.error is not None:
            self.stats.errors[self.variant][type(o.error).__name__] += 1
        self.seen[o.index] = knows_after(o)
        self.possible[o.index] = {final}
        said = repr(o.error) if o.error else o.answer
        assert not verdict.startswith("!"), (
            f"{verdict[1:]}\n  {o.op} with fault {o.fault}; before {thaw(o.before)}; client "
            f"knew {o.seen}; other writer {o.other}; client said {said}"
        )
