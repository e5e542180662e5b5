"""One Jepsen-style machine for every write operation, judged by ``tests/machines/write_model.py``.

The world: three consumer slots allocating on two ample providers; two field providers
(inventories, traits, aggregates); a reshape root and child with one consumer holding the
class the reshape moves; a small tree for ``providers.reconcile``. Each client rule is one
operation with at most one fault (armed for its first write) and at most one action of
another writer right after its k-th request, on one of its subjects: put, add, delete,
delete + re-create (a consumer claimed anew at generation 1, with other or the same content;
a provider re-created under its uuid with other inventory), a field change, or an allocation
that moves a provider's generation alone. The other writer also acts between rules.

Backends give the client (its requests reported back through ``on_request`` before the
client sees each answer), raw HTTP straight to Placement for reads and the other writer
(:class:`Admin`), and the faults. Everything is judged from reads: the machine never asks the
client what Placement holds.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import requests
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

import reportclient as rc
from tests.machines.write_model import (
    COLUMNS,
    EMPTY,
    Allocs,
    Content,
    Fields,
    Held,
    Op,
    Step,
    Trace,
    World,
    column,
    freeze,
    judge,
    plus,
    show,
    table,
    thaw,
)

PROJECT, USER = "project-writes", "user-writes"
TTL = 60.0
SLOTS = 3
FAULTS = ("none", "lost-reset", "lost-timeout", "5xx-before-commit", "5xx-after-commit")
FAULTS += ("slow-write", "failing-reread")
DURING = "other during op"
K = "CUSTOM_VG"  # the class a reshape moves between the root and its child
TRAITS = ("HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "STORAGE_DISK_SSD")
AGGS = tuple(f"8a6e39c4-5a2f-4d3b-9c1e-0000000000b{i}" for i in range(1, 4))
AMPLE = {"VCPU": 10**6, "MEMORY_MB": 10**6}
FIELDED = {"VCPU": 8, "MEMORY_MB": 2048, "DISK_GB": 10**6}  # DISK_GB: the bumper's class
#: Allocations for claims, additions, replacements and the other writer, on providers 0/1.
SHAPES = (
    {0: {"VCPU": 1}}, {0: {"VCPU": 2}}, {1: {"VCPU": 1}}, {1: {"VCPU": 3, "MEMORY_MB": 64}},
    {0: {"VCPU": 1}, 1: {"VCPU": 1}}, {0: {"VCPU": 2, "MEMORY_MB": 128}, 1: {"VCPU": 1}},
)  # fmt: skip
#: The other writer's provider changes: one write each.
CHANGES = (
    *(("traits", "+", t) for t in TRAITS), *(("traits", "-", t) for t in TRAITS),
    *(("aggregates", "+", a) for a in AGGS), *(("aggregates", "-", a) for a in AGGS),
    ("inventories", "VCPU", 16), ("inventories", "VCPU", 5), ("inventories", "MEMORY_MB", 4096),
)  # fmt: skip
#: The other writer's verbs; each applies to consumers and providers (see ``act``).
#: Placement's reshaper policy is role:service (not admin), as nova's service token has.
SERVICE = {"X-Roles": "admin,service"}
VERBS = ("write", "add", "bump", "delete", "recreate", "recreate-same")


def machine_settings(examples: int, steps: int) -> settings:
    """Hypothesis settings every driver uses: reproducible runs, no deadline, no database."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=True,
        database=None,
    )


class Admin(Protocol):
    """Raw HTTP straight to Placement (never through the client or the faults)."""

    def request(
        self, method: str, path: str, json: Any = None, headers: Mapping[str, str] | None = None
    ) -> requests.Response: ...


class Backend(Protocol):
    admin: Admin

    def client(self, **kwargs: Any) -> rc.PlacementClient: ...
    def arm(self, fault: str, on_request: Callable[[str], None]) -> None:
        """Arm ``fault`` for the client's first write; call ``on_request("METHOD path")``
        after each of the client's requests, before the client sees the answer (a slow write
        landing is folded into the request after which it lands)."""

    def disarm(self) -> tuple[bool, bool]: ...  # (the fault fired, some request failed)
    def close(self) -> None: ...


def ok(response: requests.Response, *statuses: int) -> Any:
    assert response.status_code in (statuses or (200, 201, 204)), (
        response.status_code,
        response.text,
    )
    return response.json() if response.content else None


