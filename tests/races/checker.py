"""The race suite's checker: every operation a client reported, compared with what Placement holds.

Modelled on Jepsen's checkers: workers only *log* what each operation reported (its kind,
consumer, arguments, and its outcome: success with the state it returned, or the class of the
typed error it raised). After the run the checker reads the final state back from Placement
itself (``GET /allocations/{c}`` for every consumer touched, ``GET /resource_providers/{rp}/
usages`` and ``/allocations`` for every provider) and judges the log against it:

* a claim of a distinct consumer that succeeded holds exactly its allocations; one that failed
  with a definite error holds nothing; an ``OutcomeUnknown`` one holds either;
* commutative adds on one consumer: the final amount lies in ``[base + successes, base +
  successes + unknowns]``; above is *applied twice*, below is *lost*;
* a consumer several kinds of operation raced on holds the result of an operation no other
  successful operation followed in real time (a register);
* usages equal the sum of allocations per provider, and no consumer holds allocations on the
  test's providers that no client created.

Worker processes are spawned, so an :class:`Op` is a plain picklable record and its times come
from ``time.monotonic()``, which Linux keeps system-wide (CLOCK_MONOTONIC): comparable across
processes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reportclient.testing import PlacementAdmin

#: provider uuid -> resource class -> amount
Allocs = dict[str, dict[str, int]]

OK = "ok"
UNKNOWN = "OutcomeUnknown"
#: Typed errors after which nothing the operation sent has landed or can still land (README,
#: "Errors"): the checker holds the client to that. Any other failure (``OutcomeUnknown``, a
#: raw client's 5xx) is uncertain: its write may or may not have landed.
DEFINITE = frozenset(
    {
        "CapacityExceeded",
        "ConsumerChanged",
        "ConsumerGone",
        "GenerationConflict",
        "PlacementUnavailable",
        # The retry budget refused the next attempt of a write that cannot have landed
        # (issue 37); a long chaos run spends a client's budget on its faults.
        "PlacementOverloaded",
    }
)


@dataclass(frozen=True)
class Op:
    """One operation as its client reported it.

    ``outcome`` is ``"ok"``, the typed error's class name, or ``"untyped:<class>"`` for any
    other exception (always a violation). ``result`` is the state a success returned (``{}``
    for a consumer left empty), ``sent`` the write an ``OutcomeUnknown`` carried.
    """

    kind: str
    consumer: str
    args: Allocs
    outcome: str
    start: float
    end: float
    worker: str
    request_id: str = ""
    result: Allocs | None = None
    generation: int | None = None
    sent: Allocs | None = None
    #: The state an add's mutation last computed from (the one its write replaced).
    read: Allocs | None = None
    detail: str = ""


@dataclass
class Verdict:
    """What the checker found; the tests assert every count but the first two is zero."""

    successes: int = 0
    unknowns: int = 0
    #: (category, consumer, evidence) of every broken invariant.
    failures: list[tuple[str, str, str]] = field(default_factory=list)

    def fail(self, category: str, consumer: str, message: str) -> None:
        """Note one broken invariant about ``consumer`` ("" when it is about no one consumer)."""
        self.failures.append((category, consumer, message))

    def count(self, category: str, consumers: set[str] | None = None) -> int:
        """Failures of ``category`` (about ``consumers`` only, or about no one consumer)."""
        return sum(
            cat == category and (consumers is None or not who or who in consumers)
            for cat, who, _ in self.failures
        )

    @property
    def applied_twice(self) -> int:
        return self.count("applied twice")

    @property
    def lost(self) -> int:
        return self.count("lost")

    @property
    def violations(self) -> list[str]:
        return [f"{cat}: {who} {message}" for cat, who, message in self.failures]


def uncertain(op: Op) -> bool:
    """Whether ``op``'s write may or may not have landed."""
    return op.outcome != OK and op.outcome not in DEFINITE


def maybe_written(op: Op) -> Allocs:
    """What an uncertain operation would have left the consumer holding, had it landed."""
    return op.sent if op.sent is not None else op.args


def total(allocs: Mapping[str, Mapping[str, int]] | None, rc: str = "VCPU") -> int:
    """Sum of one resource class over all providers."""
    return sum(res.get(rc, 0) for res in (allocs or {}).values())


