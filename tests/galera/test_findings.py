"""The Placement-side findings move a failure out of the client's columns only with full proof."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from reportclient.testing._app import EVIDENCE_LOG
from tests.galera.artifacts import (
    ARTIFACTS_ENV,
    artifacts_root,
    carrying,
    keep_failure,
    naming,
    op_record,
    timeline,
)
from tests.galera.faults import Hop
from tests.galera.findings import (
    bypassed,
    check_with_orphans,
    cleaned_up,
    deleted_by_empty_write,
    explain_adds,
    explain_usages,
    explained_by,
    late_writes,
    refused_but_landed,
    restore_orphans,
    retried_requests,
)
from tests.galera.matrix import Cell, Setup
from tests.galera.provider_workers import POp
from tests.races.checker import OK, Checker, Op

RP = "e5e8e625-3840-4bf4-b081-e82f89c95ff7"
C = "89d5c63d-3d21-4ee3-8b39-95216dd10117"
RETRIED = "req-4e7de1ed-0000-4000-8000-000000000000"


def add(generation: int | None, amount: int, rid: str, outcome: str = OK) -> Op:
    if outcome == OK:
        return Op("add", C, {RP: {"VCPU": 1}}, OK, 0.0, 1.0, "w", rid, {RP: {"VCPU": amount}},
                  generation)  # fmt: skip
    detail = f"a write carrying generation {generation} may or may not have landed"
    return Op("add", C, {RP: {"VCPU": 1}}, outcome, 0.0, 1.0, "w", rid, None, None,
              {RP: {"VCPU": amount}}, detail=detail)  # fmt: skip


def adds_history(bypass_at: int | None, count: int = 24, loser: str = OK) -> list[Op]:
    """``count`` successful +1 adds from 1 VCPU at generation 1; one bypass at ``bypass_at``.

    The bypass's loser (``loser``: its outcome) computed the same content from the same state
    as the success at ``bypass_at``; its retry moved the generation once more.
    """
    ops, amount, generation = [], 1, 1
    for i in range(count):
        amount += 1
        generation += 1
        ops.append(add(generation, amount, f"req-{i:08d}-0000-0000-0000-000000000000"))
        if generation == bypass_at:
            carried = generation if loser == OK else generation - 1
            ops.append(add(carried, amount, RETRIED, loser))
            generation += 1
    return ops


def checker(ops: list[Op], final_amount: int, final_generation: int) -> Checker:
    found = Checker(None, [RP])  # type: ignore[arg-type]  # nothing is read back here
    found.record(ops)
    found.final[C] = {RP: {"VCPU": final_amount}}
    found.generations[C] = final_generation
    return found


def log(rid: str) -> str:
    return (
        f"{EVIDENCE_LOG} [{rid}]: DB error: (1213, 'Deadlock found')\n"
        f"{EVIDENCE_LOG} [{rid}]: Performing DB retry for function "
        "placement.objects.allocation._set_allocations\n"
    )


def test_retried_requests_reads_the_hosts_retry_lines() -> None:
    assert retried_requests([log(RETRIED), "unrelated\n"]) == {RETRIED}


def test_a_duplicate_generation_is_a_bypass_only_when_placement_retried_one_of_them() -> None:
    ops = adds_history(bypass_at=11, count=23)
    assert bypassed(ops, {RETRIED}) == {C: {11: True}}
    assert bypassed(ops, set()) == {}


def test_the_seen_bypass_explains_its_lost_add_and_shifted_generations() -> None:
    # The cell that failed: 24 successes, 23 adds landed, generation at 25.
    ops = adds_history(bypass_at=11, count=23)
    assert explain_adds(checker(ops, 24, 25), C, 1, 1, {11: True})


def test_a_lost_add_beyond_the_bypass_stays_the_clients() -> None:
    ops = adds_history(bypass_at=11, count=23)
    assert not explain_adds(checker(ops, 23, 24), C, 1, 1, {11: True})


def test_a_bypass_whose_loser_stayed_unknown_explains_a_generation_without_content() -> None:
    # The other cell seen: generation moved 22 for 21 adds, successes one VCPU short from 5 on.
    ops = adds_history(bypass_at=4, count=21, loser="OutcomeUnknown")
    assert bypassed(ops, {RETRIED}) == {C: {4: False}}
    assert explain_adds(checker(ops, 22, 23), C, 1, 1, {4: False})
    # Unknown and not retried by Placement: nothing proves the extra generation is Placement's.
    assert bypassed(ops, set()) == {}


def test_an_unknown_add_that_sent_other_content_proves_no_bypass() -> None:
    ops = adds_history(bypass_at=4, count=21, loser="OutcomeUnknown")
    other = {RP: {"VCPU": 9}}
    ops = [replace(op, sent=other) if op.request_id == RETRIED else op for op in ops]
    assert bypassed(ops, {RETRIED}) == {}


def test_no_bypass_explains_nothing() -> None:
    ops = adds_history(bypass_at=None, count=23)
    assert not explain_adds(checker(ops, 23, 23), C, 1, 1, {})


def test_orphaned_rows_explain_a_usage_only_to_the_unit() -> None:
    message = f"provider {RP}: usage 5, its allocations sum to 3, the consumers read back hold 3"
    orphans: dict[str, Any] = {RP: {C: 2}}
    assert explain_usages(message, orphans) is not None
    assert explain_usages(message, {RP: {C: 1}}) is None
    assert explain_usages(message, {}) is None


def test_cleaned_up_names_the_request_that_deleted_an_auto_created_consumer() -> None:
    line = (
        f"{EVIDENCE_LOG} [{RETRIED}]: Deleted auto-created consumer with consumer UUID {C} "
        "after failed allocation\n"
    )
    assert cleaned_up([line, log(RETRIED)]) == {C: {RETRIED}}


def test_an_orphaned_consumer_is_judged_by_its_rows_and_reported() -> None:
    found = checker([], 0, 0)
    found.final[C] = {}
    found.final["other"] = {RP: {"VCPU": 1}}
    lines, restored = restore_orphans(found, {RP: {C: 2, "other": 5, "unknown": 3}}, {C: {RETRIED}})
    assert restored == {C}
    assert found.final[C] == {RP: {"VCPU": 2}}
    assert found.final["other"] == {RP: {"VCPU": 1}}  # it has its row: nothing to restore
    assert "unknown" not in found.final
    assert len(lines) == 1 and C in lines[0] and RETRIED in lines[0]


def test_an_orphaned_consumer_fails_only_if_it_fails_both_as_read_and_as_its_rows() -> None:
    released = checker([], 0, 0)
    released.final[C] = {}
    calls: list[dict[str, Any]] = []

    def check() -> None:  # fails on whatever state is not the one "allowed"
        calls.append(dict(released.final))
        if released.final[C] != allowed:
            released.verdict.fail("lost", C, f"holds {released.final[C]}")

    allowed: dict[str, Any] = {}  # a release came last: empty is right, the rows are not
    lines, as_read = check_with_orphans(released, {RP: {C: 1}}, {}, check)
    assert released.verdict.failures == [] and len(lines) == 1 and as_read[C] == {}

    released.final[C], allowed = {}, {"nowhere": {}}  # neither state is right: the client's
    check_with_orphans(released, {RP: {C: 1}}, {}, check)
    assert [f[0] for f in released.verdict.failures] == ["lost"]


def release(outcome: str, rid: str) -> Op:
    return Op("release", C, {}, outcome, 0.0, 1.0, "w", rid)


def test_a_retried_release_the_client_was_told_lost_explains_an_emptied_consumer() -> None:
    ops = [
        add(4, 3, "req-00000001-0000-0000-0000-000000000000"),
        release("ConsumerChanged", RETRIED),
    ]
    assert refused_but_landed(ops, {RETRIED}, {C: {}}) == {C}


def test_a_refused_release_explains_nothing_unless_placement_retried_it_and_it_is_empty() -> None:
    ops = [release("ConsumerChanged", RETRIED)]
    assert refused_but_landed(ops, set(), {C: {}}) == set()  # not retried
    assert refused_but_landed(ops, {RETRIED}, {C: {RP: {"VCPU": 3}}}) == set()  # not what it sent
    assert refused_but_landed([release(OK, RETRIED)], {RETRIED}, {C: {}}) == set()  # it succeeded


EMPTY = "req-0e0e0e0e-0000-4000-8000-000000000000"
UNSHELVE = "req-00000002-0000-0000-0000-000000000000"


def reread(rid: str, checked: int, read: int) -> str:
    return (
        f"{EVIDENCE_LOG} [{rid}]: Empty write for consumer {C} checked generation {checked}, "
        f"then read its allocations at generation {read}\n"
    )


def shelve_race(empty: str = OK, unshelved_at: int = 2) -> list[Op]:
    """The unshelve (a claim that reported ``unshelved_at``) and the offload (a raw empty)."""
    claim = Op("claim", C, {RP: {"VCPU": 1}}, OK, 0.0, 1.0, "w", UNSHELVE, {RP: {"VCPU": 1}},
               unshelved_at)  # fmt: skip
    return [claim, Op("raw_empty", C, {}, empty, 0.0, 1.0, "w", EMPTY, {} if empty == OK else None)]


def test_an_empty_write_that_reread_a_later_generation_explains_an_emptied_consumer() -> None:
    (finding,) = deleted_by_empty_write(shelve_race(), [reread(EMPTY, 1, 2)], {C: {}}, 1).values()
    assert EMPTY in finding and UNSHELVE in finding and "read the consumer at 2" in finding
    found = deleted_by_empty_write(shelve_race(), [log(EMPTY)], {C: {}}, 1)  # deadlock retry
    assert "retried after a deadlock" in found[C]


def test_an_empty_write_explains_nothing_without_every_part_of_the_proof() -> None:
    evidence = [reread(EMPTY, 1, 2)]
    assert deleted_by_empty_write(shelve_race(), [], {C: {}}, 1) == {}  # nothing logged
    assert deleted_by_empty_write(shelve_race(), [reread(EMPTY, 2, 2)], {C: {}}, 1) == {}
    assert deleted_by_empty_write(shelve_race(), [reread(UNSHELVE, 1, 2)], {C: {}}, 1) == {}
    held = {C: {RP: {"VCPU": 1}}}
    assert deleted_by_empty_write(shelve_race(), evidence, held, 1) == {}  # not emptied
    refused = shelve_race(empty="GenerationConflict")
    assert deleted_by_empty_write(refused, evidence, {C: {}}, 1) == {}  # the empty lost
    recreated = shelve_race(unshelved_at=1)  # the offload first: no success at 2 to delete
    assert deleted_by_empty_write(recreated, evidence, {C: {}}, 1) == {}


# -- what a failing cell leaves behind (tests/galera/artifacts.py) -----------------------------

B = "0b0b0b0b-0000-4000-8000-000000000000"
CLAIM = "req-c1a1c1a1-0000-4000-8000-000000000000"


def test_artifacts_go_where_asked_else_into_toxs_env_dir() -> None:
    assert artifacts_root({ARTIFACTS_ENV: "/x/y", "TOX_ENV_DIR": "/t"}) == Path("/x/y")
    assert artifacts_root({"TOX_ENV_DIR": "/t"}) == Path("/t/galera-artifacts")
    assert artifacts_root({}).name == "reportclient-galera-artifacts"


def test_an_operation_is_recorded_with_what_it_names() -> None:
    claim = Op("claim", C, {RP: {"VCPU": 1}}, OK, 1.0, 2.0, "storm0", CLAIM, {RP: {"VCPU": 1}}, 1)
    record = op_record("consumers", claim)
    assert record["subjects"] == [C] and record["generation"] == 1 and record["worker"] == "storm0"
    move = POp("move", C, B, OK, 1.0, 2.0, RETRIED)
    assert op_record("moves", move)["subjects"] == [C, B]
    trait = POp("add_trait", RP, "CUSTOM_X", OK, 1.0, 2.0, RETRIED)
    assert op_record("providers", trait)["subjects"] == [RP]
    records = [op_record("consumers", claim), op_record("moves", move), op_record("x", trait)]
    assert [r["kind"] for r in naming(records, B)] == ["move"]
    assert [r["kind"] for r in naming(records, C)] == ["claim", "move"]


def test_the_host_lines_of_a_consumer_are_those_carrying_its_request_ids() -> None:
    host1 = (
        f'12.500000 pid 7 {EVIDENCE_LOG} [{CLAIM}]: Starting request: - "PUT /allocations/{C}"\n'
        f'12.900000 pid 7 {EVIDENCE_LOG} [{EMPTY}]: Starting request: - "PUT /allocations/{B}"\n'
        "[2026-12-04 16:00:00 +0000] [7] [INFO] Booting worker with pid: 7\n"
    )
    host2 = log(CLAIM)  # written before the lines had a clock
    found = carrying([("host1", host1), ("host2", host2)], {CLAIM})
    assert [(clock, host) for clock, host, _ in found] == [
        (12.5, "host1"), (None, "host2"), (None, "host2"),
    ]  # fmt: skip
    assert carrying([("host1", host1)], set()) == []


def test_a_timeline_interleaves_operations_proxy_hops_and_host_lines_by_the_clock() -> None:
    detail = "a write carrying generation 1 may or may not have landed"
    claim = Op("claim", C, {RP: {"VCPU": 1}}, "OutcomeUnknown", 10.0, 14.0, "storm0", CLAIM,
               sent={RP: {"VCPU": 1}}, detail=detail)  # fmt: skip
    hops = [
        Hop(CLAIM, "PUT", f"/allocations/{C}", 10.1, 13.0, None, ""),
        Hop(EMPTY, "PUT", f"/allocations/{B}", 10.2, 10.3, 204, "host1"),  # another op's
    ]
    lines = carrying(
        [("host2", f"11.000000 pid 7 {EVIDENCE_LOG} [{CLAIM}]: Starting request\n" + log(CLAIM))],
        {CLAIM},
    )
    story = timeline([op_record("consumers", claim)], hops, lines)
    assert [entry.split(":", 1)[0] for entry in story] == [
        "  +0.000 storm0", "  +0.100 proxy", "  +1.000 host2", "  +3.000 proxy",
        "  +4.000 storm0", "   ?      host2", "   ?      host2",
    ]  # fmt: skip
    assert "no answer from ?: PUT" in story[3]
    assert "ends OutcomeUnknown" in story[4] and "carrying generation 1" in story[4]
    assert "Starting request" in story[2] and "pid 7" in story[2]
    assert all(EMPTY[4:12] not in entry for entry in story)
    assert timeline([], [], []) == []


def test_a_failing_cell_writes_every_log_its_operations_and_each_subjects_timeline(
    tmp_path: Path,
) -> None:
    hosts = [SimpleNamespace(name=f"host{i}", read_log=lambda i=i: f"all of host{i}\n")
             for i in (1, 2)]  # fmt: skip
    galera = SimpleNamespace(
        hosts=hosts,
        galera=SimpleNamespace(read_log=lambda index: f"node {index}\n"),
        haproxy=SimpleNamespace(read_log=lambda: "haproxy\n"),
    )
    setup = Setup([RP], [C], RP, B, [], [], [], [], {})
    claim = Op("claim", C, {RP: {"VCPU": 1}}, OK, 10.0, 11.0, "storm0", CLAIM, {RP: {"VCPU": 1}}, 1)
    cell = Cell("round-robin", "haproxy failover", setup, consumer_ops=[claim])
    cell.failed = {C}
    cell.evidence = [f"host1: consumers applied twice: {C} holds ..."]
    cell_logs = [f"10.500000 pid 7 {EVIDENCE_LOG} [{CLAIM}]: Starting request\n", ""]
    hop = Hop(CLAIM, "PUT", f"/allocations/{C}", 10.1, 10.9, 204, "host1")
    where, printed = keep_failure(tmp_path, galera, cell, cell_logs, [hop], 42)  # type: ignore[arg-type]
    assert where.parent == tmp_path and where.name.endswith("-round-robin-haproxy-failover")
    assert (where / "host1.log").read_text() == "all of host1\n"
    assert (where / "host1.cell.log").read_text() == cell_logs[0]
    assert (where / "node2.err").read_text() == "node 1\n"
    assert (where / "haproxy.log").read_text() == "haproxy\n"
    (op,) = [json.loads(line) for line in (where / "ops.jsonl").read_text().splitlines()]
    assert op["request_id"] == CLAIM and op["subjects"] == [C]
    assert json.loads((where / "hops.jsonl").read_text())["served_by"] == "host1"
    summary = json.loads((where / "summary.txt").read_text())
    assert summary["seed"] == 42 and summary["failed"] == [C]
    story = (where / f"timeline-{C}.txt").read_text()
    assert "Starting request" in story and "answered 204 from host1" in story
    assert str(where) in printed and "Starting request" in printed
    again, _ = keep_failure(tmp_path, galera, cell, cell_logs, [hop], 42)  # type: ignore[arg-type]
    assert again != where  # a second failure in the same second keeps the first


# -- a write cut by the failover runs on its host afterwards (late_writes, explained_by) --------

A2 = "a2a2a2a2-0000-4000-8000-000000000000"
ADD = "req-add0add0-0000-4000-8000-000000000000"
RELEASE = "req-7e1e7e1e-0000-4000-8000-000000000000"


def put_body(allocs: dict[str, Any], generation: int | None) -> str:
    body = {rp: {"resources": res} for rp, res in allocs.items()}
    return json.dumps({"allocations": body, "consumer_generation": generation})


def ran(rid: str, started: float, answered: float, status: int = 204, pid: int = 7,
        method: str = "PUT", path: str = f"/allocations/{C}") -> str:  # fmt: skip
    """A host's request log of one request (``_app.log_requests``)."""
    head = f"pid {pid} {EVIDENCE_LOG} [{rid}]:"
    return (
        f'{started:.6f} {head} Starting request: 127.0.0.1 "{method} {path}"\n'
        f'{answered:.6f} {head} 127.0.0.1 "{method} {path}" status: {status} len: 0 '
        "microversion: 1.39\n"
    )


