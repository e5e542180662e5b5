"""The checker of the concurrent machine: what one step's history must satisfy at quiescence.

``tests/machines/concurrent_machine.py`` drives several threads of one shared ``PlacementClient``
(plus another client, raw writes and lost answers) a step at a time; after each step,
with every thread joined and nothing in flight, it hands this module what happened
(:class:`Event` per operation, with its invocation and return ticks), what Placement held
before and after (read by a separate client), and a view of the shared client's cache. The
checker is pure: the unit tests feed it fabricated histories to prove it reports each kind.

Per consumer and step it checks:

* **linearizable** (Knossos/Porcupine, on one register per consumer): some order of the
  step's operations that respects real time (one returned before the other began) takes
  Placement's state before the step to the state after it, each acknowledged write landing
  exactly once, each typed error writing nothing and reading what it reports, each unknown
  outcome landing at most once, every answer (a claim's or update's result, a read, a
  release's "missing") equal to the state at its point. When no order exists, relaxed models
  name the violation: ``lost`` (an acknowledged write may land zero times), ``applied twice``
  (a write may land twice), ``resurrected`` (an update may create), ``clobbered`` (a claim
  may replace what the shared client never saw); none of them: ``not linearizable``.
* **never over its own write**: a ``ConsumerChanged`` or ``ConsumerGone`` from the shared
  client on a consumer no other actor (other client, raw write, lost answer) touched since
  the client's last acknowledged answer, and no other thread of it wrote in this step.
* **cache truth**: ``quiet`` (nobody but the shared client's acknowledged operations moved
  the consumer since): ``cached(c)``, trusted or not, is None or Placement's state;
  ``trusted after the last answer``: a trusted entry equals one of the client's last answers
  for the consumer (the maximal ones in real time), and none survives a lost answer;
  ``trusted wrong content``: a trusted entry at Placement's generation holds Placement's
  allocations (else a write from it overwrites: data loss), unless others deleted and
  re-created the consumer since the client's last answer (the documented ``cache_ttl``
  window: counted as ``residual``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence

from tests.machines.write_model import EMPTY, Allocs, thaw

#: A consumer as Placement holds it: (generation, allocations); MISSING when it does not exist.
State = tuple[int | None, Allocs]
MISSING: State = (None, EMPTY)

LINEAR = ("lost", "applied twice", "resurrected", "clobbered", "not linearizable")
CACHE = ("stale cache (quiet)", "trusted after last answer", "trusted wrong content")
VIOLATIONS = ("own-write error", *CACHE, *LINEAR, "unexpected error")
INFO = ("placement create race", "placement delete race", "placement orphaned rows")
INFO += ("residual", "lost answers", "holds")
INFO += ("typed errors",)
INFO += ("unknown outcomes",)
#: The columns that are Placement's own races: reported, not asserted.
PLACEMENT = tuple(column for column in INFO if column.startswith("placement "))


def show(state: State | None) -> str:
    if state is None:
        return "None"
    if state[0] is None:
        return "missing"
    return f"gen {state[0]} {thaw(state[1])}"


@dataclasses.dataclass
class Event:
    """One operation of one actor in one step, and how it ended.

    :param shared: performed by the shared client (a thread of it), raw writes included.
    :param outcome: ``ok``; ``typed`` (ConsumerChanged/ConsumerGone, nothing written);
        ``unknown`` (OutcomeUnknown, or a lost answer: landed at most once); ``wild`` (a
        GenerationConflict after retries: nothing written, reads not reported); ``error``.
    :param answer: the state the operation returned or reported (exc.state), if any.
    """

    actor: str
    kind: str  # claim, update <verb>, release, force_release, get, raw put, raw delete
    consumer: str
    shared: bool
    want: Allocs = EMPTY  # a claim's or raw put's allocations
    mutate: Callable[[Allocs], Allocs] | None = None  # an update's, on allocations
    generation: int | None = None  # what a raw put carried
    overwrite: bool = False
    invoked: int = 0
    returned: int = 0
    outcome: str = ""
    answer: State | None = None
    status: int | None = None  # a raw write's answer; force_release: 1 deleted, 0 not
    error: str = ""
    calls: list[tuple[Allocs, Allocs]] = dataclasses.field(default_factory=list)

    @property
    def writes(self) -> bool:
        return self.kind != "get"

    def __str__(self) -> str:
        what = self.kind
        if self.kind in ("claim", "raw put") or self.kind.startswith("update"):
            what += f" {thaw(self.want)}" if self.want else ""
        if self.kind == "raw put":
            what += f" at gen {self.generation}"
        said = self.outcome
        if self.answer is not None:
            said += f" -> {show(self.answer)}"
        if self.status is not None:
            said += f" [{self.status}]"
        if self.error:
            said += f" ({self.error[:120]})"
        calls = "".join(f" mutate({thaw(a)})={thaw(b)}" for a, b in self.calls)
        return f"{self.actor:<9} {what}: {said} [{self.invoked}..{self.returned}]{calls}"


def _write_to(state: State, allocs: Allocs) -> State:
    if not allocs:
        return MISSING  # an empty write deletes the consumer
    return ((state[0] or 0) + 1, allocs)


@dataclasses.dataclass(frozen=True)
class Relax:
    lost: bool = False
    twice: bool = False
    resurrect: bool = False
    clobber: bool = False
    create_race: bool = False  # Placement's own: two creates (null generation) both land
    delete_race: bool = False  # Placement's own: a guarded write lands over a concurrent DELETE


def _landings(ev: Event, state: State, relax: Relax, known: frozenset[Allocs]) -> list[State]:
    """States one landing of ``ev``'s write makes from ``state`` ([] where it cannot land)."""
    gen, allocs = state
    if ev.kind == "claim":
        if ev.shared and not ev.overwrite and not relax.clobber:
            if allocs not in known and allocs not in (EMPTY, ev.want):
                return []
        out = [_write_to(state, ev.want)]
        return out + ([state] if allocs == ev.want else [])
    if ev.kind.startswith("update"):
        assert ev.mutate is not None
        if gen is None and not relax.resurrect:
            return []
        made = ev.mutate(allocs)
        return [_write_to(state, made)] + ([state] if made == allocs else [])
    if ev.kind in ("release", "force_release"):
        return [MISSING]
    if ev.kind == "raw put":
        return [_write_to(state, ev.want)] if gen == ev.generation else []
    if ev.kind == "raw delete":
        return [MISSING] if gen is not None else []
    return [state]


