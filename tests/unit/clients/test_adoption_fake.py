"""Adoption calls on the fake: subtraction, default consumer type, CAS writes, per-call retry."""

from __future__ import annotations

import pytest

import reportclient
from reportclient.fixture import FakePlacement, make_client
from tests.support.clients import client_on
from tests.support.wire import new_uuid


@pytest.fixture
def rp(fake: FakePlacement) -> str:
    return fake.create_provider(
        inventory={"VCPU": {"total": 64, "max_unit": 64}, "MEMORY_MB": {"total": 4096}}
    )


@pytest.fixture
def rp2(fake: FakePlacement) -> str:
    return fake.create_provider(inventory={"VCPU": {"total": 8, "max_unit": 8}})


@pytest.fixture
def client(fake: FakePlacement, sleeps: list[float]) -> reportclient.PlacementClient:
    return client_on(fake, sleeps, rand=1.0)


def update(client, consumer, mutate, **kwargs):
    return client.update_allocations(consumer, mutate, project_id="p", user_id="u", **kwargs)


# -- subtract_allocations ------------------------------------------------------
def test_subtracting_part_of_a_class_keeps_the_rest(fake, client, rp):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 4, "MEMORY_MB": 512}})

    state = update(client, consumer, reportclient.subtract_allocations({rp: {"VCPU": 1}}))

    assert state.allocations == {rp: {"VCPU": 3, "MEMORY_MB": 512}}
    assert fake.allocations(consumer) == {rp: {"VCPU": 3, "MEMORY_MB": 512}}


def test_a_class_subtracted_to_zero_is_removed_and_so_is_an_empty_provider(fake, client, rp, rp2):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 2, "MEMORY_MB": 512}, rp2: {"VCPU": 1}})

    state = update(
        client,
        consumer,
        reportclient.subtract_allocations({rp: {"MEMORY_MB": 512}, rp2: {"VCPU": 1}}),
    )

    assert state.allocations == {rp: {"VCPU": 2}}
    assert fake.allocations(consumer) == {rp: {"VCPU": 2}}


def test_subtracting_everything_deletes_the_consumer(fake, client, rp):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 2}})

    state = update(client, consumer, reportclient.subtract_allocations({rp: {"VCPU": 2}}))

    assert not state.exists
    assert fake.consumer_generation(consumer) is None


@pytest.mark.parametrize(
    "amounts",
    [
        pytest.param(lambda rp, rp2: {rp: {"VCPU": 3}}, id="more-than-held"),
        pytest.param(lambda rp, rp2: {rp: {"DISK_GB": 1}}, id="class-not-held"),
        pytest.param(lambda rp, rp2: {rp2: {"VCPU": 1}}, id="provider-not-held"),
    ],
)
def test_subtracting_what_is_not_held_raises_and_writes_nothing(fake, client, rp, rp2, amounts):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 2}})
    fake.reset_requests()

    with pytest.raises(reportclient.AllocationsNotHeld) as raised:
        update(client, consumer, reportclient.subtract_allocations(amounts(rp, rp2)))

    assert [r.method for r in fake.requests] == ["GET"]
    assert fake.allocations(consumer) == {rp: {"VCPU": 2}}
    assert raised.value.state.allocations == {rp: {"VCPU": 2}}
    assert raised.value.missing  # how much was asked beyond what is held
    assert raised.value.consumer_uuid == consumer


def test_the_shortfall_is_checked_again_on_the_state_a_conflict_re_reads(fake, client, rp):
    """Another writer took VCPU away between the read and the write: the retry sees it."""
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 2}})

    def shrink(_fake, record) -> None:
        if record.method == "GET" and fake.allocations(consumer) == {rp: {"VCPU": 2}}:
            fake.put_allocations(consumer, {rp: {"VCPU": 1}})

    remove = fake.between_requests(shrink)
    try:
        with pytest.raises(reportclient.AllocationsNotHeld) as raised:
            update(client, consumer, reportclient.subtract_allocations({rp: {"VCPU": 2}}))
    finally:
        remove()

    assert [(r.method, r.status) for r in fake.requests][-3:] == [
        ("GET", 200),
        ("PUT", 409),
        ("GET", 200),
    ]
    assert raised.value.missing == {rp: {"VCPU": 1}}
    assert fake.allocations(consumer) == {rp: {"VCPU": 1}}