CLAIMED = {RP: {"VCPU": 1}}


def the_cut_claim() -> tuple[list[Op], list[Hop]]:
    """What run 2 of 2026-12-04 captured, reduced to the consumer's claim and a release.

    The claim's PUT (a new consumer, generation None) was cut by the failover: HAProxy
    answered its own 502 at 0.47 while the request waited in host1's accept queue (both
    workers in oslo.db's deadlock back-off); the re-read found nothing, so OutcomeUnknown. A
    release then found nothing to release; host1 ran the claim at 2.43 (204).
    """
    ops = [
        Op("claim", C, {RP: {"VCPU": 1}}, "OutcomeUnknown", 0.23, 0.54, "t1", CLAIM,
           sent={RP: {"VCPU": 1}}),
        Op("release", C, {}, OK, 1.47, 1.50, "t2", RELEASE, {}),
    ]  # fmt: skip
    hops = [
        Hop(CLAIM, "PUT", f"/allocations/{C}", 0.26, 0.47, 502, "", put_body(CLAIMED, None)),
        Hop(CLAIM, "GET", f"/allocations/{C}", 0.47, 0.53, 200, "host3"),
        Hop(RELEASE, "GET", f"/allocations/{C}", 1.47, 1.49, 200, "host3"),
    ]  # fmt: skip
    return ops, hops


