"""The client's retry budget and the request bound: every retry spends, none may amplify.

Issue 37: beside claims on a saturated Placement, writers re-sent for their
whole deadline (untouched-field retries were neither waited nor counted),
and one ``set_inventory`` under ``stop_after_attempt(3)`` sent 253 PUTs and
254 GETs. The decision is pure (``reportclient._budget``) and tabled here;
the rest drives the client on the fake with a fake clock, no sleeps.
"""

from __future__ import annotations

import threading

import pytest
import tenacity

import reportclient
from reportclient._budget import GiveUp, allows, current, next_retry, operation
from reportclient.fixture import FakeClock, FakePlacement, RequestRecord, make_client
from tests.support.wire import new_uuid


@pytest.mark.parametrize(
    ("firsts", "retries", "ratio", "floor", "window", "allowed"),
    [
        (0, 0, 0.2, 1.0, 10.0, True),  # a quiet client keeps its floor
        (0, 9, 0.2, 1.0, 10.0, True),  # the tenth retry of the floor
        (0, 10, 0.2, 1.0, 10.0, False),  # the floor spent
        (100, 29, 0.2, 1.0, 10.0, True),  # 20 from first attempts + 10 from the floor
        (100, 30, 0.2, 1.0, 10.0, False),
        (5, 0, 0.2, 0.0, 10.0, True),  # one retry in five first attempts
        (4, 0, 0.2, 0.0, 10.0, False),
        (1000, 0, 0.0, 0.0, 10.0, False),  # a budget of nothing refuses every retry
    ],
)
def test_budget_allows_retries_up_to_ratio_of_first_attempts_plus_the_floor(
    firsts: int, retries: int, ratio: float, floor: float, window: float, allowed: bool
) -> None:
    assert allows(firsts, retries, ratio=ratio, floor=floor, window=window) is allowed


@pytest.mark.parametrize(
    ("policy_stops", "requests", "cost", "why"),
    [
        (True, 0, 3, GiveUp.POLICY),  # the policy is asked first: its stop is never overload
        (True, 31, 3, GiveUp.POLICY),
        (False, 29, 3, None),  # 29 + 3 = 32: the last attempt fits
        (False, 30, 3, GiveUp.BOUND),
        (False, 31, 1, None),  # a read's try costs one
        (False, 32, 1, GiveUp.BOUND),
    ],
)
def test_next_retry_asks_the_policy_then_the_request_bound(
    policy_stops: bool, requests: int, cost: int, why: GiveUp | None
) -> None:
    assert next_retry(policy_stops=policy_stops, requests=requests, cost=cost, bound=32) is why


def test_budget_window_slides_with_the_clock() -> None:
    clock = FakeClock()
    budget = reportclient.RetryBudget(ratio=0.0, floor=0.2, window=10.0, clock=clock)
    assert [budget.try_withdraw() for _ in range(3)] == [True, True, False]
    clock.advance(5.0)
    assert not budget.try_withdraw()  # both retries are still in the window
    clock.advance(5.0)
    assert budget.try_withdraw()  # the first two fell out of it
    assert budget.stats() == reportclient.retry.BudgetStats(0, 3, 2)


def test_a_refund_gives_back_the_newest_retry_in_the_window() -> None:
    clock = FakeClock()
    budget = reportclient.RetryBudget(ratio=0.0, floor=0.2, window=10.0, clock=clock)
    assert [budget.try_withdraw() for _ in range(3)] == [True, True, False]
    budget.refund()
    assert budget.try_withdraw()  # one came back
    assert not budget.try_withdraw()
    assert budget.stats() == reportclient.retry.BudgetStats(0, 3, 2, refunded=1)


def test_a_refund_after_the_retries_left_the_window_gives_nothing_back() -> None:
    """A retry out of the window no longer counts: refunding it would lend a spare token."""
    clock = FakeClock()
    budget = reportclient.RetryBudget(ratio=0.0, floor=0.2, window=10.0, clock=clock)
    assert [budget.try_withdraw() for _ in range(2)] == [True, True]
    clock.advance(10.0)
    budget.refund()
    assert [budget.try_withdraw() for _ in range(3)] == [True, True, False]
    assert budget.stats().refunded == 0


def test_a_refund_gives_back_its_own_charge_not_another_operations() -> None:
    """Issue 49: a retry that succeeded after its own charge aged out (a read that waited
    out a long timeout) must not give back another operation's failed retry."""
    clock = FakeClock()
    budget = reportclient.RetryBudget(ratio=0.0, floor=0.2, window=10.0, clock=clock)
    mine = budget.charge()
    assert mine is not None
    clock.advance(10.0)  # the slow retry's charge leaves the window
    theirs = budget.charge()  # another operation's retry, which will fail
    assert theirs is not None
    budget.refund(mine)  # the slow retry succeeds now
    assert budget.stats().refunded == 0
    assert budget.try_withdraw()  # the floor allows 2 in the window: theirs and one more
    assert not budget.try_withdraw()


