"""What an unknown outcome reports: never "nothing written" for a write that may have landed."""

from __future__ import annotations

import dataclasses

import pytest

import reportclient
from reportclient.fixture import FakeClock, FakePlacement, make_client
from tests.support.answers import allocations_body
from tests.support.clients import update
from tests.support.hooks import once_after
from tests.support.wire import PROJECT, URL, USER, calls, new_uuid


def test_claim_whose_lost_write_others_then_built_on_is_outcome_unknown_not_consumer_changed(
    fake, sleeps
):
    a = fake.create_provider(inventory={"VCPU": 8})
    b = fake.create_provider(inventory={"VCPU": 8})
    consumer = new_uuid()
    client = make_client(
        fake, microversion="1.39", retry=reportclient.default_retry(sleep=sleeps.append)
    )
    fake.lose_next_response(consumer)
    # Another writer adds b on top of the claim that landed, before the re-read.
    once_after(
        fake,
        lambda record: record.fault == "lost",
        lambda f: f.put_allocations(
            consumer, {**f.allocations(consumer), b: {"VCPU": 4}}, project_id=PROJECT, user_id=USER
        ),
    )

    with pytest.raises(reportclient.OutcomeUnknown) as caught:
        client.claim(consumer, {a: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert not isinstance(caught.value, reportclient.ConsumerChanged)
    assert caught.value.sent.allocations == {a: {"VCPU": 1}}
    assert caught.value.sent.consumer_generation is None
    assert caught.value.state.allocations == {a: {"VCPU": 1}, b: {"VCPU": 4}}
    assert fake.allocations(consumer) == {a: {"VCPU": 1}, b: {"VCPU": 4}}


def test_outcome_unknown_after_a_5xx_carries_its_status_request_id_and_cause(wire, client):
    consumer, rp = new_uuid(), new_uuid()
    path = f"{URL}/allocations/{consumer}"
    wire.get(
        path,
        [
            {"json": allocations_body({rp: {"VCPU": 1}}, 1)},
            {"json": allocations_body({rp: {"VCPU": 2}}, 2)},
        ],
    )
    wire.put(
        path,
        status_code=507,
        text="<html>Insufficient Storage</html>",
        headers={"x-openstack-request-id": "req-22222222-2222-4222-8222-222222222222"},
    )

    with pytest.raises(reportclient.OutcomeUnknown) as caught:
        update(client, consumer, reportclient.add_allocations({rp: {"VCPU": 1}}))

    error = caught.value
    assert [m for m, _ in calls(wire)] == ["GET", "PUT", "GET"]
    assert (error.status, error.request_id) == (507, "req-22222222-2222-4222-8222-222222222222")
    assert isinstance(error.__cause__, reportclient.PlacementUnavailable)
    assert error.__cause__.status == 507
    assert "Insufficient Storage" in str(error)
    assert "generation 1 may or may not have landed" in str(error)


def test_consumer_changed_over_a_consumer_cached_as_missing_knew_nothing(wire, client):
    consumer, rp = new_uuid(), new_uuid()
    path = f"{URL}/allocations/{consumer}"
    wire.get(
        path,
        [
            {"json": {"allocations": {}}},
            {"json": allocations_body({rp: {"VCPU": 4}}, 1)},
        ],
    )
    wire.put(
        path,
        status_code=409,
        json={
            "errors": [
                {
                    "status": 409,
                    "title": "Conflict",
                    "code": "placement.concurrent_update",
                    "detail": "consumer generation conflict - expected 1 but got None",
                }
            ]
        },
    )
    client.get_allocations(consumer)  # missing

    with pytest.raises(reportclient.ConsumerChanged) as caught:
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert caught.value.known is None
    assert caught.value.state.allocations == {rp: {"VCPU": 4}}


def test_settled_state_is_not_trusted_while_the_clients_own_slow_write_may_still_land(fake, sleeps):
    a = fake.create_provider(inventory={"VCPU": 8})
    b = fake.create_provider(inventory={"VCPU": 8})
    consumer = new_uuid()
    clock = FakeClock()
    client = make_client(
        fake,
        microversion="1.39",
        cache_ttl=60,
        clock=clock,
        retry=reportclient.default_retry(sleep=sleeps.append),
    )
    client.claim(consumer, {a: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    # The verifying write is slow: it lands right after the client's re-read.
    fake.delay_next_write(consumer).apply_after(
        lambda record: (record.method, record.path) == ("GET", f"/allocations/{consumer}")
    )

    state = client.update_allocations(
        consumer, reportclient.remove_providers([b]), project_id=PROJECT, user_id=USER
    )

    assert state.allocations == {a: {"VCPU": 1}}
    assert fake.consumer_generation(consumer) == 2  # the slow write landed after the read
    fake.reset_requests()
    client.update_allocations(
        consumer, reportclient.add_allocations({a: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
    )
    # Not written from the stale generation 1: read first, then one write.
    assert [(r.method, r.status) for r in fake.requests] == [("GET", 200), ("PUT", 204)]
    assert fake.allocations(consumer) == {a: {"VCPU": 2}}


def _fail_next_write_after_commit_then(fake: FakePlacement, method: str, then) -> None:
    """The next ``method`` commits but answers 500; ``then(fake)`` runs right after it."""
    armed: list[bool] = []

    def hook(fake_: FakePlacement, record) -> None:
        if not armed and record.method == "GET":
            armed.append(True)
            fake_.fail_next(status=500, applied=True)
        elif len(armed) == 1 and record.fault == "fail-after-commit":
            assert record.method == method
            armed.append(True)
            then(fake_)

    fake.between_requests(hook)


def test_a_lost_post_reports_the_lost_answers_status_and_request_id(wire, client):
    consumer, rp = new_uuid(), new_uuid()
    wire.get(
        f"{URL}/allocations/{consumer}",
        [
            {"json": allocations_body({rp: {"VCPU": 1}}, 1)},
            {"json": allocations_body({rp: {"VCPU": 5}}, 3)},  # two writes since: ours?
        ],
    )
    wire.post(
        f"{URL}/allocations",
        status_code=502,
        text="<html>Bad Gateway</html>",
        headers={"x-openstack-request-id": "req-33333333-3333-4333-8333-333333333333"},
    )

    with pytest.raises(reportclient.OutcomeUnknown) as caught:
        client.write_many(
            {consumer: reportclient.add_allocations({rp: {"VCPU": 1}})},
            project_id=PROJECT,
            user_id=USER,
        )

    error = caught.value
    assert [m for m, _ in calls(wire)] == ["GET", "POST", "GET"]
    assert (error.status, error.request_id) == (502, "req-33333333-3333-4333-8333-333333333333")
    assert [(w.consumer_uuid, w.consumer_generation) for w in error.writes] == [(consumer, 1)]


def test_a_lost_provider_write_reports_the_lost_answers_status_and_request_id(fake, sleeps):
    rp = fake.create_provider(inventory={"VCPU": 8})
    client = make_client(
        fake, microversion="1.39", retry=reportclient.default_retry(sleep=sleeps.append)
    )
    _fail_next_write_after_commit_then(fake, "PUT", lambda f: f.set_traits(rp, ["HW_CPU_X86_AVX2"]))

    def grow(current):  # not idempotent: one more VCPU each time it runs
        vcpu = current["VCPU"]
        return {**current, "VCPU": dataclasses.replace(vcpu, total=vcpu.total + 1)}

    with pytest.raises(reportclient.OutcomeUnknown) as caught:
        client.providers.update_inventories(rp, grow)

    error = caught.value
    # The fake's 500 is a proxy's HTML page: a status, no request id.
    assert (error.status, error.request_id) == (500, None)
    assert isinstance(error.__cause__, reportclient.PlacementUnavailable)
    assert error.__cause__.status == 500
    assert error.sent.uuid == rp
