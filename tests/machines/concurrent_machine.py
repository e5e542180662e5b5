"""A concurrent model checker: several threads of ONE shared client, judged at quiescence.

The sequential write machine (``tests/machines/write_machine.py``) runs one operation at a time and
observes Placement after each request. Here the point is what it cannot reach: threads of
one ``PlacementClient`` overlapping each other, and what that does to the client's consumer
cache. A seeded random run of steps over 2-3 consumers on 2 providers; each step runs, all
released together by a :class:`threading.Barrier`:

* 1-3 operations of the shared client, one thread each (claim, update_allocations with a
  recorded ``mutate``, release, force_release, get_allocations);
* sometimes another client (another scheduler) writing one consumer;
* sometimes a shelve/unshelve by another client: ``force_release`` then a claim that
  re-creates the consumer at generation 1 with other allocations;
* sometimes a raw write through the shared client (``client.request("PUT"/"DELETE",
  "/allocations/<c>")``), which the library cannot interpret;
* sometimes a lost answer on the shared client's next write of one consumer;
* sometimes a *hold*: one shared thread's k-th answer, already answered by Placement, is
  handed to the client only once another shared thread finished (an :class:`threading.Event`
  with a bounded wait, never a sleep). That is how a read answered before a write is
  processed after it, the overlap the cache's tickets exist for.

After each step (threads joined, nothing in flight) a separate client reads every consumer
and :class:`tests.machines.concurrent_model.Checker` judges the step; see that module for the
checks.
Every finding carries the history of its consumer, step by step, up to the finding.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import requests

import reportclient as rc
from tests.machines.concurrent_model import (
    CACHE,
    INFO,
    MISSING,
    PLACEMENT,
    VIOLATIONS,
    Checker,
    Event,
    Finding,
    State,
    show,
)
from tests.machines.write_machine import SHAPES
from tests.machines.write_model import Allocs, freeze, plus, thaw

PROJECT, USER = "project-concurrent", "user-concurrent"
AMPLE = {"VCPU": 10**6, "MEMORY_MB": 10**6}
TTL = 60.0
#: Bound on every wait: the barrier, a held answer, a thread's whole step.
HOLD_WAIT = 2.0
STEP_WAIT = 60.0
SHARED_KINDS = ("claim", "claim", "update", "update", "release", "force_release", "get", "get")
OTHER_KINDS = ("claim", "update", "release", "force_release")
VERBS = ("add", "replace", "remove")

#: Which actor the current thread is: the backends' fault and hold hooks read it.
ACTOR = threading.local()
_ticks = itertools.count(1)
#: One actor's operations in a step, run in order by its thread.
Ops = list[tuple[Event, Callable[[], Any]]]


def tick() -> int:
    """Real-time order of invocations and returns (itertools.count is atomic under the GIL)."""
    return next(_ticks)


def state_of(found: rc.ConsumerAllocations | None) -> State | None:
    if found is None:
        return None
    return (found.generation, freeze(found.allocations)) if found.exists else MISSING


class Backend(Protocol):
    """Placement for one run: the shared client's path (holds, lost answers) and the rest."""

    def client(self, *, shared: bool, **kwargs: Any) -> rc.PlacementClient:
        """A client; a shared one's requests pass ``after_answer`` and the armed loss."""

    def read(self, consumer: str) -> State: ...
    def make_providers(self) -> tuple[str, str]: ...
    def arm_loss(self, consumer: str) -> None: ...
    def disarm(self) -> bool: ...  # whether the loss fired
    def close(self) -> None: ...

    def orphaned(self) -> Mapping[str, Mapping[str, int]]:
        """consumer -> provider -> used: allocation rows Placement left without a consumer row."""


class HoldingAdapter(requests.adapters.BaseAdapter):
    """A transport adapter calling ``after(request)`` between the answer and the client."""

    def __init__(self, inner: requests.adapters.BaseAdapter, after: Callable[[Any], None]) -> None:
        super().__init__()
        self.inner, self.after = inner, after

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        response = self.inner.send(request, *args, **kwargs)
        self.after(request)
        return response

    def close(self) -> None:
        self.inner.close()