def test_subtraction_is_not_idempotent_so_an_unsettled_lost_answer_is_outcome_unknown(
    fake, client, rp
):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 4}})
    subtract = reportclient.subtract_allocations({rp: {"VCPU": 1}})
    assert not reportclient.is_idempotent(subtract)
    fake.lose_next_response(consumer)

    with pytest.raises(reportclient.OutcomeUnknown):
        update(client, consumer, subtract)

    assert fake.allocations(consumer) == {rp: {"VCPU": 3}}  # applied once, never twice


def test_subtract_refuses_malformed_amounts_at_once():
    with pytest.raises(reportclient.InvalidInput):
        reportclient.subtract_allocations({new_uuid(): {"VCPU": 0}})


# -- default consumer type -------------------------------------------------------
def test_a_claim_creates_consumers_of_the_clients_default_type(fake, rp):
    client = make_client(fake, microversion="1.39", default_consumer_type="ACCELERATOR")
    consumer = new_uuid()

    client.claim(consumer, {rp: {"VCPU": 1}}, project_id="p", user_id="u")

    assert fake.consumer(consumer)["consumer_type"] == "ACCELERATOR"
    assert client.default_consumer_type == "ACCELERATOR"


def test_a_named_type_wins_over_the_clients_default(fake, rp):
    client = make_client(fake, microversion="1.39", default_consumer_type="ACCELERATOR")
    consumer = new_uuid()

    client.claim(
        consumer, {rp: {"VCPU": 1}}, project_id="p", user_id="u", consumer_type="MIGRATION"
    )

    assert fake.consumer(consumer)["consumer_type"] == "MIGRATION"


def test_an_existing_consumer_keeps_its_type_under_a_different_default(fake, rp):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 1}}, consumer_type="INSTANCE")
    client = make_client(fake, microversion="1.39", default_consumer_type="ACCELERATOR")
    client.get_allocations(consumer)

    client.claim(consumer, {rp: {"VCPU": 2}}, project_id="p", user_id="u")

    assert fake.allocations(consumer) == {rp: {"VCPU": 2}}
    assert fake.consumer(consumer)["consumer_type"] == "INSTANCE"


def test_write_many_creates_consumers_of_the_clients_default_type(fake, rp):
    client = make_client(fake, microversion="1.39", default_consumer_type="ACCELERATOR")
    a, b = new_uuid(), new_uuid()

    client.write_many({a: {rp: {"VCPU": 1}}, b: {rp: {"VCPU": 1}}}, project_id="p", user_id="u")

    assert fake.consumer(a)["consumer_type"] == fake.consumer(b)["consumer_type"] == "ACCELERATOR"


def test_the_default_consumer_type_is_the_one_nova_writes(fake):
    assert make_client(fake).default_consumer_type == "INSTANCE"


@pytest.mark.parametrize("bad", ["accelerator", "", "A-B", None])
def test_a_malformed_default_consumer_type_is_refused(fake, bad):
    with pytest.raises(reportclient.InvalidInput):
        make_client(fake, default_consumer_type=bad)


# -- put_allocations (caller-supplied generation) -------------------------------
def test_put_allocations_sends_the_callers_generation_once_and_returns_the_new_state(
    fake, client, rp
):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 1}})  # generation 1
    fake.reset_requests()

    state = client.put_allocations(
        consumer, {rp: {"VCPU": 3}}, consumer_generation=1, project_id="p", user_id="u"
    )

    assert [(r.method, r.status) for r in fake.requests] == [("PUT", 204)]
    assert fake.requests[0].json["consumer_generation"] == 1
    assert "consumer_type" not in fake.requests[0].json  # the consumer keeps its own
    assert fake.requests[0].microversion == "1.28"  # where a type is not required
    assert state.generation == 2 == fake.consumer_generation(consumer)
    assert client.cached(consumer) == state


def test_put_allocations_conflict_is_raised_with_the_servers_generation_and_not_retried(
    fake, client, rp, sleeps
):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 1}})
    fake.put_allocations(consumer, {rp: {"VCPU": 2}})  # generation 2
    fake.reset_requests()

    with pytest.raises(reportclient.GenerationConflict) as raised:
        client.put_allocations(
            consumer, {rp: {"VCPU": 3}}, consumer_generation=1, project_id="p", user_id="u"
        )

    assert [(r.method, r.status) for r in fake.requests] == [("PUT", 409)]
    assert raised.value.server_generation == 2
    assert raised.value.consumer_conflict
    assert "expected 2" in raised.value.detail
    assert sleeps == []
    assert fake.allocations(consumer) == {rp: {"VCPU": 2}}


