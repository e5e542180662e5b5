"""The one judge of every generation-guarded write: a trace of what Placement held, per request.

The checkers it replaced (a consumer and a provider state machine, retired in issue 36; see
doc/source/testing.rst) enumerated the histories an operation *may* have had around one other
write and asked whether the final read-back was one of them. With deletes and re-creations
between any two requests, and operations on up to three subjects, that enumeration explodes; so
this checker *observes* instead. Every backend calls the machine back after each of the
client's requests (before the client sees the answer), and the machine reads every subject of
the operation there, and around every write of the other writer. The result is a
:class:`Trace`: the states Placement held, in order, each step labelled with who moved it.
Nothing else writes, so a client step that moved a subject (its generation, its existence) is
one of the client's writes landing: a *landing*. A slow write that lands after the client's
re-read is folded into the re-read's step; what the re-read *saw* is the step's ``before``.

The rule every write obeys (``reportclient/_engine/fate.py``) is that at most one write of an
operation ever lands (per field written, for a reconcile), and that it lands on the state it
was computed from. So the judge needs no history enumeration:

* **applied twice**: two landings of one operation (one field, for a reconcile);
* **clobbered**: a landing that is not the operation applied to the state it replaced (it
  was computed from content it never saw: another writer's allocation or field is gone), or
  a claim or release replacing allocations the client never saw;
* **resurrected**: a landing that creates a subject an operation may not create (an update,
  a release, a reshape, a field write; a move's announced target), or re-creates one that
  another writer deleted after a write of the same operation had landed on it (a lost create
  sent again), or that existed when a reconcile listed it;
* **lost**: success, yet nothing landed and Placement did not already hold what was asked
  (for a non-idempotent operation: nothing landed);
* **other**: a typed error other than ``OutcomeUnknown`` with a landing, an error no fault
  explains, or a subject changing while nobody wrote.

Violations inside the residual windows the engine documents (a subject re-created back to
the generation and content of an earlier incarnation; one re-created up to the generation a
landing of the operation made) are counted as ``residual`` instead. The third window (a
consumer re-created inside ``cache_ttl``) is kept out of the generator: the machine lets the
client's clock pass ``cache_ttl`` after any re-creation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import reportclient as rc

#: A consumer's allocations, frozen: ((provider, ((class, amount), ...)), ...); () = missing.
Allocs = tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
EMPTY: Allocs = ()
COMPONENTS = ("inventories", "traits", "aggregates")
VIOLATIONS = ("applied twice", "lost", "clobbered", "resurrected", "other")
COLUMNS = ("injected", "fired", "recovered", "typed error", "OutcomeUnknown", *VIOLATIONS)
COLUMNS += ("residual",)


def freeze(allocs: Mapping[str, Mapping[str, int]]) -> Allocs:
    return tuple(sorted((rp, tuple(sorted(res.items()))) for rp, res in allocs.items() if res))


def thaw(allocs: Allocs) -> dict[str, dict[str, int]]:
    return {rp: dict(res) for rp, res in allocs}


def plus(a: Allocs, b: Allocs) -> Allocs:
    total = thaw(a)
    for rp, res in b:
        for rclass, amount in res:
            total.setdefault(rp, {})[rclass] = total.get(rp, {}).get(rclass, 0) + amount
    return freeze(total)


@dataclasses.dataclass(frozen=True)
class Fields:
    """A provider's generation-guarded fields: inventory totals, traits, aggregates."""

    inventories: frozenset[tuple[str, int]] = frozenset()
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()

    def get(self, name: str) -> frozenset[Any]:
        return getattr(self, name)  # type: ignore[no-any-return]

    def but(self, name: str, value: Iterable[Any]) -> Fields:
        return dataclasses.replace(self, **{name: frozenset(value)})

    def totals(self) -> dict[str, int]:
        return dict(self.inventories)


Content = Allocs | Fields | None  # None: a provider that does not exist


@dataclasses.dataclass(frozen=True)
class Held:
    """One subject as read: whether it exists, its generation, content and incarnation."""

    exists: bool
    generation: int | None
    content: Content
    incarnation: int = 0

    def __str__(self) -> str:
        if not self.exists:
            return f"missing (inc {self.incarnation})"
        content = thaw(self.content) if isinstance(self.content, tuple) else self.content
        return f"gen {self.generation} inc {self.incarnation} {content}"


World = dict[str, Held]  # subject key ("c:<uuid>" or "p:<uuid>") -> what it holds


@dataclasses.dataclass
class Step:
    """Placement between two reads: who moved it (client request or other writer)."""

    actor: str  # "client" or "other"
    label: str  # the client's method and path, or what the other writer did
    before: World
    after: World

    def moved(self) -> list[str]:
        return [k for k in self.after if self.after[k] != self.before.get(k)]


