"""A provider field found untouched after a conflict is retried at once and not counted.

Every allocation against a provider moves its generation, so a scheduler
claiming on a compute node's provider makes the agent's inventory, trait and
aggregate writes conflict without anyone touching those fields. The engine
re-reads after such a conflict; when the field is as the write found it, the
write goes again at once and the policy's attempt count does not move
(issue 21: with 12 counted attempts, 0-43% of writes finished beside 100
claims/s). The policy's deadline, the engine's own bound
(``UNTOUCHED_RETRIES``), the request bound and the client's retry budget
(issue 37, tests/unit/test_retry_budget.py) still end it; a single-attempt
policy gets one.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests_mock

import reportclient
from reportclient._engine import attempts
from reportclient.fixture import FakeClock, FakePlacement, RequestRecord, make_client
from tests.support.answers import error_body
from tests.support.wire import URL, new_uuid


@pytest.fixture
def rp(fake: FakePlacement) -> str:
    return fake.create_provider(inventory={"VCPU": 1000})


def claims_after_reads(fake: FakePlacement, rp: str, reads: int | None) -> list[int]:
    """A scheduler claiming on ``rp`` right after each of the client's first ``reads`` GETs."""
    claimed: list[int] = []

    def hook(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.method == "GET" and (reads is None or len(claimed) < reads):
            fake.put_allocations(new_uuid(), {rp: {"VCPU": 1}}, project_id="p", user_id="u")
            claimed.append(1)

    fake.between_requests(hook)
    return claimed


def client_for(fake: FakePlacement, policy: Any) -> reportclient.PlacementClient:
    return make_client(fake, microversion="1.39", retry=policy, clock=FakeClock())


def puts(fake: FakePlacement) -> list[int]:
    return [r.status for r in fake.requests if r.method == "PUT"]


@pytest.mark.parametrize("write", ["set_inventory", "add_traits", "set_aggregates"])
def test_claims_beyond_the_policys_attempts_do_not_starve_a_field_write(
    fake: FakePlacement, rp: str, write: str
) -> None:
    sleeps: list[float] = []
    policy = reportclient.default_retry(attempts=3, sleep=sleeps.append, rand=lambda: 0.5)
    providers = client_for(fake, policy).providers
    # 10 conflicts, far beyond 3 attempts, within the request bound (1 + 2 per conflict + 1)
    claims_after_reads(fake, rp, reads=10)

    if write == "set_inventory":
        providers.set_inventory(rp, "MEMORY_MB", 1024)
        assert set(fake.inventory(rp)) == {"VCPU", "MEMORY_MB"}
    elif write == "add_traits":
        providers.add_traits(rp, ["HW_CPU_X86_AVX2"])
        assert fake.traits(rp) == {"HW_CPU_X86_AVX2"}
    else:
        agg = new_uuid()
        providers.set_aggregates(rp, [agg])
        assert fake.aggregates(rp) == {agg}

    assert puts(fake)[:10] == [409] * 10 and len(puts(fake)) == 11
    assert sleeps == [0.0] * 10  # never a contention backoff
    assert fake.usages(rp)["VCPU"] == 10  # the claims all landed, untouched


def test_real_contention_on_the_field_still_counts_and_backs_off(
    fake: FakePlacement, rp: str
) -> None:
    """Another writer of the inventory itself is contention: counted, and waited out."""
    sleeps: list[float] = []
    policy = reportclient.default_retry(attempts=3, sleep=sleeps.append, rand=lambda: 0.5)
    providers = client_for(fake, policy).providers
    totals = iter(range(100, 200))

    def hook(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.method == "GET":
            fake.set_inventory(rp, {"VCPU": next(totals)})

    fake.between_requests(hook)

    with pytest.raises(reportclient.GenerationConflict) as caught:
        providers.set_inventory(rp, "MEMORY_MB", 1024)

    assert caught.value.attempts == 3
    assert puts(fake) == [409, 409, 409]
    assert all(s > 0 for s in sleeps) and len(sleeps) == 2


def test_untouched_retries_are_bounded_by_the_engine(
    fake: FakePlacement, rp: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generation that moves after every read, forever: counted attempts + the bound."""
    monkeypatch.setattr(attempts, "UNTOUCHED_RETRIES", 5)
    policy = reportclient.default_retry(attempts=3, sleep=lambda s: None)
    providers = client_for(fake, policy).providers
    claims_after_reads(fake, rp, reads=None)

    with pytest.raises(reportclient.GenerationConflict) as caught:
        providers.set_inventory(rp, "MEMORY_MB", 1024)

    assert caught.value.attempts == 3 + 5
    assert puts(fake) == [409] * 8
    assert set(fake.inventory(rp)) == {"VCPU"}


def test_untouched_retries_stop_at_the_policys_deadline(fake: FakePlacement, rp: str) -> None:
    """The deadline is time, not attempts: it still ends an operation of untouched retries."""
    import tenacity

    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(50) | tenacity.stop_after_delay(0),
        sleep=lambda s: None,
    )
    providers = client_for(fake, policy).providers
    claims_after_reads(fake, rp, reads=None)

    with pytest.raises(reportclient.GenerationConflict) as caught:
        providers.set_inventory(rp, "MEMORY_MB", 1024)

    assert caught.value.attempts == 1
    assert puts(fake) == [409]


def test_a_single_attempt_policy_gets_one_attempt(fake: FakePlacement, rp: str) -> None:
    providers = client_for(fake, reportclient.no_retry()).providers
    claims_after_reads(fake, rp, reads=1)

    with pytest.raises(reportclient.GenerationConflict):
        providers.set_inventory(rp, "MEMORY_MB", 1024)

    assert puts(fake) == [409]


IN_SERVER_RACE = (
    "There was a conflict when trying to complete your request.\n\n Update conflict: "
    "Another thread concurrently updated the data. Please retry your update  "
)


def inventories(generation: int) -> dict[str, Any]:
    return {
        "status_code": 200,
        "json": {
            "resource_provider_generation": generation,
            "inventories": {
                "VCPU": {
                    "total": 8,
                    "reserved": 0,
                    "min_unit": 1,
                    "max_unit": 8,
                    "step_size": 1,
                    "allocation_ratio": 1.0,
                }
            },
        },
    }


def test_an_in_server_race_on_an_untouched_field_is_retried_at_once(
    wire: requests_mock.Mocker, client: reportclient.PlacementClient, sleeps: list[float]
) -> None:
    """Placement's own generation bump lost to a claim (the handler's check had passed).

    Placement 16.0.0 words it "Update conflict: Another thread concurrently
    updated the data" (placement/handlers/inventory.py, ConcurrentUpdateDetected
    from the generation increment), not "resource provider generation conflict";
    what decides the wait is the re-read, not the wording.
    """
    rp = new_uuid()
    path = f"{URL}/resource_providers/{rp}/inventories"
    wire.get(path, [inventories(1), inventories(2)])
    race = {
        "status_code": 409,
        "json": error_body(409, IN_SERVER_RACE, "placement.concurrent_update"),
    }
    wire.put(path, [race, inventories(4)])

    client.providers.set_inventory(rp, "VCPU", 16)

    assert sleeps == [0.0]
    assert [r.method for r in wire.request_history] == ["GET", "PUT", "GET", "PUT"]
    assert wire.request_history[-1].json()["resource_provider_generation"] == 2


def test_a_touched_field_waits_and_then_reads_again(
    wire: requests_mock.Mocker, client: reportclient.PlacementClient, sleeps: list[float]
) -> None:
    """The look's read shows another writer of the field: it serves no write after the wait.

    A write computed from it would carry a generation as old as the wait is
    long and collide again, and its conflict would count every write that
    landed during the wait as a crowd (measured at 64 writers on one
    consumer: a third of the retries were sent from such a read, and their
    windows hit the policy's cap).
    """
    rp = new_uuid()
    path = f"{URL}/resource_providers/{rp}/inventories"
    touched = inventories(2)
    touched["json"]["inventories"]["VCPU"]["total"] = 4
    after_wait = inventories(7)
    after_wait["json"]["inventories"]["VCPU"]["total"] = 4
    wire.get(path, [inventories(1), touched, after_wait])
    race = {
        "status_code": 409,
        "json": error_body(409, IN_SERVER_RACE, "placement.concurrent_update"),
    }
    wire.put(path, [race, inventories(8)])

    client.providers.set_inventory(rp, "VCPU", 16)

    assert len(sleeps) == 1 and sleeps[0] > 0
    assert [r.method for r in wire.request_history] == ["GET", "PUT", "GET", "GET", "PUT"]
    assert wire.request_history[-1].json()["resource_provider_generation"] == 7
