"""Unknown outcomes on requests-mock: exact wire sequences after a write's answer is lost.

A write carrying generation N lands only while Placement holds N. After a
lost answer (reset, read timeout, any 5xx) the client re-reads and decides by
generation arithmetic; a mutation that is not idempotent is never risked
twice (OutcomeUnknown), an idempotent one is settled by content. The same
scenarios on the fake Placement's fault injection are in
test_outcomes_fake.py.
"""

from __future__ import annotations

import pytest
import requests

import reportclient
from tests.support.answers import MISSING, NO_CONTENT, allocations_body, error_body
from tests.support.wire import PROJECT, URL, USER, calls, new_uuid, sent

A, B = new_uuid(), new_uuid()
RESET = {"exc": requests.exceptions.ConnectionError("reset")}
TIMEOUT = {"exc": requests.exceptions.ReadTimeout("slow")}
UNAVAILABLE = {"status_code": 503, "text": "<html>503 Service Unavailable</html>"}


def held(allocations, generation):
    return {"json": allocations_body(allocations, generation)}


def methods(wire) -> list[str]:
    return [m for m, _ in calls(wire)]


def add_one_on_a(client, consumer):
    return client.update_allocations(
        consumer, reportclient.add_allocations({A: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
    )


def update(client, consumer, mutate):
    return client.update_allocations(consumer, mutate, project_id=PROJECT, user_id=USER)


def claim(client, consumer, allocations):
    return client.claim(consumer, allocations, project_id=PROJECT, user_id=USER)


def script(wire, consumer, gets, puts):
    wire.get(f"{URL}/allocations/{consumer}", gets)
    wire.put(f"{URL}/allocations/{consumer}", puts)


# -- a mutation that is not idempotent is never risked twice ------------------------


@pytest.mark.parametrize("lost", [RESET, TIMEOUT], ids=["reset", "timeout"])
def test_lost_add_then_another_writer_before_the_reread_is_outcome_unknown(
    wire, client, consumer, lost
):
    other = {A: {"VCPU": 2}, B: {"VCPU": 1}}
    script(wire, consumer, [held({A: {"VCPU": 1}}, 1), held(other, 3)], [lost])

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        add_one_on_a(client, consumer)

    assert methods(wire) == ["GET", "PUT", "GET"]
    assert err.value.sent == reportclient.AllocationWrite(
        consumer, {A: {"VCPU": 2}}, 1, PROJECT, USER, None
    )
    assert err.value.state.generation == 3
    assert err.value.state.allocations == other


def test_lost_add_whose_reread_fails_is_judged_by_the_next_read_and_not_resent(
    wire, client, sleeps, consumer
):
    script(
        wire,
        consumer,
        [held({A: {"VCPU": 1}}, 1), UNAVAILABLE, held({A: {"VCPU": 2}}, 2)],
        [RESET],
    )

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        add_one_on_a(client, consumer)

    # N+1 holding exactly what was sent: ours, or another writer's same write
    assert methods(wire) == ["GET", "PUT", "GET", "GET"]
    assert err.value.state.generation == 2
    assert sleeps == [1.5]


@pytest.mark.parametrize("status", [500, 507])
def test_server_error_after_an_add_is_an_unknown_outcome(wire, client, consumer, status):
    script(
        wire,
        consumer,
        [held({A: {"VCPU": 1}}, 1), held({A: {"VCPU": 2}}, 2)],
        [{"status_code": status, "json": error_body(500, "boom")}],
    )

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        add_one_on_a(client, consumer)

    assert methods(wire) == ["GET", "PUT", "GET"]
    assert err.value.sent.consumer_generation == 1
    assert err.value.state.generation == 2
    # the write's own answer is in the chain
    assert isinstance(err.value.__context__, reportclient.PlacementUnavailable)
    assert err.value.__context__.status == status


def test_lost_add_that_did_not_land_is_retried_carrying_the_same_generation(
    wire, client, sleeps, consumer
):
    script(
        wire,
        consumer,
        [held({A: {"VCPU": 1}}, 1), held({A: {"VCPU": 1}}, 1)],
        [RESET, NO_CONTENT],
    )

    state = add_one_on_a(client, consumer)

    assert methods(wire) == ["GET", "PUT", "GET", "PUT"]
    assert sent(wire, 3) == sent(wire, 1)
    assert sent(wire, 3)["consumer_generation"] == 1
    assert sent(wire, 3)["allocations"] == {A: {"resources": {"VCPU": 2}}}
    assert state.generation == 2
    assert sleeps == [1.5]


def test_lost_add_overtaken_by_one_other_write_is_recomputed_from_the_reread(
    wire, client, consumer
):
    other = {A: {"VCPU": 1}, B: {"VCPU": 1}}
    script(wire, consumer, [held({A: {"VCPU": 1}}, 1), held(other, 2)], [RESET, NO_CONTENT])

    state = add_one_on_a(client, consumer)

    # generation 2 holds other allocations than ours: ours can never land
    assert methods(wire) == ["GET", "PUT", "GET", "PUT"]
    assert sent(wire, 3)["consumer_generation"] == 2
    assert sent(wire, 3)["allocations"] == {
        A: {"resources": {"VCPU": 2}},
        B: {"resources": {"VCPU": 1}},
    }
    assert state.generation == 3


def test_lost_add_whose_consumer_is_then_deleted_is_outcome_unknown(wire, client, consumer):
    script(wire, consumer, [held({A: {"VCPU": 1}}, 1), MISSING], [RESET])

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        add_one_on_a(client, consumer)

    assert methods(wire) == ["GET", "PUT", "GET"]
    assert not err.value.state.exists


# -- idempotent operations are settled by content -----------------------------------


def test_lost_remove_providers_that_landed_is_success_without_a_second_write(
    wire, client, consumer
):
    script(
        wire,
        consumer,
        [held({A: {"VCPU": 1}, B: {"VCPU": 1}}, 1), held({B: {"VCPU": 1}}, 2)],
        [RESET],
    )

    state = update(client, consumer, reportclient.remove_providers([A]))

    assert methods(wire) == ["GET", "PUT", "GET"]
    assert state.allocations == {B: {"VCPU": 1}}
    assert state.generation == 2


def test_lost_idempotent_write_of_unknown_fate_is_never_written_again(wire, client, consumer):
    """Two writes since ours: it may have landed and been undone; writing again could clobber."""
    changed = {A: {"VCPU": 1}, B: {"VCPU": 2}}  # generation 3: two writes since ours
    script(
        wire,
        consumer,
        [held({A: {"VCPU": 1}, B: {"VCPU": 1}}, 1), held(changed, 3)],
        [RESET, NO_CONTENT],
    )

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        update(client, consumer, reportclient.remove_providers([A]))

    assert methods(wire) == ["GET", "PUT", "GET"]
    assert err.value.state.allocations == changed


def only_b(current):
    return {rp: dict(res) for rp, res in current.allocations.items() if rp == B}


@pytest.mark.parametrize(
    ("mutate", "settled"),
    [(reportclient.idempotent(only_b), True), (only_b, False)],
    ids=["declared-idempotent", "undeclared"],
)
def test_lost_custom_mutate_that_landed_is_settled_only_if_declared_idempotent(
    wire, client, consumer, mutate, settled
):
    script(
        wire,
        consumer,
        [held({A: {"VCPU": 1}, B: {"VCPU": 1}}, 1), held({B: {"VCPU": 1}}, 2)],
        [RESET],
    )

    if settled:
        assert update(client, consumer, mutate).allocations == {B: {"VCPU": 1}}
    else:
        with pytest.raises(reportclient.OutcomeUnknown):
            update(client, consumer, mutate)

    assert methods(wire) == ["GET", "PUT", "GET"]


def test_lost_release_that_landed_is_success(wire, client, consumer):
    script(wire, consumer, [held({A: {"VCPU": 1}}, 4), MISSING], [RESET])

    client.release(consumer)

    assert methods(wire) == ["GET", "PUT", "GET"]
    assert sent(wire, 1)["consumer_generation"] == 4
    assert not client.cached(consumer).exists


# -- claims ---------------------------------------------------------------------------


def test_lost_claim_whose_reread_fails_is_success_once_a_read_shows_it(
    wire, client, sleeps, consumer
):
    script(wire, consumer, [UNAVAILABLE, held({A: {"VCPU": 8}}, 1)], [RESET])

    state = claim(client, consumer, {A: {"VCPU": 8}})

    assert methods(wire) == ["PUT", "GET", "GET"]
    assert state.generation == 1
    assert state.allocations == {A: {"VCPU": 8}}
    assert sleeps == [1.5]


def test_capacity_refusal_while_a_lost_claim_may_still_land_is_outcome_unknown(
    wire, client, consumer
):
    capacity = error_body(
        409,
        f"Unable to allocate inventory: Unable to create allocation for 'VCPU' on "
        f"resource provider '{A}'. The requested amount would exceed the capacity.",
    )
    before = held({A: {"VCPU": 1}}, 1)
    script(wire, consumer, [before, before], [TIMEOUT, {"status_code": 409, "json": capacity}])

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        update(client, consumer, reportclient.replace_allocations({A: {"VCPU": 8}}))

    # the first PUT, still in flight, may land: "nothing allocated" would be a lie
    assert methods(wire) == ["GET", "PUT", "GET", "PUT"]
    assert err.value.sent.consumer_generation == 1
    assert isinstance(err.value.__cause__, reportclient.CapacityExceeded)