@dataclasses.dataclass
class Hold:
    """Hand ``actor``'s ``index``-th answer to the client only after ``until`` finished."""

    actor: str
    index: int
    until: threading.Event
    waited: bool = False


@dataclasses.dataclass
class StepRecord:
    step: int
    start: dict[str, State]
    end: dict[str, State]
    events: list[Event]
    cache: dict[str, tuple[State | None, State | None]]  # (any, trusted) after the step
    notes: list[str]


@dataclasses.dataclass
class Table:
    """Counts over every run of one configuration, and the first histories of each finding."""

    title: str
    seeds: int = 0
    steps: int = 0
    operations: int = 0
    counts: Counter[str] = dataclasses.field(default_factory=Counter)
    wrong_entries: int = 0
    errors: Counter[str] = dataclasses.field(default_factory=Counter)
    reports: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def add(self, other: Table) -> None:
        self.seeds += other.seeds
        self.steps += other.steps
        self.operations += other.operations
        self.counts.update(other.counts)
        self.wrong_entries += other.wrong_entries
        self.errors.update(other.errors)
        for column, texts in other.reports.items():
            self.reports.setdefault(column, []).extend(texts)

    def violations(self) -> dict[str, int]:
        return {v: self.counts[v] for v in VIOLATIONS}

    def render(self, rows: Sequence[tuple[str, Table]] | None = None) -> str:
        rows = rows or [(self.title, self)]
        heads = ["seeds", "steps", "ops", *VIOLATIONS, "wrong cache entries", *INFO]
        width = max(len(name) for name, _ in rows) + 2
        lines = ["", "".ljust(width) + " | ".join(heads)]
        for name, t in rows:
            cells = [t.seeds, t.steps, t.operations, *(t.counts[v] for v in VIOLATIONS)]
            cells += [t.wrong_entries, *(t.counts[i] for i in INFO)]
            row = " | ".join(f"{c:>{len(h)}}" for c, h in zip(cells, heads, strict=True))
            lines.append(name.ljust(width) + row)
        return "\n".join(lines)

    def report(self, per_column: int = 1) -> str:
        """The table, then the first history of each violation column."""
        out = [self.render()]
        errors = ", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())) or "none"
        out.append(f"errors raised: {errors}")
        for column in (*VIOLATIONS, *PLACEMENT, "residual"):
            for text in self.reports.get(column, [])[:per_column]:
                out.append(text)
        return "\n".join(out)


