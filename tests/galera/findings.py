"""What Placement itself broke, told apart from what the client broke, each only with proof.

The matrix judges the client: every acknowledged operation against what every node holds.
What Placement 16.0.0 does, and what its hosts do behind HAProxy, breaks the same checks in
these shapes without any client being wrong (``doc/source/galera.rst``, "Placement-side
findings"):

* **deadlock retry re-sends an advanced generation**: ``_set_allocations``'s oslo.db retry
  reuses the ``Consumer`` whose generation the aborted attempt bumped in memory, so when
  another writer moved the consumer to that generation meanwhile, the retried write lands
  on top of it although it carried the generation before
  (``test_placement_findings.py`` makes it happen on purpose). Proof here
  (:func:`bypassed`): a write Placement's log shows retried after a deadlock, and a success
  that reported the very generation it bypassed.
* **orphaned allocations**: a write that failed deletes the consumer it created, whoever
  wrote to it meanwhile, so allocation rows are left without a consumer row. Usages count
  them, listings (which join ``consumers``) do not, and the consumer reads empty. Proof
  here: the rows themselves, read from the node with ``wsrep_sync_wait``; a usage differing
  from the listing must be exactly them (:func:`explain_usages`), and an orphaned consumer
  is judged by its rows (:func:`restore_orphans`).

* **an empty write deletes a write that landed after its generation check**: the empty
  ``PUT /allocations/{c}`` checks the generation it carries, then reads the consumer's
  allocations again and guards its bump with the generation that read returned, so a write
  landing in between is deleted by an empty write carrying its predecessor's generation
  (``tests/functional/test_in_server_races.py`` makes it happen on purpose). Proof here
  (:func:`deleted_by_empty_write`): Placement's log of that request's two generations (or
  of its deadlock retry, the first finding's shape on an empty write).

* **a write cut by a failover runs on its host afterwards**: HAProxy's failover answers its
  own 502 for every request in flight to the host it takes out, also for those still waiting
  in that host's accept queue (both sync workers busy, e.g. sleeping in oslo.db's deadlock
  back-off). The host accepts them once a worker is free, reads each whole request and runs
  it: the write commits after its client was told nothing (``OutcomeUnknown``, or a re-read
  that showed it not landed yet) and after later operations on the consumer, which the
  checker's model (an operation's write lands before the operation ends) does not allow.
  Proof here (:func:`late_writes`, :func:`explained_by`): the proxy relayed the write and got
  HAProxy's own answer, a host's request log shows the same request's write answered 2xx
  after that, by no run any answer came from, and with that write, as the proxy relayed it,
  taken as a success over the time the host ran it, the consumer's failures all go away.

A failure is moved from the client's columns to the ``placement`` column only when the proof
accounts for all of it; anything it does not explain stays a client failure.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from reportclient.testing._app import EVIDENCE_LOG
from tests.galera.faults import Hop
from tests.races.checker import OK, Allocs, Checker, Op, Verdict, total, uncertain

__all__ = [
    "bypassed", "check_with_orphans", "cleaned_up", "deleted_by_empty_write", "explain_adds",
    "explain_usages", "explained_by", "late_writes", "refused_but_landed", "restore_orphans",
    "retried_requests",
]  # fmt: skip

_RETRIED = re.compile(
    rf"{re.escape(EVIDENCE_LOG)} \[(req-[0-9a-f-]+)\]: Performing DB retry for function "
    r"placement\.objects\.allocation\._set_allocations"
)
_CLEANUP = re.compile(
    rf"{re.escape(EVIDENCE_LOG)} \[(req-[0-9a-f-]+)\]: Deleted auto-created consumer with "
    r"consumer UUID ([0-9a-f-]{36})"
)
_REREAD = re.compile(
    rf"{re.escape(EVIDENCE_LOG)} \[(req-[0-9a-f-]+)\]: Empty write for consumer ([0-9a-f-]{{36}}) "
    r"checked generation (\d+), then read its allocations at generation (\d+)"
)
#: A host's request log (:func:`reportclient.testing._app.log_requests`): a request reaching
#: the app, or its answer; clock, worker pid, request id, method, path (and status).
_REQUEST_LOG = re.compile(
    rf"^(\d+\.\d+) pid (\d+) {re.escape(EVIDENCE_LOG)} \[(req-[0-9a-f-]+)\]: "
    r'(?:Starting request: \S+ "(\w+) (\S+)"$|\S+ "(\w+) (\S+)" status: (\d+) )',
    re.MULTILINE,
)
_CONSUMER_PATH = re.compile(r"^/allocations/([0-9a-f-]{36})$")
_USAGES = re.compile(r"provider (\S+): usage (\d+), its allocations sum to (\d+)")
#: How an ``OutcomeUnknown`` from a consumer write names the generation its write carried.
_CARRIED = re.compile(r"a write carrying generation (\d+) may or may")


def retried_requests(logs: Iterable[str]) -> set[str]:
    """Global request ids whose allocation write Placement retried after a deadlock."""
    return {rid for log in logs for rid in _RETRIED.findall(log)}


def cleaned_up(logs: Iterable[str]) -> dict[str, set[str]]:
    """consumer -> global request ids that deleted it as "auto-created" after a failed write."""
    found: dict[str, set[str]] = defaultdict(set)
    for log in logs:
        for rid, consumer in _CLEANUP.findall(log):
            found[consumer].add(rid)
    return dict(found)


def restore_orphans(
    checker: Checker,
    orphans: Mapping[str, Mapping[str, int]],
    cleanups: Mapping[str, set[str]],
) -> tuple[list[str], set[str]]:
    """Give back to each consumer the allocation rows Placement orphaned; say so, per consumer.

    A consumer the read showed empty while the node holds allocation rows for it (and no
    consumer row): its ``final`` becomes those rows. Each such consumer is a finding, naming
    the requests whose failed write deleted the consumer row, when logged. Returns the
    findings and the consumers restored.
    """
    held: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    for rp, rows in orphans.items():
        for consumer, used in rows.items():
            held[consumer][rp] = {"VCPU": used}
    lines, restored = [], set()
    for consumer, allocs in sorted(held.items()):
        if consumer not in checker.final or checker.final[consumer]:
            continue
        checker.final[consumer] = allocs
        restored.add(consumer)
        who = ", ".join(sorted(cleanups.get(consumer, ()))) or "not logged"
        lines.append(
            f"orphaned consumer {consumer}: no consumer row, {allocs} in allocations; "
            f"deleted as auto-created by {who}"
        )
    return lines, restored


def check_with_orphans(
    checker: Checker,
    orphans: Mapping[str, Mapping[str, int]],
    cleanups: Mapping[str, set[str]],
    check: Callable[[], None],
) -> tuple[list[str], dict[str, Allocs]]:
    """Run ``check`` on what the node shows, then with orphaned rows given back to their owners.

    An orphaned consumer has two honest states: what every client sees (nothing: Placement
    lists no allocation without its consumer row, so a later release finds nothing to do) and
    what its writes left (the rows, still using capacity: a move's target that reads empty
    did land). A failure about such a consumer is the client's only when it fails both ways;
    every other failure is kept as is. ``checker.final`` ends restored; returns the findings
    and the final state as read.
    """
    observed = dict(checker.final)
    before = list(checker.verdict.failures)
    check()
    first = checker.verdict.failures[len(before) :]
    lines, restored = restore_orphans(checker, orphans, cleanups)
    if not restored:
        return lines, observed
    checker.verdict = Verdict()
    check()
    second = {(category, who) for category, who, _ in checker.verdict.failures}
    kept = [f for f in first if f[1] not in restored or (f[0], f[1]) in second]
    checker.verdict.failures = before + kept
    return lines, observed


def bypassed(ops: Iterable[Op], retried: set[str]) -> dict[str, dict[int, bool]]:
    """consumer -> generation b a retried write bypassed -> whether its loser reported success.

    Two proofs, each naming a write Placement retried after a deadlock: two successes report
    generation b (both carried b-1), one of them retried; or a success reports b holding X
    while a retried write whose outcome stayed unknown carried b-1 and sent the same X (both
    were computed from the same state; the retry landed later, moving the generation again).
    """
    ops = list(ops)
    found: dict[str, dict[int, bool]] = defaultdict(dict)
    successes: dict[tuple[str, int], list[Op]] = defaultdict(list)
    for op in ops:
        if op.outcome == OK and op.generation is not None:
            successes[(op.consumer, op.generation)].append(op)
    for (consumer, generation), same in successes.items():
        if len(same) > 1 and any(op.request_id in retried for op in same):
            found[consumer][generation] = True
    for op in ops:
        carried = _CARRIED.search(op.detail)
        if op.request_id not in retried or not uncertain(op) or carried is None:
            continue
        generation = int(carried.group(1)) + 1
        winners = successes.get((op.consumer, generation), [])
        if any(w.result == op.sent for w in winners):
            found[op.consumer].setdefault(generation, False)
    return dict(found)


#: Typed errors that say a write lost to a newer generation (nothing of it landed, to the client).
_REFUSED = frozenset({"ConsumerChanged", "GenerationConflict", "PlacementOverloaded"})


def refused_but_landed(
    ops: Iterable[Op], retried: set[str], final: Mapping[str, Allocs]
) -> set[str]:
    """Consumers emptied by a release the client was told lost, that Placement retried.

    The third proof of the deadlock retry: a release's empty write carried generation b-1,
    Placement's retry after a deadlock re-sent it with b (see the module docstring) after
    another writer had moved the consumer to b, and it landed there after the client had
    given it up (seen on Galera with HAProxy failing over: the first answer was cut, the
    re-read showed the add at b, which no correct Placement lets a write carrying b-1 land on,
    the release raised ``ConsumerChanged``, and the consumer ended empty). Proof: that
    release's request is among Placement's logged retries, the client reported a generation
    conflict for it, and the consumer holds exactly what it sent (nothing).
    """
    return {
        op.consumer
        for op in ops
        if op.kind == "release"
        and op.outcome in _REFUSED
        and op.request_id in retried
        and final.get(op.consumer) == {}
    }


def deleted_by_empty_write(
    ops: Iterable[Op], logs: Iterable[str], final: Mapping[str, Allocs], carried: int
) -> dict[str, str]:
    """consumer -> the finding, for each consumer an empty write deleted a later write of.

    The empty writes carried generation ``carried`` (a raw write's log does not say). Proof,
    all of: the empty write answered 204; Placement's log shows it guarded its bump with a
    later generation g, either because its re-read saw g (the line
    :func:`_app.log_evidence` writes) or because oslo.db retried it after a deadlock (it
    then guards with ``carried + 1``, see :func:`bypassed`); a client reported a success at
    g on that consumer (the write deleted); and the consumer now holds nothing.
    """
    logs = list(logs)
    reread = {
        (rid, consumer): (int(checked), int(read))
        for log in logs
        for rid, consumer, checked, read in _REREAD.findall(log)
    }
    retried = retried_requests(logs)
    ops = list(ops)
    found: dict[str, str] = {}
    for op in ops:
        if op.outcome != OK or op.result != {} or final.get(op.consumer) != {}:
            continue
        generations = reread.get((op.request_id, op.consumer))
        if generations is not None and generations[1] > generations[0]:
            checked, guarded = generations
            how = f"checked generation {checked}, then read the consumer at {guarded}"
        elif op.request_id in retried:
            guarded = carried + 1
            how = f"carried {carried}, was retried after a deadlock guarding with {guarded}"
        else:
            continue
        deleted = [
            other
            for other in ops
            if other.consumer == op.consumer and other.outcome == OK and other.generation == guarded
        ]
        if deleted:
            found[op.consumer] = (
                f"empty write {op.request_id} {how}: deleted the {deleted[0].kind} "
                f"{deleted[0].request_id} that reported generation {guarded}"
            )
    return found


def explain_adds(
    checker: Checker,
    consumer: str,
    base_total: int,
    base_generation: int,
    bypasses: Mapping[int, bool],
) -> bool:
    """Whether ``bypasses`` account for every failure the adds check found, and nothing else.

    A bypass at generation b adds no content and moves the generation once more (b+1, by the
    retry); its loser either reported success at b too, or stayed unknown. So with k
    bypasses, k_ok of them reported: the amount lies k_ok below the successes (and its
    unknowns' upper bound another k - k_ok lower), the generation moved k more than the
    amount, only the k_ok generations are reported twice, and a success at generation g
    holds ``base + (g - base_generation) - (bypasses below g)``.
    """
    adds = [op for op in checker.ops if op.consumer == consumer and op.kind == "add"]
    ok = [op for op in adds if op.outcome == OK]
    unknown = [op for op in adds if uncertain(op)]
    k, k_ok = len(bypasses), sum(bypasses.values())
    applied = total(checker.final[consumer]) - base_total
    moved = (checker.generations[consumer] or 0) - base_generation
    if not bypasses or not len(ok) - k_ok <= applied <= len(ok) + len(unknown) - k:
        return False
    if moved != applied + k:
        return False
    reported = Counter(op.generation for op in ok)
    if any(n != (2 if bypasses.get(g or 0) else 1) for g, n in reported.items()):
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


@dataclass(frozen=True)
class _Run:
    """One request as a host ran it: from its request log's two lines."""

    host: str
    request_id: str
    method: str
    path: str
    started: float
    answered: float
    status: int


def _runs(logs: Sequence[tuple[str, str]]) -> list[_Run]:
    """Every request the hosts' request logs show started and answered, by worker."""
    runs = []
    for host, text in logs:
        pending: dict[str, tuple[str, str, str, float]] = {}  # pid -> its request, once started
        for match in _REQUEST_LOG.finditer(text):
            clock, pid, rid = float(match.group(1)), match.group(2), match.group(3)
            if match.group(4) is not None:  # a sync worker runs one request at a time
                pending[pid] = (rid, match.group(4), match.group(5), clock)
                continue
            started = pending.pop(pid, None)
            if started is not None and started[:3] == (rid, match.group(6), match.group(7)):
                runs.append(_Run(host, rid, started[1], started[2], started[3], clock,
                                 int(match.group(8))))  # fmt: skip
    return runs


def late_writes(
    ops: Iterable[Op], hops: Iterable[Hop], logs: Sequence[tuple[str, str]]
) -> list[Op]:
    """Consumer writes a host ran after HAProxy had answered their request itself, as successes.

    ``logs``: ``(host, text)`` of every host's request log (:func:`_app.log_requests`). A
    write counts when all of these hold: the proxy relayed ``PUT /allocations/{c}`` of an
    operation and HAProxy answered it itself (no ``X-Served-By``; the failover's 502) or
    nothing came; a host's log shows that request's same write answered 2xx *after* that
    answer; and no relayed request that a host did answer accounts for that run (a client's
    re-send of the same request id goes through the proxy again). It is returned as an
    ``ok`` operation ``late write`` over the time the host ran it, holding what the cut
    request sent; its ``detail`` says what happened. A run two cut requests could be, with
    different bodies, proves nothing and is left out.
    """
    by_id = {op.request_id: op for op in ops}
    hops = [hop for hop in hops if hop.request_id in by_id]
    runs = [run for run in _runs(logs) if run.request_id in by_id]
    served = [hop for hop in hops if hop.served_by and hop.status is not None]
    cut = [hop for hop in hops if not hop.served_by and hop.method == "PUT"]
    found = []
    for run in runs:
        same = (run.request_id, run.method, run.path)
        consumer = _CONSUMER_PATH.match(run.path)
        if run.method != "PUT" or consumer is None or not 200 <= run.status < 300:
            continue
        if any(
            (hop.request_id, hop.method, hop.path) == same and hop.served_by == run.host
            and hop.sent <= run.started and run.answered <= hop.answered
            for hop in served
        ):  # fmt: skip
            continue
        before = [h for h in cut if (h.request_id, h.method, h.path) == same and
                  h.answered < run.answered]  # fmt: skip
        bodies = {hop.body for hop in before}
        if len(bodies) != 1:
            continue
        try:
            sent = json.loads(bodies.pop())["allocations"]
            holds = {rp: dict(entry["resources"]) for rp, entry in sent.items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        op, hop = by_id[run.request_id], max(before, key=lambda h: h.answered)
        answer = "no answer" if hop.status is None else f"HAProxy's own {hop.status}"
        detail = (
            f"{op.kind} {run.request_id}: PUT {answer} at {hop.answered:.3f}, then ran on "
            f"{run.host} {run.started:.3f}-{run.answered:.3f} ({run.status}), "
            f"{run.answered - op.end:.2f} s after the client's {op.outcome}, holding {holds}"
        )
        found.append(Op("late write", consumer.group(1), holds, OK, run.started, run.answered,
                        run.host, run.request_id, holds, detail=detail))  # fmt: skip
    return found


def explained_by(
    checker: Checker, late: Sequence[Op], check: Callable[[Checker], None]
) -> dict[str, list[Op]]:
    """consumer -> its late writes, for each consumer they clear of every failure.

    ``check`` is run again on copies of ``checker`` (same operations and final state, nothing
    read again): as it was, and with each failing consumer's late writes (:func:`late_writes`)
    added as the successes they were. A consumer is explained only when every failure about
    it is one ``check`` finds (not, say, an untyped error found on reading back), and with its
    late writes ``check`` finds none.
    """
    failing = {who for _, who, _ in checker.verdict.failures if who}
    extra = [op for op in late if op.consumer in failing]
    if not extra:
        return {}

    def found(added: list[Op]) -> set[tuple[str, str]]:
        again = Checker(checker.admin, checker.providers)
        again.created = set(checker.created)
        again.record(checker.ops)
        again.record(added)
        again.final = dict(checker.final)
        again.generations = dict(checker.generations)
        check(again)
        return {(category, who) for category, who, _ in again.verdict.failures}

    base, after = found([]), found(extra)
    explained = {}
    for consumer in sorted({op.consumer for op in extra}):
        mine = {(category, who) for category, who, _ in checker.verdict.failures if who == consumer}
        if mine <= base and not any(who == consumer for _, who in after):
            explained[consumer] = [op for op in extra if op.consumer == consumer]
    return explained