def moves(ev: Event, state: State, relax: Relax, known: frozenset[Allocs]) -> list[State]:
    """Where ``state`` may go when ``ev`` takes effect (its linearization point)."""
    if ev.outcome == "unknown" or ev.outcome == "dup":
        return [state, *_landings(ev, state, relax, known)]
    if ev.outcome in ("typed", "wild", "error"):
        if ev.answer is not None and ev.outcome == "typed" and ev.answer != state:
            return []
        return [state]
    # ok
    if ev.kind == "get":
        return [state] if ev.answer == state else []
    if ev.kind == "release" and state[0] is None:
        return [state]
    if ev.kind == "force_release" or (ev.kind == "raw delete" and ev.status == 204):
        # Not a read: two DELETEs served by two workers at once may both answer 204
        # (seen on MariaDB and PostgreSQL), so "it deleted something" orders nothing.
        return [MISSING, state] if relax.delete_race else [MISSING]
    if ev.kind == "raw put" and ev.status != 204:
        # A 409 is not only a generation mismatch: a provider or consumer bump racing
        # another worker's write says "concurrently updated" too (seen on PostgreSQL).
        return [state]
    if ev.kind == "raw delete" and ev.status != 204:
        return [state] if state[0] is None else []
    out = _landings(ev, state, relax, known)
    if ev.answer is not None and not ev.kind.startswith("raw"):
        raced = relax.create_race and ev.kind == "claim" and ev.answer[0] == 1
        out = [s for s in out if s == ev.answer or (raced and s[1] == ev.answer[1])]
        if raced and state[0] is not None:
            out.append(state)  # the other create won the race and its content stayed
    if relax.lost:
        out.append(state)
    return out


def linearizable(
    start: State, end: State, events: Sequence[Event], relax: Relax, known: frozenset[Allocs]
) -> bool:
    """Whether some real-time-respecting order of ``events`` takes ``start`` to ``end``."""
    evs = list(events)
    if relax.twice:
        evs += [dataclasses.replace(e, outcome="dup") for e in events if e.writes]
    n = len(evs)
    before = [sum(1 << i for i in range(n) if evs[i].returned < evs[j].invoked) for j in range(n)]

    @functools.cache
    def search(done: int, state: State) -> bool:
        if done == (1 << n) - 1:
            return state == end
        for j in range(n):
            if done >> j & 1 or before[j] & ~done:
                continue
            for nxt in moves(evs[j], state, relax, known):
                if search(done | 1 << j, nxt):
                    return True
        return False

    return search(0, start)