class Machine:
    """One seeded run: ``steps`` steps on fresh consumers, one shared client, one checker."""

    def __init__(
        self,
        backend: Backend,
        seed: int,
        ttl: float,
        *,
        steps: int = 30,
        consumers: int = 3,
        providers: tuple[str, str] | None = None,
    ) -> None:
        self.backend, self.seed, self.ttl, self.steps = backend, seed, ttl, steps
        self.rng = random.Random(seed)
        self.now = [1000.0]
        retry = rc.default_retry(sleep=lambda s: None, rand=lambda: 0.5)
        self.client = backend.client(
            shared=True, retry=retry, cache_ttl=ttl, clock=lambda: self.now[0]
        )
        self.other = backend.client(shared=False, retry=retry)
        self.rps = providers or backend.make_providers()
        self.consumers = [str(uuid.uuid4()) for _ in range(consumers)]
        self.names = {c: f"c{i}" for i, c in enumerate(self.consumers)}
        self.checker = Checker(list(self.names.values()))
        self.armed: str | None = None
        self.history: list[StepRecord] = []
        self.hold: Hold | None = None
        self.table = Table(f"seed {seed}")
        #: Allocation rows without a consumer row as the last step left them.
        self.orphaned: Mapping[str, Mapping[str, int]] = backend.orphaned()

    # -- the hooks the backends call ------------------------------------------------------------
    def after_answer(self, request: Any) -> None:
        """In the requesting thread, after Placement answered, before the client sees it."""
        name = getattr(ACTOR, "name", "")
        ACTOR.count = getattr(ACTOR, "count", 0) + 1
        hold = self.hold
        if hold is not None and hold.actor == name and ACTOR.count - 1 == hold.index:
            hold.waited = not hold.until.is_set()
            hold.until.wait(HOLD_WAIT)  # bounded: the other thread may be done already

    # -- operations -----------------------------------------------------------------------------
    def shape(self, index: int) -> Allocs:
        return freeze({self.rps[i]: res for i, res in SHAPES[index % len(SHAPES)].items()})

    def mutation(self, verb: str, arg: Allocs, rp: str) -> Callable[[Allocs], Allocs]:
        if verb == "add":
            return lambda s: plus(s, arg)
        if verb == "replace":
            return lambda s: arg
        return lambda s: tuple(e for e in s if e[0] != rp)

    def new_event(self, actor: str, kind: str, c: str, shared: bool) -> Event:
        ev = Event(actor, kind, self.names[c], shared)
        if kind == "claim":
            ev.want = self.shape(self.rng.randrange(len(SHAPES)))
        elif kind == "update":
            verb = self.rng.choice(VERBS)
            ev.kind = f"update {verb}"
            ev.want = self.shape(self.rng.randrange(len(SHAPES)))
            ev.mutate = self.mutation(verb, ev.want, self.rps[self.rng.randrange(2)])
        return ev

    def call(self, client: rc.PlacementClient, ev: Event, c: str) -> Callable[[], Any]:
        owner = {"project_id": PROJECT, "user_id": USER}
        if ev.kind == "claim":
            return lambda: client.claim(
                c, thaw(ev.want), overwrite=ev.overwrite, project_id=PROJECT, user_id=USER
            )
        if ev.kind.startswith("update"):
            f = ev.mutate
            assert f is not None

            def mutate(current: rc.ConsumerAllocations) -> dict[str, dict[str, int]]:
                was = freeze(current.allocations)
                made = f(was)
                ev.calls.append((was, made))
                return thaw(made)

            wrapped: Any = mutate if ev.kind == "update add" else rc.idempotent(mutate)
            return lambda: client.update_allocations(c, wrapped, project_id=PROJECT, user_id=USER)
        if ev.kind == "release":
            return lambda: client.release(c)
        if ev.kind == "force_release":
            return lambda: client.force_release(c)
        if ev.kind == "get":
            return lambda: client.get_allocations(c)
        if ev.kind == "raw put":
            body = {
                "allocations": {rp: {"resources": res} for rp, res in thaw(ev.want).items()},
                "consumer_generation": ev.generation,
                "consumer_type": "INSTANCE",
                **owner,
            }
            return lambda: client.request("PUT", f"/allocations/{c}", json=body)
        return lambda: client.request("DELETE", f"/allocations/{c}")

    @staticmethod
    def perform(ev: Event, fn: Callable[[], Any]) -> None:
        """Run one operation and record how it ended (never raises)."""
        ev.invoked = tick()
        try:
            result = fn()
        except rc.ConsumerChanged as exc:
            ev.outcome, ev.answer = "typed", state_of(exc.state)
            ev.error = f"ConsumerChanged: {exc.message[:80]}"
        except rc.ConsumerGone as exc:
            ev.outcome, ev.answer, ev.error = "typed", MISSING, f"ConsumerGone: {exc.message[:80]}"
        except rc.OutcomeUnknown as exc:
            ev.outcome, ev.answer = "unknown", state_of(exc.state)
            ev.error = f"OutcomeUnknown: {exc.message[:80]}"
        except rc.PlacementUnavailable as exc:
            ev.outcome = "unknown" if exc.outcome_unknown else "wild"
            ev.error = f"PlacementUnavailable: {exc.message[:80]}"
        except rc.PlacementError as exc:
            if ev.kind.startswith("raw") and exc.status in (404, 409):
                ev.outcome, ev.status = "ok", exc.status
            elif isinstance(exc, rc.GenerationConflict):
                ev.outcome, ev.error = "wild", f"GenerationConflict: {exc.message[:80]}"
            else:
                ev.outcome, ev.error = "error", f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # an unexpected error is a finding, not a crash
            ev.outcome, ev.error = "error", f"{type(exc).__name__}: {exc}"
        else:
            ev.outcome = "ok"
            if isinstance(result, rc.ConsumerAllocations):
                ev.answer = state_of(result)
            elif isinstance(result, bool):
                ev.status = int(result)
            elif ev.kind.startswith("raw"):
                ev.status = result.status
        finally:
            ev.returned = tick()

    # -- one step -------------------------------------------------------------------------------
    def plan(self, start: Mapping[str, State]) -> tuple[dict[str, Ops], list[str]]:
        rng, notes = self.rng, []
        actors: dict[str, Ops] = {}
        self.armed = None

        def pick() -> str:
            return rng.choice(self.consumers)

        for i in range(rng.randint(1, 3)):
            c = pick()
            ev = self.new_event(f"shared-{i}", rng.choice(SHARED_KINDS), c, True)
            actors[ev.actor] = [(ev, self.call(self.client, ev, c))]
        if rng.random() < 0.3:
            c = pick()
            ev = self.new_event("other", rng.choice(OTHER_KINDS), c, False)
            ev.overwrite = True  # another scheduler's claim: last writer wins
            actors["other"] = [(ev, self.call(self.other, ev, c))]
        if rng.random() < 0.15:
            c = pick()
            gone = Event("unshelve", "force_release", self.names[c], False)
            claim = self.new_event("unshelve", "claim", c, False)
            claim.overwrite = True
            actors["unshelve"] = [(gone, self.call(self.other, gone, c)),
                                  (claim, self.call(self.other, claim, c))]  # fmt: skip
        if rng.random() < 0.15:
            c = pick()
            if rng.random() < 0.6:
                ev = Event("raw", "raw put", self.names[c], True, generation=start[c][0])
                ev.want = self.shape(rng.randrange(len(SHAPES)))
            else:
                ev = Event("raw", "raw delete", self.names[c], True)
            actors["raw"] = [(ev, self.call(self.client, ev, c))]
        writes = [self.consumers[list(self.names.values()).index(ev.consumer)]
                  for ops in actors.values() for ev, _ in ops
                  if ev.shared and ev.writes]  # fmt: skip
        if writes and rng.random() < 0.15:
            c = rng.choice(writes)
            self.backend.arm_loss(c)
            self.armed = self.names[c]
            notes.append(f"lost answer armed on {self.names[c]}")
        shared = [a for a in actors if a.startswith("shared")]
        self.hold = None
        if len(shared) > 1 and rng.random() < 0.5:
            held, until = rng.sample(shared, 2)
            self.hold = Hold(held, rng.randrange(2), threading.Event())
            self.hold_for = until
            notes.append(f"{held}'s answer #{self.hold.index} held until {until} finished")
        return actors, notes

    def run_step(self, step: int) -> list[Finding]:
        if self.ttl and self.rng.random() < 0.1:
            self.now[0] += self.ttl + 1
        start = {c: self.backend.read(c) for c in self.consumers}
        actors, notes = self.plan(start)
        barrier = threading.Barrier(len(actors))
        done = {name: threading.Event() for name in actors}
        if self.hold is not None:
            self.hold.until = done[self.hold_for]

        def work(name: str, ops: Ops) -> None:
            ACTOR.name, ACTOR.count, ACTOR.shared = name, 0, ops[0][0].shared
            try:
                barrier.wait(STEP_WAIT)
                for ev, fn in ops:
                    self.perform(ev, fn)
            finally:
                done[name].set()

        threads = [threading.Thread(target=work, args=(n, ops), name=f"cm-{n}", daemon=True)
                   for n, ops in actors.items()]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join(STEP_WAIT)
            assert not t.is_alive(), f"step {step}: {t.name} still running after {STEP_WAIT}s"
        fired = self.backend.disarm()
        lost = {self.armed} if fired and self.armed else set()
        if fired:
            notes.append("the lost answer fired")
            self.table.counts["lost answers"] += 1
        if self.hold is not None and self.hold.waited:
            self.table.counts["holds"] += 1
        events = [ev for ops in actors.values() for ev, _ in ops]
        end = {c: self.backend.read(c) for c in self.consumers}
        cache = {self.names[c]: (state_of(self.client.cached(c)),
                                 state_of(self.client.cached(c, trusted=True)))
                 for c in self.consumers}  # fmt: skip

        def named(by_uuid: Mapping[str, State]) -> dict[str, State]:
            return {self.names[c]: v for c, v in by_uuid.items()}

        record = StepRecord(step, named(start), named(end), events, cache, notes)
        self.history.append(record)

        def view(name: str, trusted: bool) -> State | None:
            return cache[name][1 if trusted else 0]

        # Only rows this step left behind prove anything about it; nothing writes between
        # steps, so the rows after the last step are those before this one.
        before, self.orphaned = self.orphaned, self.backend.orphaned()
        new_rows = {self.names[c]: rows for c, rows in self.orphaned.items()
                    if c in self.names and rows != before.get(c)}  # fmt: skip
        findings = self.checker.check_step(
            step, record.start, record.end, events, view, lost, new_rows
        )
        if self.ttl and any(not e.shared and e.answer and e.answer[0] == 1 for e in events):
            # Another client created a consumer (perhaps re-created it): a write from a cache
            # entry of the old incarnation at the same generation is the documented cache_ttl
            # window (README "Cache"), so, as the write machine does, the clock passes it.
            self.now[0] += self.ttl + 1
            notes.append("cache_ttl passes (another client created a consumer)")
        self.table.operations += len(events)
        for ev in events:
            if ev.outcome == "typed":
                self.table.counts["typed errors"] += 1
            if ev.outcome == "unknown":
                self.table.counts["unknown outcomes"] += 1
            if ev.error:
                self.table.errors[ev.error.split(":")[0]] += 1
        return findings

    def run(self) -> Table:
        self.table.seeds = 1
        wrong: set[tuple[int, str]] = set()
        for step in range(self.steps):
            for f in self.run_step(step):
                self.table.counts[f.column] += 1
                if f.column in CACHE:
                    wrong.add((f.step, f.consumer))
                texts = self.table.reports.setdefault(f.column, [])
                if len(texts) < 3:
                    texts.append(self.explain(f))
            self.table.steps += 1
        self.table.wrong_entries = len(wrong)
        return self.table

    def explain(self, f: Finding) -> str:
        """The finding with its consumer's history, step by step, up to it."""
        lines = [f"\n{f.column.upper()}: {f.consumer} at step {f.step} (seed {self.seed}, "
                 f"cache_ttl={self.ttl:g}): {f.detail}"]  # fmt: skip
        for r in self.history:
            mine = [e for e in r.events if e.consumer == f.consumer]
            if not mine and r.step != f.step:
                continue
            anyhow, trusted = r.cache[f.consumer]
            lines.append(f"  step {r.step}: Placement {show(r.start[f.consumer])} -> "
                         f"{show(r.end[f.consumer])}; cache after: {show(anyhow)}"
                         f"{' (trusted)' if trusted is not None else ''}")  # fmt: skip
            lines += [f"    {n}" for n in r.notes]
            lines += [f"    {e}" for e in sorted(mine, key=lambda e: e.invoked)]
        return "\n".join(lines)


def run_many(backend_for: Callable[[], Backend], seeds: Sequence[int], ttl: float,
             title: str, steps: int = 30) -> Table:  # fmt: skip
    """Run one machine per seed, each on a fresh backend; the summed table."""
    total = Table(title)
    for seed in seeds:
        backend = backend_for()
        try:
            total.add(Machine(backend, seed, ttl, steps=steps).run())
        finally:
            backend.close()
    return total
