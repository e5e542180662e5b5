"""The model of ``tests/provider_statemachine.py``: states, operations, histories, the judge.

A state is a provider's three fields *and* its generation. ``finals`` lists every history
an operation can have had (applied 0, 1 or 2 times, interleaved with another writer's
changes and consistent with what each write saw); ``judge`` says whether what Placement
holds afterwards is one the client's answer allows, and names the violation otherwise.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import reportclient as rc
from reportclient import Inventory
from reportclient._clients.providers import ProviderClient

TTL = 60.0
PROVIDERS = 2
TRAITS = ("HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "STORAGE_DISK_SSD")
AGGREGATES = tuple(f"8a6e39c4-5a2f-4d3b-9c1e-0000000000a{i}" for i in range(1, 4))
GPU = "CUSTOM_GPU"
#: Classes the client's operations and the other writer set and remove.
CLASSES = ("VCPU", "MEMORY_MB", GPU)
#: Nobody changes it; the other writer allocates against it (moving the generation only).
DISK = Inventory(total=10**6)
INITIAL = {"VCPU": Inventory(total=8), "MEMORY_MB": Inventory(total=2048), "DISK_GB": DISK}
#: Held by a standing consumer on every provider: removing MEMORY_MB is InventoryInUse.
STANDING = {"MEMORY_MB": 512}
IN_USE = frozenset({"MEMORY_MB", "DISK_GB"})
#: The fault armed before a client operation; each hits the operation's first PUT, except
#: outage (every request fails from the first) and contention (a write after every GET).
FAULTS: tuple[str, ...] = ("none", "lost-reset", "lost-timeout", "5xx-before-commit")
FAULTS += ("5xx-after-commit",)
FAULTS += ("slow-write", "failing-reread", "lost-then-outage", "outage", "contention")
DURING = "other writer during op"
VIOLATIONS: tuple[str, ...] = ("applied twice", "lost", "clobbered", "false success")
VIOLATIONS += ("applied on error",)
VIOLATIONS += ("other violation",)

Inventories = tuple[tuple[str, Inventory], ...]  # frozen, sorted by class


def freeze_inv(inventories: Iterable[tuple[str, Inventory]]) -> Inventories:
    return tuple(sorted(inventories))


@dataclasses.dataclass(frozen=True)
class Held:
    """A provider's generation-guarded fields, frozen; attribute names are the routes."""

    inventories: Inventories
    traits: frozenset[str]
    aggregates: frozenset[str]

    def field(self, route: str) -> Any:
        return getattr(self, route)

    def with_field(self, route: str, value: Any) -> Held:
        return dataclasses.replace(self, **{route: value})

    def keys(self) -> dict[tuple[str, str], Any]:
        """Every (route, key): value; what a lost update of another writer would lose."""
        out: dict[tuple[str, str], Any] = {("inventories", k): v for k, v in self.inventories}
        out.update({("traits", t): True for t in self.traits})
        out.update({("aggregates", a): True for a in self.aggregates})
        return out

    def __str__(self) -> str:
        inv = " ".join(f"{k}={v.total}" for k, v in self.inventories)
        return f"[{inv} | traits {short(self.traits)} | aggregates {short(self.aggregates)}]"


State = tuple[Held, int]  # the fields and the provider generation


def short(names: Iterable[str]) -> str:
    aliases = {a: f"agg{i}" for i, a in enumerate(AGGREGATES, 1)}
    return "{" + ", ".join(sorted(aliases.get(n, n) for n in names)) + "}"


def show(s: State | None) -> str:
    return "none" if s is None else f"generation {s[1]} {s[0]}"


def show_field(route: str, value: Any) -> str:
    if route == "inventories":
        return "{" + " ".join(f"{k}={v.total}" for k, v in value) + "}"
    return short(value)


#: The field each operation writes.
ROUTES = dict.fromkeys(
    ("inc", "set_inventory", "remove_inventory", "set_inventories"), "inventories"
)
ROUTES |= {
    f"{verb}_{route}": route
    for verb in ("add", "remove", "set")
    for route in ("traits", "aggregates")
}