@dataclasses.dataclass
class Trace:
    """Every state of the operation's subjects, from before its first request to the end."""

    start: World
    steps: list[Step] = dataclasses.field(default_factory=list)

    @property
    def now(self) -> World:
        return self.steps[-1].after if self.steps else self.start

    def client_steps(self) -> list[Step]:
        return [s for s in self.steps if s.actor == "client"]

    def landings(self) -> list[Step]:
        return [s for s in self.client_steps() if s.moved()]

    def seen(self) -> list[World]:
        """What each of the client's reads saw, in order (a GET step's ``before``)."""
        return [s.before for s in self.client_steps() if s.label.startswith("GET")]

    def last_answered(self) -> World:
        """Placement as the client's last request left it (before any later other write)."""
        steps = self.client_steps()
        return steps[-1].after if steps else self.start

    def deleted_by_other(self, key: str) -> bool:
        return any(
            s.actor == "other" and s.before[key].exists and not s.after[key].exists
            for s in self.steps
        )


@dataclasses.dataclass(frozen=True)
class Op:
    """A client operation: its subjects and how to judge each of its landings.

    :param apply: content after one application on ``before`` (the contents of its
        subjects), or a string naming the violation when the operation may not land there.
    :param wants: whether Placement (contents) holds what an idempotent operation asked.
    :param creates: subjects the operation may create from missing.
    :param per_field: a reconcile: at most one landing per (subject, field), not per op.
    """

    kind: str
    subjects: tuple[str, ...]
    call: Callable[[rc.PlacementClient], Any]
    apply: Callable[[Mapping[str, Content]], Mapping[str, Content] | str]
    idempotent: bool
    wants: Callable[[Mapping[str, Content]], bool] | None = None
    creates: frozenset[str] = frozenset()
    per_field: bool = False
    describe: str = ""


def contents(world: Mapping[str, Held]) -> dict[str, Content]:
    return {k: h.content for k, h in world.items()}


#: Typed errors an operation may end in (all but OutcomeUnknown mean "not applied").
EXPECTED = (
    rc.ConsumerChanged,
    rc.ConsumerGone,
    rc.NothingToMove,
    rc.ProviderNotFound,
    rc.GenerationConflict,
    rc.PlacementUnavailable,
)


def units(op: Op, step: Step) -> list[tuple[str, str]]:
    """What one landing wrote: the operation, or for a reconcile each (subject, field)."""
    if not op.per_field:
        return [("op", "")]
    out = []
    for key in step.moved():
        a, b = step.before[key], step.after[key]
        if a.exists != b.exists:
            out.append((key, "exists"))
            continue
        old, new = a.content, b.content
        assert isinstance(old, Fields) and isinstance(new, Fields)
        changed = [c for c in COMPONENTS if old.get(c) != new.get(c)]
        out += [(key, c) for c in changed] or [(key, "generation")]
    return out


def check_landing(op: Op, trace: Trace, step: Step, index: int) -> str:
    """'' if ``step`` is one application of ``op`` on what it replaced, else the violation."""
    before, after = contents(step.before), contents(step.after)
    for key in step.moved():
        was, now = step.before[key], step.after[key]
        if now.exists and not was.exists:
            if key not in op.creates:
                return f"!resurrected: {op.kind} created {key} ({now})"
            if trace.start[key].exists and op.per_field:
                return f"!resurrected: a reconcile re-created {key}, which it listed"
            landed_before = any(key in s.moved() for s in trace.landings()[:index])
            if landed_before and trace.deleted_by_other(key):
                return f"!resurrected: {key} re-created after its delete (a lost create resent)"
    if op.per_field:
        return _check_reconcile(op, step)
    expected = op.apply(before)
    if isinstance(expected, str):
        return expected
    for key in op.subjects:
        if after[key] != expected.get(key, before[key]):
            return (
                f"!clobbered: {op.kind} landed {key} as {step.after[key]} on {step.before[key]}; "
                f"one application makes {expected.get(key, before[key])}"
            )
    return ""


def _check_reconcile(op: Op, step: Step) -> str:
    expected = op.apply(contents(step.before))
    assert not isinstance(expected, str)
    for key in step.moved():
        now = step.after[key].content
        if not step.before[key].exists:
            continue  # created empty; its fields are their own landings
        assert isinstance(now, Fields)
        want = expected.get(key)
        assert isinstance(want, Fields)
        for c in COMPONENTS:
            if now.get(c) != step.before[key].content.get(c) and now.get(c) != want.get(c):  # type: ignore[union-attr]
                return f"!clobbered: reconcile wrote {key} {c} {sorted(now.get(c))}"
    return ""