RELAXATIONS = (
    # placement/handlers/util.py _create_consumer: a create (consumer_generation null) that
    # meets ConsumerExists re-fetches the consumer and writes on it without comparing
    # generations, so two concurrent creates both answer 204 and one replaces the other's
    # allocations, at generation 2 or still 1 (both seen on MariaDB). Placement's race, not
    # the client's: reported, not asserted.
    ("placement create race", Relax(create_race=True)),
    # DELETE /allocations/{c} checks no generation and takes no lock on the consumer: a
    # guarded PUT served by another worker at the same time, carrying the generation it
    # read before the DELETE, still lands at that generation + 1 over the emptied consumer
    # while the DELETE answers 204 (seen on MariaDB: force_release said it deleted, the
    # claim landed at generation 2). Placement's race: reported, not asserted.
    ("placement delete race", Relax(delete_race=True)),
    ("clobbered", Relax(clobber=True)),
    ("resurrected", Relax(resurrect=True)),
    ("lost", Relax(lost=True)),
    ("applied twice", Relax(twice=True)),
)


#: What :func:`diagnose` says of a step that is linearizable or only one of Placement's races.
PLACEMENTS = ("", *(name for name, _ in RELAXATIONS if name in PLACEMENT))


def orphaned_end(
    start: State,
    events: Sequence[Event],
    known: frozenset[Allocs],
    any_premise: bool,
    rows: Mapping[str, int],
) -> bool:
    """Whether the step ended in ``rows`` (provider -> used) under a consumer row Placement deleted.

    Placement 16.0.0 deletes a consumer it auto-created when the write that created it
    fails, whoever wrote to the consumer meanwhile (a create that met ``ConsumerExists``
    writes on it: the create race above), so the allocation rows the other write left stay
    without a consumer row and every read shows the consumer missing. Those rows, read from
    the database, prove the deletion was Placement's; the step is Placement's only when some
    content an operation of the step or an earlier answer held sums to exactly those rows per
    provider, and ending in it at some generation is linearizable (or one of Placement's own
    races).
    """
    contents = set(known) | {e.want for e in events} | {e.answer[1] for e in events if e.answer}
    generations = range(1, max((e.answer[0] or 0 for e in events if e.answer), default=0) + 3)
    for content in contents:
        sums = {rp: sum(res.values()) for rp, res in thaw(content).items()}
        if sums != dict(rows):
            continue
        for generation in generations:
            if diagnose(start, (generation, content), events, known, any_premise) in PLACEMENTS:
                return True
    return False


def diagnose(
    start: State,
    end: State,
    events: Sequence[Event],
    known: frozenset[Allocs],
    any_premise: bool = False,
) -> str:
    """'' when the step is linearizable, else the name of the violation (LINEAR)."""
    if linearizable(start, end, events, Relax(clobber=any_premise), known):
        return ""
    for name, relax in RELAXATIONS:
        relax = dataclasses.replace(relax, clobber=relax.clobber or any_premise)
        if linearizable(start, end, events, relax, known):
            return name
    return "not linearizable"


@dataclasses.dataclass(frozen=True)
class Answer:
    """What the shared client told a caller about a consumer: a state, a doubt, or anything."""

    kind: str  # "state", "doubt" (a lost answer: nothing may be trusted), "wild"
    state: State | None
    invoked: int
    returned: int


def answer_of(ev: Event) -> Answer | None:
    """The answer the shared client received from ``ev``, if it says anything."""
    if ev.outcome == "error":
        return Answer("wild", None, ev.invoked, ev.returned)
    if ev.outcome == "wild":
        return Answer("wild", None, ev.invoked, ev.returned)
    if ev.outcome == "unknown":
        kind = "state" if ev.answer is not None else "doubt"
        return Answer(kind, ev.answer, ev.invoked, ev.returned)
    if ev.kind == "raw put":
        if ev.status != 204:
            return None
        return Answer("state", _write_to((ev.generation, EMPTY), ev.want), ev.invoked, ev.returned)
    if ev.kind == "raw delete":
        return Answer("state", MISSING, ev.invoked, ev.returned) if ev.status == 204 else None
    if ev.outcome == "ok" and ev.kind in ("release", "force_release"):
        return Answer("state", MISSING, ev.invoked, ev.returned)
    if ev.answer is not None:
        return Answer("state", ev.answer, ev.invoked, ev.returned)
    return None


CacheView = Callable[[str, bool], State | None]


@dataclasses.dataclass
class Consumer:
    """What the checker remembers of one consumer between steps."""

    quiet: bool = True  # only the shared client's acknowledged operations moved it since
    window: bool = False  # others deleted it since the client's last answer (cache_ttl window)
    last: list[Answer] = dataclasses.field(default_factory=list)  # maximal last answers
    known: set[Allocs] = dataclasses.field(default_factory=set)  # contents it was told of
    wild: bool = False  # an operation ended without saying what it read (any premise since)