def test_a_write_the_host_ran_after_haproxy_answered_it_is_a_late_success() -> None:
    ops, hops = the_cut_claim()
    (late,) = late_writes(ops, hops, [("host1", ran(CLAIM, 2.43, 2.46)), ("host3", "")])
    assert (late.kind, late.consumer, late.outcome) == ("late write", C, OK)
    assert (late.start, late.end, late.worker) == (2.43, 2.46, "host1")
    assert late.result == {RP: {"VCPU": 1}}
    assert "HAProxy's own 502 at 0.470" in late.detail and "OutcomeUnknown" in late.detail


def with_hops(change: dict[str, Any]) -> list[Hop]:
    _, hops = the_cut_claim()
    return [replace(hops[0], **change), *hops[1:]]


@pytest.mark.parametrize(
    ("why", "hops", "log"),
    [
        ("the host refused it", None, ran(CLAIM, 2.43, 2.46, status=409)),
        ("it ran before HAProxy answered", None, ran(CLAIM, 0.30, 0.40)),
        ("a host answered it", with_hops({"status": 204, "served_by": "host1", "answered": 2.5}),
         ran(CLAIM, 2.43, 2.46)),
        ("the proxy never relayed a cut PUT", with_hops({"method": "GET"}), ran(CLAIM, 2.43, 2.46)),
        ("another request's run", None, ran(EMPTY, 2.43, 2.46)),
        ("another consumer's path", None, ran(CLAIM, 2.43, 2.46, path=f"/allocations/{B}")),
        ("a read", None, ran(CLAIM, 2.43, 2.46, method="GET")),
        ("its start was not logged", None, ran(CLAIM, 2.43, 2.46).splitlines()[1]),
        ("started and answered by other workers", None,
         ran(CLAIM, 2.43, 2.46).splitlines()[0] + "\n" +
         ran(CLAIM, 2.43, 2.46, pid=8).splitlines()[1]),
        ("the cut body is no allocation write", with_hops({"body": "{}"}), ran(CLAIM, 2.43, 2.46)),
    ],
)  # fmt: skip
def test_a_late_write_needs_every_part_of_its_proof(
    why: str, hops: list[Hop] | None, log: str
) -> None:
    ops, cut = the_cut_claim()
    assert late_writes(ops, cut if hops is None else hops, [("host1", log)]) == [], why


