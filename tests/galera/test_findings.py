"""The Placement-side findings move a failure out of the client's columns only with full proof."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from reportclient.testing._app import EVIDENCE_LOG
from tests.galera.findings import (
    bypassed,
    check_with_orphans,
    cleaned_up,
    deleted_by_empty_write,
    explain_adds,
    explain_usages,
    refused_but_landed,
    restore_orphans,
    retried_requests,
)
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