@dataclasses.dataclass(frozen=True)
class Op:
    """A client operation on one field; ``compute`` is its effect on the field's value."""

    kind: str  # inc (not idempotent: VCPU total += arg) or a ProviderClient method name
    arg: Any = None

    route = property(lambda self: ROUTES[self.kind])
    idempotent = property(lambda self: self.kind != "inc")

    def compute(self, value: Any) -> Any:
        kind, arg = self.kind, self.arg
        if self.route != "inventories":
            verb = kind.split("_")[0]
            return {"add": value | arg, "remove": value - arg, "set": arg}[verb]
        inv = dict(value)
        if kind == "inc":
            old = inv.get("VCPU")
            inv["VCPU"] = dataclasses.replace(old, total=old.total + arg) if old else Inventory(arg)
        elif kind == "set_inventory":
            inv[arg[0]] = Inventory(total=arg[1])
        elif kind == "remove_inventory":
            inv.pop(arg, None)
        else:  # set_inventories: the whole field (DISK_GB kept: nobody changes it)
            inv = {k: Inventory(total=v) for k, v in arg} | {"DISK_GB": DISK}
        return freeze_inv(inv.items())

    def touches(self, key: tuple[str, str]) -> bool:
        """Whether ``key`` is the operation's to change (else another writer's survives)."""
        route, name = key
        kind, arg = self.kind, self.arg
        if route != self.route:
            return False
        if kind in ("set_inventories", "set_traits", "set_aggregates"):
            return True  # the whole field
        if kind == "inc":
            return name == "VCPU"
        if kind == "set_inventory":
            return bool(name == arg[0])
        if kind == "remove_inventory":
            return bool(name == arg)
        return name in arg

    def apply(self, s: State) -> State | None:
        """One application on ``s`` (None: Placement refuses it, InventoryInUse)."""
        held, generation = s
        old = held.field(self.route)
        new = self.compute(old)
        if new == old:
            return s  # holds already: the client writes nothing
        if self.route == "inventories" and (IN_USE - {k for k, _ in new}) & {k for k, _ in old}:
            return None
        return held.with_field(self.route, new), generation + 1

    def call(self, providers: ProviderClient, rp: str) -> tuple[Any, int]:
        """Run it; return the field's value and the generation the client reports."""
        kind, arg = self.kind, self.arg
        result: Any
        if kind == "inc":
            result = providers.update_inventories(
                rp, lambda cur: dict(self.compute(freeze_inv(cur.items())))
            )
        elif kind == "set_inventory":
            result = providers.set_inventory(rp, arg[0], arg[1])
        elif kind == "remove_inventory":
            result = providers.remove_inventory(rp, arg)
        elif kind == "set_inventories":
            result = providers.set_inventories(rp, {**dict(arg), "DISK_GB": DISK})
        else:
            result = getattr(providers, kind)(rp, sorted(arg))
        value = getattr(result, self.route)
        value = freeze_inv(value.items()) if self.route == "inventories" else frozenset(value)
        return value, result.generation

    def __str__(self) -> str:
        arg = self.arg
        if isinstance(arg, frozenset):
            arg = short(arg)
        elif self.kind == "set_inventories":
            arg = dict(arg)
        return f"{self.kind}({arg})"


Change = tuple[str, Any]  # the other writer's: one write, one generation
CHANGES: tuple[Change, ...] = (
    *(("trait+", t) for t in TRAITS),
    *(("trait-", t) for t in TRAITS),
    *(("aggregate+", a) for a in AGGREGATES),
    *(("aggregate-", a) for a in AGGREGATES),
    ("inventory", ("VCPU", 16)),
    ("inventory", ("VCPU", 5)),
    ("inventory", ("MEMORY_MB", 4096)),
    ("inventory", (GPU, 4)),
    ("inventory", (GPU, None)),
    ("allocate", None),  # DISK_GB against the provider: the generation moves, no field
    ("rewrite", None),  # traits written back unchanged: the generation moves, no field
)


def change(held: Held, c: Change) -> Held:
    """What the other writer's change ``c`` makes of ``held``."""
    kind, arg = c
    if kind.startswith("trait"):
        traits = held.traits | {arg} if kind == "trait+" else held.traits - {arg}
        return dataclasses.replace(held, traits=frozenset(traits))
    if kind.startswith("aggregate"):
        aggs = held.aggregates | {arg} if kind == "aggregate+" else held.aggregates - {arg}
        return dataclasses.replace(held, aggregates=frozenset(aggs))
    if kind == "inventory":
        inv = dict(held.inventories)
        rclass, total = arg
        if total is None:
            inv.pop(rclass, None)
        else:
            inv[rclass] = Inventory(total=total)
        return dataclasses.replace(held, inventories=freeze_inv(inv.items()))
    return held


def describe(changes: Sequence[Change]) -> str:
    return ", ".join(
        f"{k} {short([a]) if isinstance(a, str) else a or ''}".strip() for k, a in changes
    )


@dataclasses.dataclass(frozen=True)
class Event:
    """A write by another writer during the operation: what it did, saw and left."""

    changes: tuple[Change, ...]
    saw: State
    wrote: State
    at: int  # right after the client's at-th request

    def redo(self, held: Held) -> Held:
        """What the same changes make of ``held``."""
        return functools.reduce(change, self.changes, held)

    def __str__(self) -> str:
        moved = f"{show(self.saw)} -> {show(self.wrote)}"
        return f"after request {self.at}: {describe(self.changes)} ({moved})"