def test_put_allocations_with_no_generation_creates_a_consumer_of_the_default_type(fake, rp):
    client = make_client(fake, microversion="1.39", default_consumer_type="ACCELERATOR")
    consumer = new_uuid()

    state = client.put_allocations(
        consumer, {rp: {"VCPU": 1}}, consumer_generation=None, project_id="p", user_id="u"
    )

    assert state.generation == 1
    assert fake.consumer(consumer)["consumer_type"] == "ACCELERATOR"


def test_put_allocations_lost_answer_is_outcome_unknown_and_nothing_is_read_or_resent(
    fake, client, rp
):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 1}})
    fake.reset_requests()
    fake.lose_next_response(consumer)

    with pytest.raises(reportclient.OutcomeUnknown) as raised:
        client.put_allocations(
            consumer, {rp: {"VCPU": 2}}, consumer_generation=1, project_id="p", user_id="u"
        )

    assert [r.method for r in fake.requests] == ["PUT"]
    assert raised.value.sent.consumer_generation == 1
    assert raised.value.state is None
    assert isinstance(raised.value.__cause__, reportclient.PlacementUnavailable)
    assert client.cached(consumer) is None


def test_put_allocations_empty_at_a_generation_deletes_the_consumer(fake, client, rp):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 1}})

    state = client.put_allocations(consumer, {}, consumer_generation=1, project_id="p", user_id="u")

    assert not state.exists
    assert fake.consumer_generation(consumer) is None


@pytest.mark.parametrize("generation", [None, -1, "1", True])
def test_put_allocations_refuses_what_it_cannot_send(fake, client, rp, generation):
    allocations = {} if generation is None else {rp: {"VCPU": 1}}
    with pytest.raises(reportclient.InvalidInput):
        client.put_allocations(
            new_uuid(), allocations, consumer_generation=generation, project_id="p", user_id="u"
        )
    assert fake.requests == []


# -- per-call retry ---------------------------------------------------------------
def test_a_per_call_policy_replaces_the_clients_for_that_call_only(fake, client, rp, sleeps):
    consumer = new_uuid()
    fake.conflict_next_writes(consumer, 2)

    with pytest.raises(reportclient.GenerationConflict):
        client.claim(
            consumer, {rp: {"VCPU": 1}}, project_id="p", user_id="u", retry=reportclient.NO_RETRY
        )
    assert sleeps == []

    state = client.claim(consumer, {rp: {"VCPU": 1}}, project_id="p", user_id="u")
    assert state.generation == 1
    assert len(sleeps) == 1  # the client's own policy, with its waits


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda c, x, rp: c.update_allocations(
            x, reportclient.add_allocations({rp: {"VCPU": 1}}), project_id="p", user_id="u",
            retry=reportclient.NO_RETRY), id="update_allocations"),
        pytest.param(lambda c, x, rp: c.release(x, retry=reportclient.NO_RETRY), id="release"),
        pytest.param(lambda c, x, rp: c.write_many(
            {x: {rp: {"VCPU": 2}}}, project_id="p", user_id="u", overwrite=True,
            retry=reportclient.NO_RETRY), id="write_many"),
        pytest.param(lambda c, x, rp: c.move_allocations(
            x, new_uuid(), retry=reportclient.NO_RETRY), id="move_allocations"),
    ],
)  # fmt: skip
def test_every_retried_write_takes_a_per_call_policy(fake, client, rp, sleeps, call):
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 1}})
    fake.conflict_next_writes(consumer, 1)

    with pytest.raises(reportclient.GenerationConflict):
        call(client, consumer, rp)

    assert sleeps == []
    assert [r.status for r in fake.requests if r.method in ("PUT", "POST")] == [409]


def test_a_per_call_policy_that_is_not_a_tenacity_policy_is_refused(fake, client, rp):
    with pytest.raises(reportclient.InvalidInput):
        client.claim(new_uuid(), {rp: {"VCPU": 1}}, project_id="p", user_id="u", retry=3)
    assert fake.requests == []


def test_the_neutron_guides_signed_update_adds_and_subtracts_in_one_write(fake, client, rp):
    """doc/source/migrate_neutron.rst: increases and decreases composed into one mutate."""
    import dataclasses

    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 4, "MEMORY_MB": 1024}})
    add = reportclient.add_allocations({rp: {"MEMORY_MB": 512}})
    subtract = reportclient.subtract_allocations({rp: {"VCPU": 4}})

    def mutate(current):
        return subtract(dataclasses.replace(current, allocations=add(current)))

    state = update(client, consumer, mutate)

    assert state.allocations == {rp: {"MEMORY_MB": 1536}}
    assert [r.method for r in fake.requests] == ["GET", "PUT"]