def test_a_refund_of_a_charge_in_the_window_gives_that_one_back() -> None:
    clock = FakeClock()
    budget = reportclient.RetryBudget(ratio=0.0, floor=0.2, window=10.0, clock=clock)
    first = budget.charge()
    clock.advance(5.0)
    assert budget.charge() is not None
    assert budget.charge() is None  # two in the window: none left
    budget.refund(first)
    assert budget.try_withdraw()  # its token came back
    assert not budget.try_withdraw()
    assert budget.stats().refunded == 1


def test_first_attempts_refill_the_budget() -> None:
    budget = reportclient.RetryBudget(ratio=0.5, floor=0.0, clock=FakeClock())
    assert not budget.try_withdraw()
    budget.deposit()
    budget.deposit()
    assert budget.try_withdraw()
    assert not budget.try_withdraw()


def test_budget_is_one_count_across_threads() -> None:
    budget = reportclient.RetryBudget(ratio=0.0, floor=5.0, window=10.0, clock=FakeClock())
    granted: list[bool] = []
    start = threading.Barrier(8)

    def spend() -> None:
        start.wait()
        for _ in range(20):
            granted.append(budget.try_withdraw())

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert granted.count(True) == 50


def test_an_operation_deposits_once_however_many_requests_it_nests() -> None:
    budget = reportclient.RetryBudget(clock=FakeClock())
    with operation(budget) as outer, operation(budget) as inner:
        assert inner is outer
    assert budget.stats().first_attempts == 1


def test_an_operation_ends_with_its_outermost_scope_even_on_an_error() -> None:
    """A nested scope's error leaves the outer operation current; the outer one's ends it."""
    budget = reportclient.RetryBudget(clock=FakeClock())
    with pytest.raises(KeyError), operation(budget) as outer:
        with pytest.raises(ValueError), operation(budget):
            raise ValueError
        assert current() is outer
        raise KeyError
    assert current() is None
    with operation(budget) as after:
        assert after is not outer
    assert budget.stats().first_attempts == 2


@pytest.mark.parametrize(
    "kwargs",
    [{"ratio": -0.1}, {"floor": float("nan")}, {"window": 0}, {"ratio": True}],
)
def test_budget_refuses_values_it_cannot_use(kwargs: dict[str, float]) -> None:
    with pytest.raises(reportclient.InvalidInput):
        reportclient.RetryBudget(**kwargs)


def test_client_refuses_a_budget_that_is_not_one() -> None:
    fake = FakePlacement()
    with pytest.raises(reportclient.InvalidInput, match="retry_budget"):
        make_client(fake, retry_budget=0.2)


# -- the engine's retries spend from it -------------------------------------------------


def budgeted(
    fake: FakePlacement, budget: reportclient.RetryBudget, clock: FakeClock | None = None
) -> reportclient.PlacementClient:
    """A client of ``fake`` spending from ``budget``, under the default policy without sleeps."""
    return make_client(
        fake,
        microversion="1.39",
        retry=reportclient.default_retry(sleep=lambda s: None),
        retry_budget=budget,
        **({} if clock is None else {"clock": clock}),
    )