def test_two_cut_requests_with_different_bodies_prove_nothing() -> None:
    ops, hops = the_cut_claim()
    other = replace(hops[0], sent=0.50, answered=0.60, body=put_body({B: {"VCPU": 1}}, None))
    assert late_writes(ops, [*hops, other], [("host1", ran(CLAIM, 2.43, 2.46))]) == []
    same = replace(other, body=hops[0].body)
    assert len(late_writes(ops, [*hops, same], [("host1", ran(CLAIM, 2.43, 2.46))])) == 1


def test_a_resent_write_answered_by_a_host_is_not_the_late_one() -> None:
    # The add of 2026-12-03's failure as it would have gone: its first PUT cut (502), its re-read
    # showing generation 1 as it was, its re-send answered by host2; host1 ran the first later.
    add = Op(
        "add", C, {A2: {"VCPU": 1}}, OK, 0.1, 0.9, "t1", ADD, {RP: {"VCPU": 1}, A2: {"VCPU": 1}}, 2
    )
    body = put_body({RP: {"VCPU": 1}, A2: {"VCPU": 1}}, 1)
    hops = [
        Hop(ADD, "PUT", f"/allocations/{C}", 0.2, 0.4, 502, "", body),
        Hop(ADD, "PUT", f"/allocations/{C}", 0.6, 0.8, 204, "host2", body),
    ]  # fmt: skip
    logs = [("host1", ran(ADD, 2.0, 2.1)), ("host2", ran(ADD, 0.65, 0.7))]
    (late,) = late_writes([add], hops, logs)
    assert (late.worker, late.start, late.result) == (
        "host1",
        2.0,
        {RP: {"VCPU": 1}, A2: {"VCPU": 1}},
    )
    assert late_writes([add], hops, [("host2", ran(ADD, 0.65, 0.7))]) == []  # only the answered run