def splits(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Every way to put ``n`` applications into ``k`` gaps (before, between, after events)."""
    if k == 1:
        yield (n,)
        return
    for first in range(n + 1):
        for rest in splits(n - first, k - 1):
            yield (first, *rest)


def finals(op: Op, before: State, events: Sequence[Event], times: int) -> set[State]:
    """Final states of the histories applying ``op`` ``times`` times around ``events``.

    Each application is atomic on the state it lands on (the generation guard); a history is
    consistent when every event saw exactly the state the history had reached (fields and
    generation).
    """
    out = set()
    for split in splits(times, len(events) + 1):
        s: State | None = before
        for gap, n in enumerate(split):
            for _ in range(n):
                s = op.apply(s) if s is not None else None
            if s is None:
                break
            if gap < len(events):
                if s != events[gap].saw:
                    s = None
                    break
                s = events[gap].wrote
        if s is not None:
            out.add(s)
    return out


@dataclasses.dataclass
class Outcome:
    """One client operation as the rule ran it, waiting for the read-back to judge it."""

    index: int
    op: Op
    fault: str
    before: State
    events: list[Event]
    other_drawn: bool  # another writer was to write during the op (it may have had no chance)
    other_acted: bool
    answer: tuple[Any, int] | None  # the field and generation a success reported
    error: Exception | None
    fired: bool  # the fault reached a request
    disturbed: bool  # some request failed (the fault or anything else)
    snapshots: set[State]  # every state Placement held during the op
    requests: int  # how many requests the client sent


def clobbered(o: Outcome, final: State) -> str:
    """Another writer's change the operation had no business undoing, missing in ``final``."""
    for i, event in enumerate(o.events):
        saw, wrote = event.saw[0].keys(), event.wrote[0].keys()
        later: set[tuple[str, str]] = set()
        for after in o.events[i + 1 :]:
            a, b = after.saw[0].keys(), after.wrote[0].keys()
            later |= {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
        for key in sorted(saw.keys() | wrote.keys()):
            if saw.get(key) == wrote.get(key) or o.op.touches(key) or key in later:
                continue
            if final[0].keys().get(key) != wrote.get(key):
                route, name = key
                return f"{route} {short([name])} ({describe(event.changes)})"
    return ""


def judge(o: Outcome, final: State) -> str:
    """Classify ``o`` against what Placement holds; a violation starts with '!'."""
    op, err, events = o.op, o.error, o.events
    never, once, twice = (finals(op, o.before, events, n) for n in range(3))
    again = twice if op.idempotent else set()  # an idempotent op may be written again
    route = op.route
    held = {(s[0].field(route), s[1]) for s in o.snapshots}
    said = "success" if err is None else type(err).__name__

    def wrong(allowed: set[State]) -> str:
        if final in allowed:
            return ""
        if final in twice - once - never:
            return "!applied twice"
        if err is None and final in never:
            return "!lost: success reported, yet the operation's write is not in Placement"
        if err is not None and not isinstance(err, rc.OutcomeUnknown) and final in once:
            return f"!applied on error: {said} reported, yet the operation's write landed"
        lost = clobbered(o, final)
        if lost:
            return f"!clobbered: another writer's {lost} is gone"
        return f"!other violation: {said}, yet Placement holds {show(final)}"

    if err is None:
        assert o.answer is not None
        value, generation = o.answer
        verdict = wrong(once | again)
        if verdict:
            return verdict
        what = f"{show_field(route, value)} at generation {generation}"
        if (value, generation) not in held:
            return f"!false success: reported {what}, which Placement never held"
        if op.idempotent and op.compute(value) != value:
            return f"!false success: reported {what}, which is not what was asked"
        if not op.idempotent and not any(
            s[1] == generation - 1 and op.compute(s[0].field(route)) == value for s in o.snapshots
        ):
            return f"!false success: reported {what}, not one application on a state held"
        now = (final[0].field(route), final[1])
        if now != (value, generation) and not any(e.at >= o.requests for e in events):
            return f"!false success: reported {what}; Placement holds {show(final)}"
        return "recovered"
    if isinstance(err, rc.OutcomeUnknown):
        verdict = wrong(never | once | again)
        if verdict:
            return verdict
        state = err.state
        if state is not None:
            value = getattr(state, route)
            value = freeze_inv(value.items()) if route == "inventories" else frozenset(value)
            if (value, state.generation) not in held:
                return f"!other violation: OutcomeUnknown.state {value} never held"
        if final in never and final not in once:
            return "typed: OutcomeUnknown, not landed"
        return "typed: OutcomeUnknown, landed" if final not in never else "typed: OutcomeUnknown"
    expected = {
        rc.InventoryInUse: any(op.apply(s) is None for s in o.snapshots),
        rc.GenerationConflict: o.fault == "contention",
        rc.PlacementUnavailable: o.disturbed,
        # The client's retry budget refused a retry, spent by earlier operations
        # (a wrong guess from the cache is a retry too); nothing may have landed.
        rc.PlacementOverloaded: not getattr(err, "outcome_unknown", True),
    }.get(type(err), False)
    if not expected:
        return f"!other violation: unexpected {said}: {err}"
    if final in never:
        return f"typed: {said}"
    untouched = functools.reduce(lambda h, e: e.redo(h), events, o.before[0])
    if op.idempotent and final[0] == untouched:
        return f"typed: {said}, after a landing the other writer wholly overwrote"
    return wrong(never)