@dataclasses.dataclass
class Finding:
    column: str
    consumer: str
    step: int
    detail: str


class Checker:
    """Judges each step of one run (one seed, one client) and keeps per-consumer memory."""

    def __init__(self, consumers: Sequence[str]) -> None:
        self.consumers = {c: Consumer() for c in consumers}

    def check_step(
        self,
        step: int,
        start: Mapping[str, State],
        end: Mapping[str, State],
        events: Sequence[Event],
        cache: CacheView,
        lost: set[str] = frozenset(),  # type: ignore[assignment]
        orphaned: Mapping[str, Mapping[str, int]] | None = None,
    ) -> list[Finding]:
        """Findings for one step; ``lost``: consumers on which a lost answer fired.

        ``orphaned``: consumer -> provider -> sum used of the allocation rows Placement left
        without a consumer row (read from its database), for a consumer that reads missing
        (:func:`orphaned_end`).
        """
        found: list[Finding] = []
        for c, memory in self.consumers.items():
            mine = [e for e in events if e.consumer == c]
            shared = [e for e in mine if e.shared and not e.kind.startswith("raw")]
            raw = [e for e in mine if e.shared and e.kind.startswith("raw")]
            others = [e for e in mine if not e.shared and e.writes]
            touched = bool(others or raw or c in lost)
            for ev in mine:
                if ev.outcome == "error":
                    found.append(Finding("unexpected error", c, step, str(ev)))
            # Never over its own write.
            shared_writes = [e for e in shared if e.writes]
            for ev in shared:
                if ev.outcome != "typed" or not memory.quiet or touched:
                    continue
                if len(shared_writes) > 1:
                    continue  # another thread of the client wrote it concurrently
                gone = ev.error.startswith("ConsumerGone")
                if not gone or start[c][0] is not None:
                    found.append(Finding("own-write error", c, step, str(ev)))
            # Linearizability of this consumer's step.
            if mine:
                known = set(memory.known) | {a.state[1] for e in shared
                                             if (a := answer_of(e)) and a.state}  # fmt: skip
                # After a give-up that read without saying what, any premise is possible.
                wild = memory.wild or any(e.outcome == "wild" for e in shared)
                verdict = diagnose(start[c], end[c], mine, frozenset(known), wild)
                rows = (orphaned or {}).get(c)
                if (
                    verdict
                    and rows
                    and end[c] == MISSING
                    and orphaned_end(start[c], mine, frozenset(known), wild, rows)
                ):
                    verdict = "placement orphaned rows"
                if verdict:
                    detail = f"from {show(start[c])} to {show(end[c])}"
                    found.append(Finding(verdict, c, step, detail))
            # Memory after the step.
            answers = [a for e in [*shared, *raw] if (a := answer_of(e)) is not None]
            if answers:
                memory.last = [
                    a for a in answers if not any(a.returned < b.invoked for b in answers)
                ]
                memory.known |= {a.state[1] for a in answers if a.state is not None}
                memory.wild |= any(a.kind == "wild" for a in answers)
            if any(not e.shared and e.kind in ("release", "force_release") for e in mine):
                memory.window = True
            elif answers and not (others or c in lost):
                memory.window = False
            if touched or any(e.outcome in ("unknown", "wild", "error") for e in shared):
                memory.quiet = False
            elif any(e.outcome == "ok" for e in shared):
                memory.quiet = True
            found += self.check_cache(step, c, end[c], cache)
        return found

    def check_cache(self, step: int, c: str, now: State, cache: CacheView) -> list[Finding]:
        memory = self.consumers[c]
        found: list[Finding] = []
        anyhow, trusted = cache(c, False), cache(c, True)
        if memory.quiet and anyhow is not None and anyhow != now:
            how = "trusted" if trusted is not None else "untrusted"
            detail = f"cache {show(anyhow)} ({how}), Placement {show(now)}"
            found.append(Finding("stale cache (quiet)", c, step, detail))
        last = memory.last
        if trusted is not None and last and not any(a.kind == "wild" for a in last):
            states = [a.state for a in last if a.kind == "state"]
            if trusted not in states:
                told = ", ".join(show(a.state) if a.kind == "state" else a.kind for a in last)
                detail = f"trusted {show(trusted)}; the client's last answers: {told}"
                found.append(Finding("trusted after last answer", c, step, detail))
        if (
            trusted is not None
            and trusted[0] is not None
            and trusted[0] == now[0]
            and trusted[1] != now[1]
        ):
            column = "residual" if memory.window else "trusted wrong content"
            detail = f"trusted {show(trusted)}, Placement {show(now)}"
            found.append(Finding(column, c, step, detail))
        return found