def storm(ops: list[Op], final: dict[str, Any]) -> Checker:
    found = Checker(None, [RP, A2])  # type: ignore[arg-type]  # nothing is read back here
    found.record(ops)
    found.final[C] = final
    found.check_registers()
    return found


def test_the_captured_resurrection_is_the_late_claim() -> None:
    ops, hops = the_cut_claim()
    late = late_writes(ops, hops, [("host1", ran(CLAIM, 2.43, 2.46))])
    checker = storm(ops, {RP: {"VCPU": 1}})  # what every node read back
    assert [f[1] for f in checker.verdict.failures] == [C]
    explained = explained_by(checker, late, Checker.check_registers)
    assert explained == {C: late}
    assert [f[1] for f in checker.verdict.failures] == [C]  # judged again on a copy


def test_the_applied_twice_of_a_recreated_consumer_is_the_late_add() -> None:
    # claim {A} g1; add {A,B} g2 (first PUT cut, re-sent); release; claim {B} g1 on the consumer
    # the release deleted; then host1 runs the add's first PUT, carrying generation 1: {A,B}.
    both = {RP: {"VCPU": 1}, A2: {"VCPU": 1}}
    ops = [
        Op("claim", C, {RP: {"VCPU": 1}}, OK, 0.0, 0.05, "t0", CLAIM, {RP: {"VCPU": 1}}, 1),
        Op("add", C, {A2: {"VCPU": 1}}, OK, 0.1, 0.9, "t1", ADD, both, 2, read={RP: {"VCPU": 1}}),
        Op("release", C, {}, OK, 1.0, 1.1, "t2", RELEASE, {}),
        Op("claim", C, {A2: {"VCPU": 1}}, OK, 1.2, 1.3, "t3", EMPTY, {A2: {"VCPU": 1}}, 1),
    ]
    late = [Op("late write", C, both, OK, 2.0, 2.1, "host1", ADD, both)]
    checker = storm(ops, both)
    assert [f[0] for f in checker.verdict.failures] == ["applied twice"]
    assert explained_by(checker, late, Checker.check_registers) == {C: late}


def test_a_late_write_explains_nothing_it_does_not_account_for() -> None:
    ops, hops = the_cut_claim()
    late = late_writes(ops, hops, [("host1", ran(CLAIM, 2.43, 2.46))])
    assert explained_by(storm(ops, {RP: {"VCPU": 2}}), late, Checker.check_registers) == {}
    early = [replace(late[0], start=0.3, end=0.4)]  # landed before the release: still failing
    assert explained_by(storm(ops, {RP: {"VCPU": 1}}), early, Checker.check_registers) == {}
    assert explained_by(storm(ops, {RP: {"VCPU": 1}}), [], Checker.check_registers) == {}
    passing = storm(ops, {})
    assert (
        passing.verdict.failures == []
        and explained_by(passing, late, Checker.check_registers) == {}
    )


def test_a_late_write_leaves_a_failure_its_check_did_not_find() -> None:
    ops, hops = the_cut_claim()
    late = late_writes(ops, hops, [("host1", ran(CLAIM, 2.43, 2.46))])
    checker = storm(ops, CLAIMED)
    checker.verdict.fail("untyped error", C, "claim: KeyError")  # found on reading back
    assert explained_by(checker, late, Checker.check_registers) == {}