class Placement:
    """Reads and other-writer writes over :class:`Admin`."""

    def __init__(self, admin: Admin) -> None:
        self.admin = admin
        self.bumper: dict[str, tuple[str, int]] = {}

    def consumer(self, c: str) -> tuple[bool, int | None, Allocs]:
        raw = ok(self.admin.request("GET", f"/allocations/{c}"))
        allocs = freeze({rp: e["resources"] for rp, e in raw["allocations"].items()})
        generation = raw.get("consumer_generation")
        return generation is not None, generation, allocs

    def provider(self, rp: str) -> tuple[bool, int | None, Fields | None]:
        response = self.admin.request("GET", f"/resource_providers/{rp}/inventories")
        if response.status_code == 404:
            return False, None, None
        inv = ok(response)
        traits = ok(self.admin.request("GET", f"/resource_providers/{rp}/traits"))
        aggs = ok(self.admin.request("GET", f"/resource_providers/{rp}/aggregates"))
        generation = inv["resource_provider_generation"]
        assert traits["resource_provider_generation"] == generation, "read while writing"
        totals = frozenset((k, v["total"]) for k, v in inv["inventories"].items())
        fields = Fields(totals, frozenset(traits["traits"]), frozenset(aggs["aggregates"]))
        return True, generation, fields

    def put(self, c: str, allocs: Allocs) -> None:
        if allocs == EMPTY:
            ok(self.admin.request("DELETE", f"/allocations/{c}"), 204, 404)
            return
        body = {
            "allocations": {rp: {"resources": res} for rp, res in thaw(allocs).items()},
            "consumer_generation": self.consumer(c)[1],
            "project_id": PROJECT,
            "user_id": USER,
            "consumer_type": "INSTANCE",
        }
        ok(self.admin.request("PUT", f"/allocations/{c}", body), 204)

    def set_field(self, rp: str, name: str, value: Any) -> None:
        generation = self.provider(rp)[1]
        if name == "inventories":
            invs = {k: {"total": t, "max_unit": t} for k, t in dict(value).items()}
            body: dict[str, Any] = {"inventories": invs}
        else:
            body = {name: sorted(value)}
        body["resource_provider_generation"] = generation
        ok(self.admin.request("PUT", f"/resource_providers/{rp}/{name}", body), 200)

    def bump(self, rp: str) -> None:
        """An allocation against ``rp``: its generation moves, none of its fields."""
        consumer, n = self.bumper.get(rp, (str(uuid.uuid4()), 0))
        self.bumper[rp] = consumer, n % 2 + 1
        self.put(consumer, freeze({rp: {"DISK_GB": n % 2 + 1}}))

    def create(self, rp: str, name: str, parent: str | None, inventory: Mapping[str, int]) -> None:
        body: dict[str, Any] = {"uuid": rp, "name": name}
        if parent:
            body["parent_provider_uuid"] = parent
        ok(self.admin.request("POST", "/resource_providers", body))
        self.set_field(rp, "inventories", inventory.items())

    def delete_provider(self, rp: str) -> None:
        if rp in self.bumper:
            self.put(self.bumper[rp][0], EMPTY)
        ok(self.admin.request("DELETE", f"/resource_providers/{rp}"), 204)


@dataclasses.dataclass
class Table:
    """Counts per (operation, fault) and per verdict column; notes on accepted oddities."""

    title: str
    rows: dict[tuple[str, str], Counter[str]] = dataclasses.field(
        default_factory=lambda: defaultdict(Counter)
    )
    errors: Counter[str] = dataclasses.field(default_factory=Counter)
    notes: Counter[str] = dataclasses.field(default_factory=Counter)
    failures: list[str] = dataclasses.field(default_factory=list)
    residuals: list[str] = dataclasses.field(default_factory=list)

    def report(self) -> str:
        """The table, then the first history of each violation kind (and of residual windows)."""
        out, shown = [self.render()], set()
        for message in [*self.failures, *self.residuals]:
            kind = message.split(":")[0] + message.split("\n")[1].split(" with ")[0].split()[0]
            if kind not in shown:
                shown.add(kind)
                out.append(message)
        return "\n".join(out)

    def add(self, kind: str, row: str, fired: bool, verdict: str) -> None:
        counts = self.rows[(kind, row)]
        counts["injected"] += 1
        counts["fired"] += fired
        counts[column(verdict)] += 1

    def render(self) -> str:
        errors = ", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())) or "none"
        notes = "; ".join(f"{k}: {v}" for k, v in sorted(self.notes.items())) or "none"
        body = table(self.title, self.rows)
        return f"{body}\ntyped errors raised: {errors}\nnotes: {notes}"

    def violations(self) -> dict[str, int]:
        names = COLUMNS[COLUMNS.index("applied twice") : COLUMNS.index("residual")]
        return {v: sum(r[v] for r in self.rows.values()) for v in names}