def claims_after_every_read(fake: FakePlacement, rp: str) -> None:
    """A scheduler's claim on ``rp`` after each GET: the field stays untouched, forever."""

    def hook(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.method == "GET":
            fake.put_allocations(new_uuid(), {rp: {"VCPU": 1}}, project_id="p", user_id="u")

    fake.between_requests(hook)


def test_an_empty_budget_ends_untouched_retries_in_placement_overloaded() -> None:
    """Untouched retries are not counted by the policy, but each one spends from the budget."""
    fake = FakePlacement()
    rp = fake.create_provider(inventory={"VCPU": 1000})
    budget = reportclient.RetryBudget(ratio=0.0, floor=0.4, window=10.0, clock=FakeClock())
    client = budgeted(fake, budget)
    claims_after_every_read(fake, rp)

    with pytest.raises(reportclient.PlacementOverloaded) as caught:
        client.providers.set_inventory(rp, "MEMORY_MB", 1024)

    err = caught.value
    assert [r.status for r in fake.requests if r.method == "PUT"] == [409] * 5  # 1 + 4 retries
    assert budget.stats() == reportclient.retry.BudgetStats(1, 4, 1)
    assert isinstance(err.last, reportclient.GenerationConflict)
    assert err.outcome_unknown is False and isinstance(err, reportclient.PlacementUnavailable)
    assert str(err).startswith(f"Request {err.last.request_id}: PUT ")
    assert "its retries went to conflicts with other writers" in str(err)  # not "overloaded"
    assert isinstance(err.__cause__, reportclient.GenerationConflict)


def test_a_write_that_may_have_landed_stays_outcome_unknown_when_the_budget_is_empty() -> None:
    """A lost answer, then an empty budget: the caller must hear that the write may land."""
    fake = FakePlacement()
    rp = fake.create_provider(inventory={"VCPU": 8})
    consumer = new_uuid()
    budget = reportclient.RetryBudget(ratio=0.0, floor=0.0, clock=FakeClock())
    client = budgeted(fake, budget)
    # The claim's PUT lands but its answer is lost; the read after it gets a 503.
    fake.lose_next_response(consumer)

    def hook(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.fault == "lost":
            fake.fail_next(1, 503)

    fake.between_requests(hook)

    with pytest.raises(reportclient.OutcomeUnknown):
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id="p", user_id="u")
    assert budget.stats().refused == 1
    assert fake.usages(rp)["VCPU"] == 1  # it had landed


def test_no_policy_sends_more_than_the_request_bound() -> None:
    """Issue 37: stop_after_attempt(3) under constant in-server races sent 253 PUTs + 254 GETs."""
    fake = FakePlacement()
    rp = fake.create_provider(inventory={"VCPU": 10_000})
    client = make_client(
        fake,
        microversion="1.39",
        retry=tenacity.Retrying(stop=tenacity.stop_after_attempt(3), sleep=lambda s: None),
        retry_budget=None,  # the bound alone
        clock=FakeClock(),
    )
    claims_after_every_read(fake, rp)

    with pytest.raises(reportclient.GenerationConflict):
        client.providers.set_inventory(rp, "MEMORY_MB", 1024)

    sent = [r for r in fake.requests if r.method in ("GET", "PUT")]
    assert len(sent) <= reportclient.MAX_REQUESTS
    assert len(sent) >= reportclient.MAX_REQUESTS - 3  # it was the bound that stopped it


def test_a_healthy_client_never_meets_its_budget() -> None:
    """Writes that land at once spend nothing; reads deposit like any first attempt."""
    fake = FakePlacement()
    rp = fake.create_provider(inventory={"VCPU": 100})
    client = make_client(fake, microversion="1.39", clock=FakeClock())
    for _ in range(5):
        consumer = new_uuid()
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id="p", user_id="u")
        client.get_allocations(consumer)
    stats = client._core.budget.stats()  # type: ignore[union-attr]
    assert stats.retries == 0 and stats.first_attempts == 10


def test_every_step_of_a_reconcile_is_a_first_attempt_of_its_own() -> None:
    """A reconcile is not one operation: each request it begins deposits, as any call's does.

    Issue 37's saturation benchmark (PostgreSQL 0.8x) saw an agent's reconcile refused
    by its own budget; this pins that the refusal is not for want of deposits: the
    listing, the create and each field write deposit one each, and in the agent setting a
    write at a generation that claims moved since is one first attempt and one retry.
    """
    fake = FakePlacement()
    clock = FakeClock()
    budget = reportclient.RetryBudget(clock=clock)
    client = budgeted(fake, budget, clock)
    rp = new_uuid()

    def spec(total: int) -> reportclient.ProviderSpec:
        inventory = {"VCPU": reportclient.Inventory(total=total)}
        return reportclient.ProviderSpec(
            rp, "cn1", inventories=inventory, traits=["HW_CPU_X86_SSE"]
        )

    client.providers.reconcile([spec(8)], max_staleness=300)
    sent = [(r.method, r.status) for r in fake.requests]
    assert sent == [
        ("GET", 200),
        ("POST", 200),
        ("PUT", 200),
        ("PUT", 200),
    ]  # list, create, 2 fields
    assert budget.stats() == reportclient.retry.BudgetStats(4, 0, 0)

    fake.put_allocations(new_uuid(), {rp: {"VCPU": 1}}, project_id="p", user_id="u")
    before = len(fake.requests)
    client.providers.reconcile([spec(16)], max_staleness=300)
    sent = [(r.method, r.status) for r in fake.requests[before:]]
    assert sent == [("PUT", 409), ("GET", 200), ("PUT", 200)]  # the cached generation, then read
    # The retry succeeded, so its token came back.
    assert budget.stats() == reportclient.retry.BudgetStats(5, 1, 0, refunded=1)


