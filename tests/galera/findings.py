"""What Placement itself broke, told apart from what the client broke, each only with proof.

The matrix judges the client: every acknowledged operation against what every node holds.
Two things Placement 16.0.0 does on a multi-writer Galera cluster break the same checks
without any client being wrong (``doc/source/galera.rst``, "Placement-side findings"):

* **deadlock retry re-sends an advanced generation**: ``_set_allocations``'s oslo.db retry
  reuses the ``Consumer`` whose generation the aborted attempt bumped in memory, so when
  another writer moved the consumer to that generation meanwhile, both writes are answered
  204 for the same generation and one is overwritten (``test_placement_retry.py`` makes it
  happen on purpose). Proof here: two successful writes to one consumer that report the same
  generation, one of whose requests Placement's log shows retried after a deadlock.
* **orphaned allocations**: allocation rows whose consumer row is gone. Usages count them,
  allocation listings (which join ``consumers``) do not. Proof here: the rows themselves,
  read from the node with ``wsrep_sync_wait``, summing exactly to the difference.

A failure is moved from the client's columns to the ``placement`` column only when the proof
accounts for all of it; anything it does not explain stays a client failure.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from reportclient.testing._app import DB_RETRY_LOG
from tests.races.checker import OK, Checker, Op, total, uncertain

__all__ = ["bypassed", "explain_adds", "explain_usages", "retried_requests"]

_RETRIED = re.compile(
    rf"{re.escape(DB_RETRY_LOG)} \[(req-[0-9a-f-]+)\]: Performing DB retry for function "
    r"placement\.objects\.allocation\._set_allocations"
)
_USAGES = re.compile(r"provider (\S+): usage (\d+), its allocations sum to (\d+)")


def retried_requests(logs: Iterable[str]) -> set[str]:
    """Global request ids whose allocation write Placement retried after a deadlock."""
    return {rid for log in logs for rid in _RETRIED.findall(log)}


def bypassed(ops: Iterable[Op], retried: set[str]) -> dict[str, set[int]]:
    """consumer -> generations two successes reported, one of them retried by Placement."""
    by_generation: dict[tuple[str, int], list[Op]] = defaultdict(list)
    for op in ops:
        if op.outcome == OK and op.generation is not None:
            by_generation[(op.consumer, op.generation)].append(op)
    found: dict[str, set[int]] = defaultdict(set)
    for (consumer, generation), same in by_generation.items():
        if len(same) > 1 and any(op.request_id in retried for op in same):
            found[consumer].add(generation)
    return dict(found)


def explain_adds(
    checker: Checker, consumer: str, base_total: int, base_generation: int, bypasses: set[int]
) -> bool:
    """Whether ``bypasses`` account for every failure the adds check found, and nothing else.

    Each bypass at generation b is two successes reporting b for one add's worth of content
    and a generation moved twice (b, then b+1 by the retry). So with k bypasses: the amount
    is k below what the successes claim, the generation moved k more than the amount, every
    other generation is reported once, and a success at generation g holds ``base + (g -
    base_generation) - (bypasses below g)``.
    """
    adds = [op for op in checker.ops if op.consumer == consumer and op.kind == "add"]
    ok = [op for op in adds if op.outcome == OK]
    unknown = [op for op in adds if uncertain(op)]
    k = len(bypasses)
    applied = total(checker.final[consumer]) - base_total
    moved = (checker.generations[consumer] or 0) - base_generation
    if not bypasses or not len(ok) - k <= applied <= len(ok) + len(unknown) - k:
        return False
    if moved != applied + k:
        return False
    reported = Counter(op.generation for op in ok)
    if any(n != (2 if g in bypasses else 1) for g, n in reported.items()):
        return False
    for op in ok:
        below = sum(b < (op.generation or 0) for b in bypasses)
        if total(op.result) != base_total + (op.generation or 0) - base_generation - below:
            return False
    return True


def explain_usages(message: str, orphans: Mapping[str, Mapping[str, int]]) -> str | None:
    """The finding that explains a "usages" failure (``message``) exactly, or None."""
    match = _USAGES.match(message)
    if match is None:
        return None
    rp, usage, listed = match.group(1), int(match.group(2)), int(match.group(3))
    rows = orphans.get(rp, {})
    if not rows or usage - listed != sum(rows.values()):
        return None
    return f"orphaned allocations on {rp}: {dict(rows)} (no consumer row); {message}"
