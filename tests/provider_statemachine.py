"""A Jepsen-style checker for provider-generation writes: inventories, traits, aggregates.

The provider twin of ``tests/statemachine.py``. Each client rule is one operation of
``client.providers`` on one field of one provider, with at most one injected fault and at
most one write by another writer *during* it (right after the operation's k-th request; one
or two changes, so the provider generation moves by one or two; a change may also move the
generation alone: an allocation against the provider, or traits rewritten unchanged). The
``contention`` fault is another writer too: it moves the generation after every read.

A state is a provider's three fields *and* its generation. Every write of the operation is
atomic and guarded (it lands only on the generation it carries and makes the next one), so
the model knows every history: the operation applied 0, 1 or 2 times, each application on
the state it lands on, interleaved with the other writes in the order they happened and
consistent with what each of them saw (``finals``). Placement is read back after every rule
(never through the client) and must hold a final state the outcome allows:

* success: applied exactly once (an idempotent operation may also have been written again
  after another writer's change: "settled by content"), and the field and generation it
  reports were held by Placement during the operation, hold what was asked and, unless
  another writer wrote after the client's last request, are what Placement holds now;
* ``OutcomeUnknown``: applied once or not at all (twice only for an idempotent operation);
* any other typed error: not applied. An idempotent write that landed and was then wholly
  overwritten by the other writer (Placement holds exactly what it would hold had the
  operation never run, generation aside) is accepted and counted in the notes, as the
  consumer machine accepts it.

A state outside them is classified: applied twice, lost (success, not applied), clobbered
(another writer's trait, aggregate or class gone), false success (an answer Placement never
held), applied on error, or other. Backends only inject faults, write as the other writer and
report each answered request; the judgement is shared.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import reportclient as rc
from tests.machine_stats import Stats as MachineStats
from tests.provider_model import (
    AGGREGATES,
    CHANGES,
    CLASSES,
    DURING,
    FAULTS,
    GPU,
    PROVIDERS,
    TRAITS,
    VIOLATIONS,
    Change,
    Event,
    Op,
    Outcome,
    State,
    change,
    judge,
    show,
    show_field,
)


class Stats(MachineStats):
    """This machine's per-fault table: its faults, and the violations its judge names."""

    def __init__(self, title: str) -> None:
        super().__init__(title, (*FAULTS, DURING), VIOLATIONS, width=17)


class Backend(Protocol):
    """A Placement to check the client against, able to inject faults and write as another."""

    providers: tuple[str, ...]

    def client(self, **kwargs: Any) -> rc.PlacementClient: ...
    def read(self, rp: str) -> State: ...
    def change(self, rp: str, changes: Iterable[Change]) -> None: ...  # one write each
    def arm(self, rp: str, route: str, fault: str, observe: Callable[[str], None]) -> None:
        """Arm ``fault``; call ``observe(method, or "late")`` after every answered request."""

    def disarm(self) -> tuple[bool, bool]: ...  # (the fault fired, some request failed)
    def close(self) -> None: ...


indexes = st.integers(0, PROVIDERS - 1)
faults = st.sampled_from(FAULTS)
changes = st.lists(st.sampled_from(CHANGES), min_size=1, max_size=2).map(tuple)
others = st.none() | st.tuples(st.integers(1, 4), changes)
names = st.frozensets(st.sampled_from(TRAITS), max_size=2)
aggregate_sets = st.frozensets(st.sampled_from(AGGREGATES), max_size=2)
verbs = st.sampled_from(("add", "remove", "set"))