def held(raw: Mapping[str, Any]) -> Allocs:
    """``provider -> class -> amount`` from a raw ``GET /allocations/{c}`` body."""
    return {rp: dict(entry["resources"]) for rp, entry in raw["allocations"].items()}


class Checker:
    """The log of one workload's operations, and the invariants read back from Placement."""

    def __init__(self, admin: PlacementAdmin, providers: Sequence[str]) -> None:
        self.admin = admin
        self.providers = list(providers)
        self.ops: list[Op] = []
        #: Consumers a client created outside the log (a workload's set-up).
        self.created: set[str] = set()
        self.final: dict[str, Allocs] = {}
        self.generations: dict[str, int | None] = {}
        self.verdict = Verdict()
        #: Answers the clients received, by request method, and their log records, by level
        #: (each contended retry logs a WARNING).
        self.requests: Counter[str] = Counter()
        self.logged: Counter[str] = Counter()

    def record(self, ops: Iterable[Op]) -> None:
        """Add the operations one worker reported."""
        self.ops.extend(ops)

    def outcomes(self, kind: str | None = None) -> Counter[str]:
        """How many operations (of ``kind``) ended in each outcome."""
        return Counter(op.outcome for op in self.ops if kind is None or op.kind == kind)

    def outcome_table(self) -> str:
        """Operations by kind and outcome, as a table."""
        counts = Counter((op.kind, op.outcome) for op in self.ops)
        rows = [[kind, outcome, n] for (kind, outcome), n in sorted(counts.items())]
        sent = ", ".join(f"{method} {n}" for method, n in sorted(self.requests.items()))
        logged = ", ".join(f"{level} {n}" for level, n in sorted(self.logged.items()))
        footer = f"answers received: {sent or '-'}; client log records: {logged or '-'}"
        return f"{table(['operation', 'outcome', 'count'], rows)}\n{footer}"

    # -- read back -------------------------------------------------------------------------------

    def read_back(self) -> None:
        """Read every consumer touched and every provider, then check the global invariants."""
        for consumer in sorted({op.consumer for op in self.ops} | self.created):
            raw = self.admin.get_allocations(consumer)
            self.final[consumer] = held(raw)
            self.generations[consumer] = raw.get("consumer_generation")
        for op in self.ops:
            if op.outcome.startswith("untyped:"):
                self.verdict.fail("untyped error", op.consumer, f"{op.kind}: {op.detail}")
        known = {op.consumer for op in self.ops} | self.created
        for rp in self.providers:
            usage = self.admin.usages(rp).get("VCPU", 0)
            on_rp = self.admin.provider_allocations(rp)
            by_rp = sum(entry["resources"].get("VCPU", 0) for entry in on_rp.values())
            by_consumer = sum(allocs.get(rp, {}).get("VCPU", 0) for allocs in self.final.values())
            if not usage == by_rp == by_consumer:
                self.verdict.fail(
                    "usages",
                    "",
                    f"provider {rp}: usage {usage}, its allocations sum to {by_rp}, "
                    f"the consumers read back hold {by_consumer}",
                )
            for foreign in sorted(set(on_rp) - known):
                self.verdict.fail("foreign consumer", foreign, f"on {rp}: {on_rp[foreign]}")

    def usage(self, rp: str) -> int:
        """VCPU the read-back consumers hold on ``rp``."""
        return sum(allocs.get(rp, {}).get("VCPU", 0) for allocs in self.final.values())

    # -- models ----------------------------------------------------------------------------------

    def check_claims(self, kind: str = "claim") -> None:
        """Each consumer was claimed once: success holds exactly it, definite failure nothing."""
        for op in self.ops:
            if op.kind != kind:
                continue
            final = self.final[op.consumer]
            if op.outcome == OK:
                self.verdict.successes += 1
                if final != op.args:
                    self.verdict.fail("lost", op.consumer, f"claimed, holds {final}")
            elif uncertain(op):
                self.verdict.unknowns += 1
                if final not in ({}, op.args):
                    message = f"unknown claim, holds {final}"
                    self.verdict.fail("unexplained", op.consumer, message)
            elif final:
                self.verdict.fail("phantom", op.consumer, f"claim {op.outcome}, holds {final}")

    def check_adds(self, consumer: str, base: Allocs, base_generation: int) -> None:
        """Commutative +1 adds on one consumer that is never deleted.

        Every write adds one VCPU and one generation, so besides the amount the generations
        tell the same story: each success reports a distinct generation whose amount is
        ``base + (generation - base_generation)``, and the final generation moved by exactly
        the number of writes that landed.
        """
        adds = [op for op in self.ops if op.consumer == consumer and op.kind == "add"]
        ok = [op for op in adds if op.outcome == OK]
        unknown = [op for op in adds if uncertain(op)]
        self.verdict.successes += len(ok)
        self.verdict.unknowns += len(unknown)
        applied = total(self.final[consumer]) - total(base)
        low, high = len(ok), len(ok) + len(unknown)
        if applied > high:
            self.verdict.fail(
                "applied twice", consumer, f"{applied} adds landed, at most {high} may have"
            )
        if applied < low:
            self.verdict.fail("lost", consumer, f"{applied} adds landed, {low} reported successful")
        moved = (self.generations[consumer] or 0) - base_generation
        if moved != applied:
            message = f"generation moved {moved} for {applied} adds"
            self.verdict.fail("generations", consumer, message)
        seen = Counter(op.generation for op in ok)
        for generation, count in seen.items():
            if count > 1:
                message = f"{count} successful adds reported generation {generation}"
                self.verdict.fail("lost", consumer, message)
        for op in ok:
            expected = total(base) + (op.generation or 0) - base_generation
            if total(op.result) != expected:
                message = f"add reported {op.result} at generation {op.generation}"
                self.verdict.fail("generations", consumer, message)

    def check_registers(self) -> None:
        """Each consumer holds what an operation no later success followed left it holding.

        A success S is followed when another success began after S ended; the final state must
        be the result of an unfollowed success, or what an unfollowed ``OutcomeUnknown`` sent.
        A consumer with no success may also hold nothing (they are fresh uuids).
        """
        by_consumer: dict[str, list[Op]] = defaultdict(list)
        for op in self.ops:
            by_consumer[op.consumer].append(op)
        for consumer, ops in by_consumer.items():
            ok = [op for op in ops if op.outcome == OK]
            unsure = [op for op in ops if uncertain(op)]
            self.verdict.successes += len(ok)
            self.verdict.unknowns += len(unsure)
            latest_start = max((op.start for op in ok), default=float("-inf"))
            candidates = [op.result or {} for op in ok if op.end >= latest_start]
            candidates += [maybe_written(op) for op in unsure if op.end >= latest_start]
            if not ok:
                candidates.append({})
            # Where did the state each successful add replaced come from? Only a success or an
            # uncertain outcome may have written it: a definite failure that landed is a phantom.
            written = [op.result for op in ok] + [maybe_written(op) for op in unsure]
            for op in ok:
                if op.kind == "add" and op.read not in written:
                    self.verdict.fail("phantom", consumer, f"an add replaced {op.read}")
            final = self.final[consumer]
            if final not in candidates:
                over = total(final) > max(total(c) for c in candidates)
                self.verdict.fail(
                    "applied twice" if over else "lost",
                    consumer,
                    f"holds {final}; the log allows only {candidates}",
                )

    def assert_clean(self) -> None:
        """Fail with every violation found, each with its evidence."""
        assert not self.verdict.failures, "\n".join(self.verdict.violations)


def rows_printed_at_end(title: str, headers: Sequence[str]) -> Iterator[list[list[object]]]:
    """A module fixture's body: rows the tests add, printed as a table when the module ends
    (visible with ``-s``)."""
    rows: list[list[object]] = []
    yield rows
    print(f"\n\n{title}")
    print(table(headers, rows))


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A plain text table, right-aligned numbers, for ``-s`` output and the final report."""
    body = [[str(cell) for cell in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for row in body:
        cells = [
            c.rjust(w) if c.lstrip("-").isdigit() else c.ljust(w)
            for c, w in zip(row, widths, strict=True)
        ]
        lines.append("  ".join(cells))
    return "\n".join(lines)