# -- a retry that succeeds is given back ------------------------------------------------


def claims_after_the_next_reads(fake: FakePlacement, rp: str, reads: int) -> None:
    """A scheduler's claim on ``rp`` after each of the next ``reads`` GETs, then none."""
    left = [reads]

    def hook(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.method == "GET" and left[0] > 0:
            left[0] -= 1
            fake.put_allocations(new_uuid(), {rp: {"VCPU": 1}}, project_id="p", user_id="u")

    fake.between_requests(hook)


@pytest.mark.parametrize(
    ("lost_races", "charged"),
    [
        (0, 0),  # the first retry lands: given back
        (1, 1),  # one retry lost again to a claim, the next lands
        (3, 3),
    ],
)
def test_only_the_retries_that_fail_are_charged(lost_races: int, charged: int) -> None:
    """A write whose retry lands gets that retry's token back; the ones before it are spent.

    A claim follows the write's first read, so its first PUT conflicts; a claim follows
    each of the next ``lost_races`` reads too, so that many retries conflict as well, and
    the one after them lands.
    """
    fake = FakePlacement()
    clock = FakeClock()
    rp = fake.create_provider(inventory={"VCPU": 1000})
    budget = reportclient.RetryBudget(clock=clock)
    client = budgeted(fake, budget, clock)
    claims_after_the_next_reads(fake, rp, lost_races + 1)

    client.providers.set_inventory(rp, "MEMORY_MB", 2048)

    stats = budget.stats()
    puts = [r.status for r in fake.requests if r.method == "PUT"]
    assert puts == [409] * (lost_races + 1) + [200]
    assert stats.retries == lost_races + 1 and stats.refunded == 1
    assert stats.retries - stats.refunded == charged


def test_a_writer_losing_races_to_claims_keeps_writing_where_it_was_refused() -> None:
    """Issue 37's gap in small: each write meets one claim, and its retry lands.

    Before the refund a budget of 4 retries a window ended the fifth such write in
    PlacementOverloaded although every retry had landed; now none is charged.
    """
    fake = FakePlacement()
    clock = FakeClock()
    rp = fake.create_provider(inventory={"VCPU": 1000})
    budget = reportclient.RetryBudget(ratio=0.0, floor=0.4, window=10.0, clock=clock)
    client = budgeted(fake, budget, clock)
    for n in range(1, 11):
        claims_after_the_next_reads(fake, rp, 1)
        client.providers.set_inventory(rp, "MEMORY_MB", n)  # conflicts once, then lands
    assert budget.stats() == reportclient.retry.BudgetStats(10, 10, 0, refunded=10)
    assert [r.status for r in fake.requests if r.method == "PUT"] == [409, 200] * 10
    assert fake.inventory(rp)["MEMORY_MB"].total == 10


@pytest.mark.parametrize("failures", [1, 2])
def test_a_read_sent_again_and_answered_gives_its_token_back(failures: int) -> None:
    """A typed GET retried past 503s is charged for the tries that failed, not the last."""
    fake = FakePlacement()
    clock = FakeClock()
    rp = fake.create_provider(inventory={"VCPU": 8})
    budget = reportclient.RetryBudget(clock=clock)
    client = budgeted(fake, budget, clock)
    fake.fail_next(failures, 503)
    assert client.providers.get_provider(rp).uuid == rp
    assert budget.stats() == reportclient.retry.BudgetStats(1, failures, 0, refunded=1)


def test_a_raw_read_sent_again_and_answered_gives_its_token_back() -> None:
    fake = FakePlacement()
    clock = FakeClock()
    budget = reportclient.RetryBudget(clock=clock)
    client = budgeted(fake, budget, clock)
    fake.fail_next(1, 503)
    assert client.request("GET", "/resource_providers").status == 200
    assert budget.stats() == reportclient.retry.BudgetStats(1, 1, 0, refunded=1)


def test_a_raw_read_inside_an_operation_gives_back_only_its_own_retries() -> None:
    """The outer operation's granted retry is not the read's: a read sent once refunds nothing."""
    fake = FakePlacement()
    clock = FakeClock()
    budget = reportclient.RetryBudget(clock=clock)
    client = budgeted(fake, budget, clock)
    with operation(budget) as outer:
        assert outer.retry(policy_stops=False, cost=1) is None  # the outer one's retry
        assert client.request("GET", "/resource_providers").status == 200
    assert budget.stats() == reportclient.retry.BudgetStats(1, 1, 0, refunded=0)