# -- strategies -------------------------------------------------------------------------------
slots = st.integers(0, SLOTS - 1)
shapes = st.integers(0, len(SHAPES) - 1)
faults = st.sampled_from(FAULTS)
actions = st.tuples(st.sampled_from(VERBS), st.integers(0, 64))
others = st.none() | st.tuples(st.integers(1, 4), st.integers(0, 2), actions)


class WriteMachine(RuleBasedStateMachine):
    """The client's writes, another writer and faults, judged from Placement's reads."""

    def __init__(self, backend: Backend, ttl: float, stats: Table, variant: str) -> None:
        super().__init__()
        self.backend, self.ttl, self.stats, self.variant = backend, ttl, stats, variant
        self.p = Placement(backend.admin)
        self.now = 1000.0
        self.recreated = False  # a re-creation since: the client's clock must pass cache_ttl
        retry = rc.default_retry(sleep=lambda s: None, rand=lambda: 0.5)
        self.client = backend.client(retry=retry, cache_ttl=ttl, clock=lambda: self.now)
        new = lambda: str(uuid.uuid4())  # noqa: E731
        self.r = (new(), new())
        self.f = (new(), new())
        self.root, self.child, self.cr = new(), new(), new()
        self.tree, self.leaf = new(), new()
        self.names = {
            rp: f"w-{rp}" for rp in (*self.f, self.root, self.child, self.tree, self.leaf)
        }
        for rp in self.r:
            self.p.create(rp, f"w-{rp}", None, AMPLE)
        for rp in self.f:
            self.p.create(rp, self.names[rp], None, FIELDED)
        ok(self.p.admin.request("PUT", f"/resource_classes/{K}"), 201, 204)
        self.p.create(self.root, self.names[self.root], None, {**FIELDED, K: 8})
        self.p.create(self.child, self.names[self.child], self.root, {"DISK_GB": 10**6})
        self.p.put(self.cr, freeze({self.root: {"VCPU": 1, K: 1}}))
        self.p.create(self.tree, self.names[self.tree], None, FIELDED)
        self.p.create(self.leaf, self.names[self.leaf], self.tree, {"DISK_GB": 10**6})
        self.slots = [new() for _ in range(SLOTS)]
        self.inc: dict[str, int] = defaultdict(int)
        self.expected: World = {}
        self.known: dict[str, Allocs | None] = defaultdict(lambda: EMPTY)
        self.trace = Trace({})  # the running operation's (a release's premise is its first read)
        for key in self.groups(self.all_keys()):
            self.expected[key] = self.read(key)

    def teardown(self) -> None:
        self.backend.close()

    # -- the world ------------------------------------------------------------------------
    def all_keys(self) -> list[str]:
        providers = (*self.f, self.root, self.child, self.tree, self.leaf)
        return [f"c:{c}" for c in (*self.slots, self.cr)] + [f"p:{rp}" for rp in providers]

    def groups(self, keys: list[str]) -> list[str]:
        """``keys`` and every subject a write to one of them may move with it."""
        reshape = [f"p:{self.root}", f"p:{self.child}", f"c:{self.cr}"]
        tree = [f"p:{self.tree}", f"p:{self.leaf}"]
        out: list[str] = []
        for key in keys:
            for k in reshape if key in reshape else tree if key in tree else [key]:
                if k not in out:
                    out.append(k)
        return out

    def read(self, key: str) -> Held:
        kind, uid = key.split(":", 1)
        exists, generation, content = (self.p.consumer if kind == "c" else self.p.provider)(uid)
        last = self.expected.get(key)
        if (
            last is not None
            and last.exists
            and (not exists or (generation or 0) < (last.generation or 0))
        ):
            self.inc[key] += 1  # deleted (and perhaps re-created) since the last read
        return Held(exists, generation, content, self.inc[key])

    def snapshot(self, keys: list[str]) -> World:
        world = {k: self.read(k) for k in keys}
        self.expected.update(world)
        return world

    def shape(self, index: int) -> Allocs:
        return freeze({self.r[i]: res for i, res in SHAPES[index % len(SHAPES)].items()})

    def reshape_shape(self, index: int) -> Allocs:
        """Allocations for the reshape's consumer: VCPU on the root, the class where it is."""
        root = self.p.provider(self.root)[2]
        where = self.root if root is not None and K in root.totals() else self.child
        return freeze({self.root: {"VCPU": 1 + index % 2}, where: {K: 1 + index // 2 % 2}})

    # -- the other writer ---------------------------------------------------------------------
    def act(self, key: str, verb: str, arg: int, trace: Trace | None, keys: list[str]) -> None:
        """One action of the other writer on ``key``; each write is its own step."""

        def step(label: str, write: Callable[[], None]) -> None:
            before = trace.now if trace is not None else self.snapshot(keys)
            write()
            after = self.snapshot(keys)
            if trace is not None:
                trace.steps.append(Step("other", label, before, after))

        kind, uid = key.split(":", 1)
        held = self.expected[key]
        if kind == "c":
            make = self.reshape_shape if uid == self.cr else self.shape
            if verb in ("write", "bump"):
                step(f"put {uid[:8]}", lambda: self.p.put(uid, make(arg)))
            elif verb == "add" and held.exists and uid != self.cr:
                assert isinstance(held.content, tuple)
                step(f"add {uid[:8]}", lambda: self.p.put(uid, plus(held.content, make(arg))))  # type: ignore[arg-type]
            elif verb == "delete" and held.exists:
                step(f"delete {uid[:8]}", lambda: self.p.put(uid, EMPTY))
            elif verb.startswith("recreate"):
                same = verb == "recreate-same" and held.exists
                content = held.content if same else make(arg)
                if held.exists:
                    step(f"delete {uid[:8]}", lambda: self.p.put(uid, EMPTY))
                self.recreated = True
                step(f"claim anew {uid[:8]}", lambda: self.p.put(uid, content))  # type: ignore[arg-type]
            return
        if not held.exists:
            if verb.startswith("recreate"):
                self.recreate_provider(uid, arg, step)
            return
        if verb == "bump":
            step(f"allocate on {uid[:8]}", lambda: self.p.bump(uid))
        elif verb in ("write", "add"):
            name, how, what = CHANGES[arg % len(CHANGES)]
            if name == "inventories" and uid in (self.root, self.child):
                name, how, what = CHANGES[arg % 12]  # allocations there: fields only
            fields = held.content
            assert isinstance(fields, Fields)
            if name == "inventories":
                value: Any = {**fields.totals(), str(how): what}.items()
            elif how == "+":
                value = fields.get(name) | {what}
            else:
                value = fields.get(name) - {what}
            label = f"{name} {how}{what} on {uid[:8]}"
            step(label, lambda: self.p.set_field(uid, name, value))
        elif uid in (*self.f, self.leaf):  # only these have no children or allocations
            step(f"delete provider {uid[:8]}", lambda: self.p.delete_provider(uid))
            if verb.startswith("recreate"):
                self.recreate_provider(uid, arg, step)

    def recreate_provider(self, rp: str, arg: int, step: Callable[..., None]) -> None:
        if rp not in (*self.f, self.leaf):
            return
        parent = self.tree if rp == self.leaf else None
        inventory = {"VCPU": 3 + arg % 4, "DISK_GB": 10**6}  # other inventory than ever held
        self.recreated = True
        label = f"re-create provider {rp[:8]}"
        step(label, lambda: self.p.create(rp, self.names[rp], parent, inventory))

    # -- running one operation ----------------------------------------------------------------
    def run(self, op: Op, fault: str, other: Any) -> None:
        if self.recreated and self.ttl:
            self.now += self.ttl + 1  # a re-creation inside cache_ttl is the documented window
        self.recreated = False
        keys = self.groups(list(op.subjects))
        remembered = {k: self.expected.get(k) for k in keys}
        start = self.snapshot(keys)
        for k, was in remembered.items():
            assert was is None or was == start[k], (
                f"{k} changed with nobody writing: {was} -> {start[k]}"
            )
        trace = self.trace = Trace(start)
        sent = [0]
        acted = [False]

        def on_request(label: str) -> None:
            before = trace.now
            trace.steps.append(Step("client", label, before, self.snapshot(keys)))
            sent[0] += 1
            if other is not None and sent[0] == other[0]:
                acted[0] = True
                verb, arg = other[2]
                self.act(op.subjects[other[1] % len(op.subjects)], verb, arg, trace, keys)

        self.backend.arm(fault, on_request)
        error: rc.PlacementError | None = None
        result: Any = None
        try:
            result = op.call(self.client)
        except rc.PlacementError as exc:
            error = exc
        fired, disturbed = self.backend.disarm()
        after = self.snapshot(keys)  # a write landing after the operation ended
        if after != trace.now:
            trace.steps.append(Step("client", "after the operation", trace.now, after))
        verdict = judge(op, trace, error, disturbed)
        self.stats.add(op.kind, fault, fault == "none" or fired, verdict)
        if other is not None:
            self.stats.add(op.kind, DURING, acted[0], verdict)
        if error is not None:
            self.stats.errors[type(error).__name__] += 1
        if not verdict.startswith(("recovered", "typed", "unknown", "!")):
            self.stats.notes[f"{op.kind}: {verdict.split(' (')[0][:30]}"] += 1
        self.learn(op, result, error, trace)
        said = repr(error) if error is not None else "success"
        message = (
            f"{verdict[1:]}\n  {op.describe or op.kind} with fault {fault!r}, other writer "
            f"{other}; client said {said}\n{show(trace)}"
        )
        # Collected, not raised: one run shows every kind of violation in its table, each
        # with the one operation's trace (a history is one operation, so it is already minimal).
        if verdict.startswith("!"):
            self.stats.failures.append(message)
        elif verdict.startswith("residual"):
            self.stats.residuals.append(message)

    def learn(self, op: Op, result: Any, error: Exception | None, trace: Trace) -> None:
        """What the client knows of each consumer now (a claim's premise)."""
        consumers = [k[2:] for k in op.subjects if k.startswith("c:")]
        for c in consumers:
            self.known[c] = None
        if isinstance(result, rc.ConsumerAllocations):
            self.known[result.consumer_uuid] = freeze(result.allocations)
        elif error is None and op.kind in ("release", "force_release"):
            self.known[consumers[0]] = EMPTY
        elif error is None:
            for c in consumers:
                held = trace.last_answered()[f"c:{c}"]
                self.known[c] = held.content if isinstance(held.content, tuple) else None
        elif isinstance(error, rc.ConsumerChanged) and op.kind == "release":
            self.known[consumers[0]] = freeze(error.state.allocations)
        elif isinstance(error, rc.ConsumerChanged) and op.kind in ("claim", "update"):
            known = error.known
            self.known[consumers[0]] = freeze(known.allocations) if known is not None else EMPTY
        elif isinstance(error, rc.ConsumerGone) and len(consumers) == 1:
            self.known[consumers[0]] = EMPTY

    # -- operation builders -------------------------------------------------------------------
    def premise(self, key: str) -> Content:
        """What a release saw first: its first read, if one came before its first write.

        A first write from the trusted cache carries the cached generation and lands only
        there, where Placement holds what the cache holds (a re-creation inside cache_ttl is
        kept out of the generator): None, nothing to compare.
        """
        uuid_ = key.split(":", 1)[1]
        for step in self.trace.client_steps():
            if not step.label.startswith("GET"):
                return None
            # The GET of this consumer (a batch reads its consumers one by one, and
            # another writer may act between two of those reads).
            if uuid_ in step.label and key in step.before:
                return step.before[key].content
        return None

    def claim_op(self, c: str, want: Allocs) -> Op:
        known = self.known[c]

        def apply(before: Mapping[str, Content]) -> Mapping[str, Content] | str:
            was = before[f"c:{c}"]
            if known is not None and was not in (EMPTY, want, known):
                return f"!clobbered: the claim replaced {was}, which the client never saw"
            return {f"c:{c}": want}

        def call(client: rc.PlacementClient) -> Any:
            return client.claim(c, thaw(want), project_id=PROJECT, user_id=USER)

        return Op("claim", (f"c:{c}",), call, apply, True, lambda s: s[f"c:{c}"] == want,
                  frozenset({f"c:{c}"}), describe=f"claim {c[:8]} {thaw(want)}")  # fmt: skip

    @initialize(a=shapes, b=shapes)
    def other_writer_creates_two(self, a: int, b: int) -> None:
        for slot, shape in ((0, a), (1, b)):
            key = f"c:{self.slots[slot]}"
            self.act(key, "write", shape, None, [key])

    @rule(slot=slots, allocs=shapes, fault=faults, other=others)
    def claim(self, slot: int, allocs: int, fault: str, other: Any) -> None:
        self.run(self.claim_op(self.slots[slot], self.shape(allocs)), fault, other)

    @rule(slot=slots, verb=st.sampled_from(("add", "replace", "remove")), allocs=shapes,
          fault=faults, other=others)  # fmt: skip
    def update(self, slot: int, verb: str, allocs: int, fault: str, other: Any) -> None:
        c, arg = self.slots[slot], self.shape(allocs)
        key = f"c:{c}"
        f, mutate = self.mutation(verb, arg, allocs)

        def apply(before: Mapping[str, Content]) -> Mapping[str, Content] | str:
            if before[key] == EMPTY:
                return f"!resurrected: update wrote the missing {key}"
            return {key: f(before[key])}  # type: ignore[arg-type]

        def call(client: rc.PlacementClient) -> Any:
            return client.update_allocations(c, mutate, project_id=PROJECT, user_id=USER)

        wants = None if verb == "add" else (lambda s: f(s[key]) == s[key])  # type: ignore[arg-type]
        op = Op("update " + verb, (key,), call, apply, verb != "add", wants,
                describe=f"update {c[:8]} {verb} {arg}")  # fmt: skip
        self.run(op, fault, other)

    def mutation(
        self, verb: str, arg: Allocs, index: int
    ) -> tuple[Callable[[Allocs], Allocs], Any]:
        if verb == "add":
            return (lambda s: plus(s, arg)), rc.add_allocations(thaw(arg))
        if verb == "replace":
            return (lambda s: arg), rc.replace_allocations(thaw(arg))
        rp = self.r[index % 2]
        return (lambda s: tuple(e for e in s if e[0] != rp)), rc.remove_providers([rp])

    @rule(slot=slots, fault=faults, other=others, force=st.booleans())
    def release(self, slot: int, fault: str, other: Any, force: bool) -> None:
        c = self.slots[slot]
        key = f"c:{c}"

        def apply(before: Mapping[str, Content]) -> Mapping[str, Content] | str:
            if not force:
                premise = self.premise(key)
                if premise is not None and before[key] != premise:
                    return f"!clobbered: the release emptied {before[key]}; it saw {premise}"
            return {key: EMPTY}

        def call(client: rc.PlacementClient) -> Any:
            return client.force_release(c) if force else client.release(c)

        kind = "force_release" if force else "release"
        op = Op(kind, (key,), call, apply, True, lambda s: s[key] == EMPTY)
        self.run(op, fault, other)

    @rule(slot=slots, to=slots, expect=st.booleans(), fault=faults, other=others)
    def move(self, slot: int, to: int, expect: bool, fault: str, other: Any) -> None:
        source = self.slots[slot]
        held_to = self.expected.get(f"c:{self.slots[to]}")
        expected: Allocs = EMPTY
        if expect and to != slot and held_to is not None and held_to.exists:
            target = self.slots[to]
            expected = held_to.content  # type: ignore[assignment]
        else:
            target = str(uuid.uuid4())  # a migration record
        s, t = f"c:{source}", f"c:{target}"
        self.expected.setdefault(t, Held(False, None, EMPTY))

        def apply(before: Mapping[str, Content]) -> Mapping[str, Content] | str:
            if before[s] == EMPTY:
                return f"!resurrected: the move wrote from the missing source {s}"
            if before[t] != expected and not (expected == EMPTY and before[t] == before[s]):
                # (a target already holding just what the move writes is no clobber: the
                # claim's rule, which the move's target keeps)
                what = "resurrected" if before[t] == EMPTY else "clobbered"
                return f"!{what}: the move wrote {t} holding {before[t]}, announced {expected}"
            return {s: EMPTY, t: plus(expected, before[s])}  # type: ignore[arg-type]

        def call(client: rc.PlacementClient) -> Any:
            return client.move_allocations(source, target, expect_target=thaw(expected) or None)

        creates = frozenset({t}) if expected == EMPTY else frozenset()
        op = Op("move+expect" if expected else "move", (s, t), call, apply, False, None, creates)
        try:
            self.run(op, fault, other)
        finally:
            if self.expected[t].exists or not self.expected[s].exists:
                self.slots[self.slots.index(source)] = target
                if expected:
                    self.slots[self.slots.index(target)] = source  # keep three slots
                self.known.setdefault(target, None)

    @rule(first=slots, verb=st.sampled_from(("add", "replace")), allocs=shapes, more=shapes,
          fault=faults, other=others)  # fmt: skip
    def write_many(self, first: int, verb: str, allocs: int, more: int, fault: str,
                   other: Any) -> None:  # fmt: skip
        a, b, c = (self.slots[(first + i) % SLOTS] for i in range(SLOTS))
        want, arg = self.shape(allocs), self.shape(more)
        f, mutate = self.mutation(verb, arg, more)
        ka, kb, kc = f"c:{a}", f"c:{b}", f"c:{c}"
        claim = self.claim_op(a, want)

        def apply(before: Mapping[str, Content]) -> Mapping[str, Content] | str:
            claimed = claim.apply(before)
            if isinstance(claimed, str):
                return claimed
            if before[kb] == EMPTY:
                return f"!resurrected: write_many's update wrote the missing {kb}"
            premise = self.premise(kc)
            if premise is not None and before[kc] != premise:
                return f"!clobbered: write_many's release emptied {before[kc]}; it saw {premise}"
            return {ka: want, kb: f(before[kb]), kc: EMPTY}  # type: ignore[arg-type]

        def call(client: rc.PlacementClient) -> Any:
            writes = {a: thaw(want), b: mutate, c: {}}
            return client.write_many(writes, project_id=PROJECT, user_id=USER)

        def wants(s: Mapping[str, Content]) -> bool:
            return s[ka] == want and s[kb] == arg and s[kc] == EMPTY

        op = Op("write_many " + verb, (ka, kb, kc), call, apply, verb == "replace",
                wants if verb == "replace" else None, frozenset({ka}))  # fmt: skip
        self.run(op, fault, other)

    @rule(p=st.integers(0, 1), verb=st.sampled_from(("set_inventory", "add_vcpu", "traits",
          "aggregates")), how=st.sampled_from(("set", "add", "remove")), arg=st.integers(0, 8),
          fault=faults, other=others)  # fmt: skip
    def field(self, p: int, verb: str, how: str, arg: int, fault: str, other: Any) -> None:
        rp = self.f[p]
        key = f"p:{rp}"
        name = {"traits": "traits", "aggregates": "aggregates"}.get(verb, "inventories")
        pool = TRAITS if verb == "traits" else AGGS
        names = frozenset(pool[i] for i in range(3) if arg >> i & 1)
        total = (4, 8, 1024)[arg % 3]

        def compute(fields: Fields) -> Any:
            value = fields.get(name)
            if verb == "set_inventory":
                return frozenset({**fields.totals(), "VCPU": total}.items())
            if verb == "add_vcpu":
                t = fields.totals()
                return frozenset({**t, "VCPU": t.get("VCPU", 0) + 1}.items())
            return {"set": names, "add": value | names, "remove": value - names}[how]

        def apply(before: Mapping[str, Content]) -> Mapping[str, Content] | str:
            fields = before[key]
            assert isinstance(fields, Fields)
            return {key: fields.but(name, compute(fields))}

        def call(client: rc.PlacementClient) -> Any:
            providers = client.providers
            if verb == "set_inventory":
                return providers.set_inventory(
                    rp, "VCPU", rc.Inventory(total=total, max_unit=total)
                )
            if verb == "add_vcpu":

                def add(current: dict[str, rc.Inventory]) -> dict[str, rc.Inventory]:
                    vcpu = current.get("VCPU")
                    plus1 = (vcpu.total if vcpu else 0) + 1
                    current["VCPU"] = rc.Inventory(total=plus1, max_unit=plus1)
                    return current

                return providers.update_inventories(rp, add)
            return getattr(providers, f"{how}_{verb}")(rp, sorted(names))

        def wants(s: Mapping[str, Content]) -> bool:
            fields = s[key]
            return isinstance(fields, Fields) and fields.get(name) == compute(fields)

        kind = verb if verb in ("set_inventory", "add_vcpu") else f"{how}_{verb}"
        idem = verb != "add_vcpu"
        self.run(Op(kind, (key,), call, apply, idem, wants if idem else None), fault, other)

    @rule(vcpu=st.sampled_from((8, 16)), trait=st.integers(0, 2), agg=st.integers(0, 2),
          fault=faults, other=others)  # fmt: skip
    def reconcile(self, vcpu: int, trait: int, agg: int, fault: str, other: Any) -> None:
        specs = {
            self.tree: ({"VCPU": vcpu}, {TRAITS[trait]}, {AGGS[agg]}),
            self.leaf: ({"MEMORY_MB": 512 * (1 + trait)}, {TRAITS[(trait + 1) % 3]}, set()),
        }
        keys = tuple(f"p:{rp}" for rp in specs)

        def merged(rp: str, fields: Fields) -> Fields:
            inv, traits, aggs = specs[rp]
            return Fields(
                frozenset({**fields.totals(), **inv}.items()),
                fields.traits | frozenset(traits),
                fields.aggregates | frozenset(aggs),
            )

        def apply(before: Mapping[str, Content]) -> Mapping[str, Content] | str:
            out = {}
            for rp in specs:
                fields = before[f"p:{rp}"]
                out[f"p:{rp}"] = merged(rp, fields) if isinstance(fields, Fields) else None
            return out

        def call(client: rc.PlacementClient) -> Any:
            described = [
                rc.ProviderSpec(
                    rp,
                    self.names[rp],
                    self.tree if rp == self.leaf else None,
                    {k: rc.Inventory(total=v, max_unit=v) for k, v in inv.items()},
                    traits,
                    aggs,
                )
                for rp, (inv, traits, aggs) in specs.items()
            ]
            return client.providers.reconcile(described, merge=True)

        def wants(s: Mapping[str, Content]) -> bool:
            return all(
                isinstance(s[f"p:{rp}"], Fields) and merged(rp, s[f"p:{rp}"]) == s[f"p:{rp}"]  # type: ignore[arg-type]
                for rp in specs
            )

        op = Op("reconcile", keys, call, apply, True, wants, frozenset(keys), per_field=True)
        self.run(op, fault, other)

    @rule(fault=faults, other=others)
    def reshape(self, fault: str, other: Any) -> None:
        root, child, cr = self.root, self.child, self.cr
        kr, kc, kk = f"p:{root}", f"p:{child}", f"c:{cr}"

        def moved(before: Mapping[str, Content]) -> dict[str, Content]:
            r, c = before[kr], before[kc]
            assert isinstance(r, Fields) and isinstance(c, Fields)
            src, dst = (kr, kc) if K in r.totals() else (kc, kr)
            total = before[src].totals()[K]  # type: ignore[union-attr]
            out: dict[str, Content] = {
                src: before[src].but(
                    "inventories", {k: v for k, v in before[src].totals().items() if k != K}.items()
                ),  # type: ignore[union-attr]
                dst: before[dst].but("inventories", {**before[dst].totals(), K: total}.items()),  # type: ignore[union-attr]
            }
            allocs = thaw(before[kk])  # type: ignore[arg-type]
            uid = {kr: root, kc: child}
            if K in allocs.get(uid[src], {}):
                amount = allocs[uid[src]].pop(K)
                allocs.setdefault(uid[dst], {})[K] = amount
                out[kk] = freeze(allocs)
            return out

        def compute(state: rc.ReshapeState) -> rc.Reshape:
            invs = {rp: dict(state.inventories[rp].inventories) for rp in (root, child)}
            src, dst = (root, child) if K in invs[root] else (child, root)
            invs[dst][K] = invs[src].pop(K)
            allocs = {rp: dict(res) for rp, res in state.allocations[cr].allocations.items()}
            if K not in allocs.get(src, {}):
                return rc.Reshape(invs, {})
            allocs.setdefault(dst, {})[K] = allocs[src].pop(K)
            return rc.Reshape(invs, {cr: {rp: res for rp, res in allocs.items() if res}})

        start = self.expected[kr].content
        dst_key = kc if isinstance(start, Fields) and K in start.totals() else kr

        def wants(s: Mapping[str, Content]) -> bool:
            dst = s[dst_key]
            uid = {kr: root, kc: child}[dst_key]
            allocs = thaw(s[kk])  # type: ignore[arg-type]
            holds_k = any(K in res for res in allocs.values())
            on_dst = K in allocs.get(uid, {})
            return isinstance(dst, Fields) and K in dst.totals() and (not holds_k or on_dst)

        def call(client: rc.PlacementClient) -> Any:
            return client.providers.reshape([root, child], [cr], compute)

        op = Op("reshape", (kr, kc, kk), call, moved, True, wants)
        self.run(op, fault, other)

    @rule(key=st.integers(0, 64), verb=st.sampled_from(VERBS), arg=st.integers(0, 64))
    def other_writer(self, key: int, verb: str, arg: int) -> None:
        keys = self.all_keys()
        target = keys[key % len(keys)]
        self.act(target, verb, arg, None, self.groups([target]))

    @precondition(lambda self: self.ttl > 0)
    @rule()
    def cache_ttl_passes(self) -> None:
        self.now += self.ttl + 1