class ProviderMachine(RuleBasedStateMachine):
    """The client's provider writes, another writer and faults, judged against Placement."""

    def __init__(self, backend: Backend, ttl: float, stats: Stats, variant: str) -> None:
        super().__init__()
        self.backend, self.ttl, self.stats, self.variant = backend, ttl, stats, variant
        self.now = 1000.0  # the client's monotonic clock, moved only by cache_ttl_passes
        retry = rc.default_retry(sleep=lambda s: None, rand=lambda: 0.5)
        client = backend.client(retry=retry, cache_ttl=ttl, clock=lambda: self.now)
        self.providers = client.providers
        self.states: list[State] = [backend.read(rp) for rp in backend.providers]
        self.outcome: Outcome | None = None

    def teardown(self) -> None:
        self.backend.close()

    def _op(self, index: int, op: Op, fault: str, other: Any) -> None:
        rp, before = self.backend.providers[index], self.states[index]
        events: list[Event] = []
        snapshots = {before}
        sent = [0]

        def write(what: tuple[Change, ...]) -> None:  # another writer, between two requests
            saw = self.backend.read(rp)
            self.backend.change(rp, what)
            wrote = self.backend.read(rp)
            expected = (functools.reduce(change, what, saw[0]), saw[1] + len(what))
            assert wrote == expected, f"harness: {what} made {show(wrote)} of {show(saw)}"
            events.append(Event(what, saw, wrote, sent[0]))
            snapshots.add(wrote)

        def observe(kind: str) -> None:  # right after the fake answered a request
            snapshots.add(self.backend.read(rp))
            if kind == "late":  # the slow write landing is not a request of the client
                return
            sent[0] += 1
            if other is not None and sent[0] == other[0]:
                write(other[1])
            if fault == "contention" and kind == "GET":
                write((("allocate", None),))

        self.backend.arm(rp, op.route, fault, observe)
        answer: tuple[Any, int] | None = None
        error: Exception | None = None
        try:
            answer = op.call(self.providers, rp)
        except rc.PlacementError as exc:
            error = exc
        fired, disturbed = self.backend.disarm()
        acted = other is not None and sent[0] >= other[0]
        if fault == "contention":
            fired = len(events) > acted
        self.outcome = Outcome(index, op, fault, before, events, other is not None, acted,
                               answer, error, fired, disturbed, snapshots, sent[0])  # fmt: skip

    @rule(p=indexes, k=st.sampled_from((1, 2, 5)), fault=faults, other=others)
    def inc(self, p: int, k: int, fault: str, other: Any) -> None:
        self._op(p, Op("inc", k), fault, other)

    @rule(p=indexes, rclass=st.sampled_from(CLASSES), total=st.sampled_from((4, 8, 1024)),
          fault=faults, other=others)  # fmt: skip
    def set_inventory(self, p: int, rclass: str, total: int, fault: str, other: Any) -> None:
        self._op(p, Op("set_inventory", (rclass, total)), fault, other)

    @rule(p=indexes, rclass=st.sampled_from(CLASSES), fault=faults, other=others)
    def remove_inventory(self, p: int, rclass: str, fault: str, other: Any) -> None:
        self._op(p, Op("remove_inventory", rclass), fault, other)

    @rule(p=indexes, vcpu=st.sampled_from((4, 8)), memory=st.sampled_from((None, 1024)),
          gpu=st.sampled_from((None, 2)), fault=faults, other=others)  # fmt: skip
    def set_inventories(self, p: int, vcpu: int, memory: int | None, gpu: int | None,
                        fault: str, other: Any) -> None:  # fmt: skip
        wanted = {"VCPU": vcpu, "MEMORY_MB": memory, GPU: gpu}
        arg = tuple(sorted((k, v) for k, v in wanted.items() if v is not None))
        self._op(p, Op("set_inventories", arg), fault, other)

    @rule(p=indexes, verb=verbs, traits=names, fault=faults, other=others)
    def traits(self, p: int, verb: str, traits: frozenset[str], fault: str, other: Any) -> None:
        self._op(p, Op(f"{verb}_traits", traits), fault, other)

    @rule(p=indexes, verb=verbs, aggs=aggregate_sets, fault=faults, other=others)
    def aggregates(self, p: int, verb: str, aggs: frozenset[str], fault: str, other: Any) -> None:
        self._op(p, Op(f"{verb}_aggregates", aggs), fault, other)

    @initialize(first=changes, second=changes)
    def other_writer_seeds_both(
        self, first: tuple[Change, ...], second: tuple[Change, ...]
    ) -> None:
        self.other_writer_changes(0, first)
        self.other_writer_changes(1, second)

    @rule(p=indexes, what=changes)
    def other_writer_changes(self, p: int, what: tuple[Change, ...]) -> None:
        """Another writer between two operations (within ``cache_ttl`` of the client's: a
        snapshot the client trusts is then wrong, and must cost a 409 or a read, never a
        success for a state Placement does not hold)."""
        self.backend.change(self.backend.providers[p], what)
        held, generation = self.states[p]
        self.states[p] = functools.reduce(change, what, held), generation + len(what)

    @precondition(lambda self: self.ttl > 0)
    @rule()
    def cache_ttl_passes(self) -> None:
        self.now += self.ttl + 1

    @invariant()
    def placement_holds_an_allowed_state(self) -> None:
        outcome, self.outcome = self.outcome, None
        for index, rp in enumerate(self.backend.providers):
            final = self.backend.read(rp)
            if outcome is not None and outcome.index == index:
                self.judge(outcome, final)
            else:
                expected = show(self.states[index])
                assert final == self.states[index], (rp, show(final), f"expected {expected}")
            self.states[index] = final

    def judge(self, o: Outcome, final: State) -> None:
        verdict = judge(o, final)
        self.stats.add(self.variant, o.fault, o.fault == "none" or o.fired, verdict)
        if o.other_drawn:
            self.stats.add(self.variant, DURING, o.other_acted, verdict)
        if o.error is not None:
            self.stats.errors[self.variant][type(o.error).__name__] += 1
        self.stats.ops[self.variant][o.op.kind] += 1
        said = repr(o.error)
        if o.answer is not None:
            said = f"{show_field(o.op.route, o.answer[0])} at generation {o.answer[1]}"
        history = "\n    ".join(str(e) for e in o.events) or "none"
        assert not verdict.startswith("!"), (
            f"{verdict[1:]}\n  {o.op} on provider {o.index} with fault {o.fault!r}\n"
            f"  before: {show(o.before)}\n  other writes during it:\n    {history}\n"
            f"  client said: {said}\n  Placement holds: {show(final)}"
        )