def residual(trace: Trace, op: Op) -> str:
    """The documented window this trace falls in, if any ('' if none)."""
    states = [trace.start, *(s.after for s in trace.steps)]
    made = {(k, s.after[k].generation, s.after[k].incarnation) for s in trace.landings()
            for k in s.moved()}  # fmt: skip
    for key in op.subjects:
        held = [w[key] for w in states if w[key].exists]
        for i, a in enumerate(held):
            for b in held[i + 1 :]:
                if b.incarnation <= a.incarnation or b.generation != a.generation:
                    continue
                if (key, a.generation, a.incarnation) in made:
                    return "residual: re-created up to the generation a landing made (R2)"
                if b.content == a.content:
                    return "residual: re-created to an earlier generation and content (R1)"
                # Read at N, then deleted and re-created back to N before the write: no read
                # can see it (Placement's generations restart); the engine does not list it.
                return "residual: re-created to N between the read and the write (ABA)"
    return ""


def judge(op: Op, trace: Trace, error: BaseException | None, disturbed: bool) -> str:
    """Classify one operation: 'recovered', 'typed...', 'unknown...', or '!<violation>...'."""
    verdict = _judge(op, trace, error, disturbed)
    if verdict.startswith("!") and not verdict.startswith("!other"):
        window = residual(trace, op)
        if window:
            return f"{window} ({verdict[1:]})"
    return verdict


def _judge(op: Op, trace: Trace, error: BaseException | None, disturbed: bool) -> str:
    landings = trace.landings()
    counted: dict[tuple[str, str], int] = {}
    for index, step in enumerate(landings):
        bad = check_landing(op, trace, step, index)
        if bad:
            return bad
        for unit in units(op, step):
            counted[unit] = counted.get(unit, 0) + 1
    twice = [u for u, n in counted.items() if n > 1]
    if twice:
        return f"!applied twice: {len(landings)} landings ({twice})"
    if error is None:
        if op.idempotent and op.wants is not None:
            if not op.wants(contents(trace.last_answered())):
                return "!lost: success, yet Placement does not hold what was asked"
            return "recovered"
        if not landings:
            return "!lost: success, yet none of its writes landed"
        return "recovered"
    name = type(error).__name__
    if isinstance(error, rc.OutcomeUnknown):
        return "unknown: landed" if landings else "unknown: not landed"
    if not isinstance(error, EXPECTED):
        return f"!other: unexpected {name}: {error}"
    if (
        isinstance(error, rc.PlacementUnavailable)
        and not isinstance(error, rc.PlacementOverloaded)  # the budget: conflicts suffice
        and not disturbed
    ):
        return f"!other: {name} while every request was answered"
    if landings and op.per_field:
        return f"typed: {name} (after writes that landed and were acknowledged)"
    if landings:
        if op.kind == "force_release" and getattr(error, "outcome_unknown", False):
            return "unknown: landed"  # one unguarded DELETE whose answer was lost
        return f"!other: {name}, yet a write landed: {landings[-1].label}"
    return f"typed: {name}"


def show(trace: Trace) -> str:
    lines = [f"    start: {_world(trace.start)}"]
    for s in trace.steps:
        lines.append(f"    {s.actor} {s.label}: {_world(s.after) if s.moved() else '-'}")
    return "\n".join(lines)


def _world(world: Mapping[str, Held]) -> str:
    return "; ".join(f"{k[:10]} {v}" for k, v in world.items())


def table(title: str, rows: Mapping[tuple[str, str], Mapping[str, int]]) -> str:
    """The per operation x fault table."""
    heads = [c[:12] for c in COLUMNS]
    lines = ["", title, f"{'operation':<18}{'fault':<18}" + "".join(f"{h:>13}" for h in heads)]
    for (op, fault), counts in sorted(rows.items()):
        cells = "".join(f"{counts.get(c, 0):>13}" for c in COLUMNS)
        lines.append(f"{op:<18}{fault:<18}{cells}")
    totals = {c: sum(r.get(c, 0) for r in rows.values()) for c in COLUMNS}
    lines.append(f"{'total':<36}" + "".join(f"{totals[c]:>13}" for c in COLUMNS))
    return "\n".join(lines)


def column(verdict: str) -> str:
    if verdict.startswith("!"):
        return next(v for v in VIOLATIONS if verdict[1:].startswith(v))
    if verdict.startswith("residual"):
        return "residual"
    if verdict.startswith("unknown"):
        return "OutcomeUnknown"
    return "typed error" if verdict.startswith("typed") else "recovered"


def first(seq: Sequence[Any], default: Any) -> Any:
    return seq[0] if seq else default
