"""The checker checked: each invariant it guards fails on a history that breaks it.

No server: a small in-memory ledger stands in for the read-back, so a checker that could never
fail (and would let the race tests pass whatever happened) is caught here, in milliseconds.
"""

from __future__ import annotations

from typing import Any

from tests.races.checker import OK, UNKNOWN, Allocs, Checker, Op

RP = "11111111-1111-4111-8111-111111111111"
C1 = "22222222-2222-4222-8222-222222222222"
C2 = "33333333-3333-4333-8333-333333333333"


class Ledger:
    """What Placement would answer, from consumers' allocations and generations."""

    def __init__(self, held: dict[str, tuple[Allocs, int]], usage_skew: int = 0) -> None:
        self.held = held
        self.usage_skew = usage_skew

    def get_allocations(self, consumer: str) -> dict[str, Any]:
        if consumer not in self.held:
            return {"allocations": {}}
        allocs, generation = self.held[consumer]
        body = {rp: {"resources": res} for rp, res in allocs.items()}
        return {"allocations": body, "consumer_generation": generation}

    def provider_allocations(self, rp: str) -> dict[str, Any]:
        return {c: {"resources": a[rp]} for c, (a, _) in self.held.items() if rp in a}

    def usages(self, rp: str) -> dict[str, int]:
        used = sum(a.get(rp, {}).get("VCPU", 0) for a, _ in self.held.values())
        return {"VCPU": used + self.usage_skew}


def vcpu(n: int) -> Allocs:
    return {RP: {"VCPU": n}}


def op(kind: str, outcome: str, start: float, end: float, **kw: Any) -> Op:
    defaults: dict[str, Any] = {"consumer": C1, "args": vcpu(1), "worker": "t"}
    return Op(kind=kind, outcome=outcome, start=start, end=end, **(defaults | kw))


def checked(ledger: Ledger, ops: list[Op], created: frozenset[str] = frozenset()) -> Checker:
    checker = Checker(ledger, [RP])  # type: ignore[arg-type]  # duck-typed PlacementAdmin
    checker.created |= created
    checker.record(ops)
    checker.read_back()
    return checker


def adds(n_ok: int, n_unknown: int) -> list[Op]:
    ok = [op("add", OK, i, i + 0.5, result=vcpu(2 + i), generation=2 + i) for i in range(n_ok)]
    return ok + [op("add", UNKNOWN, 50, 51, sent=vcpu(9))] * n_unknown


def test_adds_within_the_unknown_bound_pass() -> None:
    checker = checked(Ledger({C1: (vcpu(4), 4)}), adds(2, 2), frozenset({C1}))
    checker.check_adds(C1, vcpu(1), base_generation=1)
    assert checker.verdict.failures == []


def test_an_add_applied_twice_is_counted() -> None:
    checker = checked(Ledger({C1: (vcpu(5), 5)}), adds(2, 1), frozenset({C1}))
    checker.check_adds(C1, vcpu(1), base_generation=1)
    assert checker.verdict.applied_twice == 1


def test_a_lost_add_is_counted() -> None:
    checker = checked(Ledger({C1: (vcpu(2), 2)}), adds(2, 0), frozenset({C1}))
    checker.check_adds(C1, vcpu(1), base_generation=1)
    assert checker.verdict.lost >= 1


def test_a_claim_that_failed_yet_landed_is_a_phantom() -> None:
    ops = [op("claim", "CapacityExceeded", 0, 1)]
    checker = checked(Ledger({C1: (vcpu(1), 1)}), ops)
    checker.check_claims()
    assert checker.verdict.count("phantom") == 1


def test_a_consumer_no_client_created_is_flagged() -> None:
    checker = checked(Ledger({C1: (vcpu(1), 1), C2: (vcpu(1), 1)}), [op("claim", OK, 0, 1)])
    assert checker.verdict.count("foreign consumer") == 1


def test_usages_that_differ_from_the_allocations_are_flagged() -> None:
    checker = checked(Ledger({C1: (vcpu(1), 1)}, usage_skew=1), [op("claim", OK, 0, 1)])
    assert checker.verdict.count("usages") == 1


def test_a_register_rejects_what_only_an_overtaken_success_wrote() -> None:
    ops = [
        op("claim", OK, 0, 1, result=vcpu(1)),
        op("add", OK, 2, 3, result=vcpu(2), read=vcpu(1)),
    ]
    checker = checked(Ledger({C1: (vcpu(1), 1)}), ops)
    checker.check_registers()
    assert checker.verdict.lost == 1


def test_a_register_allows_either_of_two_overlapping_successes() -> None:
    ops = [op("claim", OK, 0, 2, result=vcpu(1)), op("add", OK, 1, 3, result=vcpu(2), read=vcpu(1))]
    checker = checked(Ledger({C1: (vcpu(1), 1)}), ops)
    checker.check_registers()
    assert checker.verdict.failures == []


def test_an_add_computed_from_a_state_only_a_failure_wrote_is_a_phantom() -> None:
    ops = [
        op("claim", "ConsumerChanged", 0, 1, args=vcpu(3)),
        op("claim", OK, 0, 1, result=vcpu(1)),
        op("add", OK, 2, 3, result=vcpu(4), read=vcpu(3)),
    ]
    checker = checked(Ledger({C1: (vcpu(4), 3)}), ops)
    checker.check_registers()
    assert checker.verdict.count("phantom") == 1
