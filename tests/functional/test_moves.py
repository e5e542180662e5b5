"""Moves and multi-consumer writes against the real Placement."""

from __future__ import annotations

import pytest
import requests

import reportclient
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import PROJECT, USER, Real, held, make_client, new_id, raw_body, wire
from tests.functional._scheduling import hooked_client

VCPU_2 = {"VCPU": 2}


def _instance(admin: PlacementAdmin, rp: str, amounts: dict[str, int] = VCPU_2) -> str:
    vm = new_id()
    assert admin.put_allocations(vm, raw_body({rp: amounts}, None)).status_code == 204
    return vm


def test_move_to_a_new_migration_record_is_one_post_and_keeps_usage(real: Real) -> None:
    client = real.client()
    vm, migration = _instance(real.admin, real.node), new_id()
    before = real.admin.usages(real.node)["VCPU"]
    real.placement.clear_requests_seen()

    move = client.move_allocations(vm, migration, target_consumer_type="MIGRATION")

    assert real.wire() == [
        ("GET", f"/allocations/{vm}", 200),
        ("GET", f"/allocations/{migration}", 200),
        ("POST", "/allocations", 204),
    ]
    assert real.admin.get_allocations(vm) == {"allocations": {}}
    raw = real.admin.get_allocations(migration)
    assert held(raw) == {real.node: VCPU_2}
    assert raw["consumer_type"] == "MIGRATION" and raw["project_id"] == PROJECT
    assert raw["consumer_generation"] == move.target.generation == 1
    assert real.admin.usages(real.node)["VCPU"] == before


def test_move_of_a_consumer_holding_nothing_is_nothing_to_move(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement)
    with pytest.raises(reportclient.NothingToMove):
        client.move_allocations(new_id(), new_id())
    assert [m for m, _, _ in wire(real_placement)][-1] == "GET"


def test_move_onto_a_target_holding_unexpected_allocations_writes_nothing(real: Real) -> None:
    client = real.client()
    vm = _instance(real.admin, real.node)
    target = _instance(real.admin, real.node, {"VCPU": 1})

    with pytest.raises(reportclient.ConsumerChanged):
        client.move_allocations(vm, target)

    assert held(real.admin.get_allocations(vm)) == {real.node: VCPU_2}
    assert held(real.admin.get_allocations(target)) == {real.node: {"VCPU": 1}}


def test_move_conflict_rereads_both_and_moves_what_the_source_holds_then(real: Real) -> None:
    vm, migration = _instance(real.admin, real.node), new_id()
    acted = []

    def grow_source_after_target_read(response: requests.Response) -> None:
        # After the client read the target (and before its POST) the instance grows.
        if not acted and response.request.method == "GET" and migration in response.url:
            acted.append(True)
            body = raw_body({real.node: {"VCPU": 3}}, 1)
            assert real.admin.put_allocations(vm, body).status_code == 204

    client = hooked_client(real.placement, grow_source_after_target_read)
    real.placement.clear_requests_seen()

    move = client.move_allocations(vm, migration)

    statuses = [(m, s) for m, _, s in real.wire() if m == "POST"]
    assert statuses == [("POST", 409), ("POST", 204)]
    assert move.moved == {real.node: {"VCPU": 3}}
    assert held(real.admin.get_allocations(migration)) == {real.node: {"VCPU": 3}}
    assert real.admin.get_allocations(vm) == {"allocations": {}}


def test_migration_moves_the_source_and_claims_the_destination_in_one_request(real: Real) -> None:
    dest = real.admin.create_provider(inventory={"VCPU": {"total": 8}})
    client = real.client()
    vm, migration = _instance(real.admin, real.node), new_id()

    client.move_allocations(vm, migration, source_allocations={dest: VCPU_2})

    assert held(real.admin.get_allocations(vm)) == {dest: VCPU_2}
    assert held(real.admin.get_allocations(migration)) == {real.node: VCPU_2}


def test_write_many_is_all_or_nothing_when_one_provider_lacks_room(real: Real) -> None:
    small = real.admin.create_provider(inventory={"VCPU": {"total": 1}})
    client = real.client()
    a, b = new_id(), new_id()

    with pytest.raises(reportclient.CapacityExceeded):
        client.write_many(
            {a: {real.node: {"VCPU": 1}}, b: {small: {"VCPU": 2}}},
            project_id=PROJECT,
            user_id=USER,
        )

    assert real.admin.get_allocations(a) == {"allocations": {}}
    assert real.admin.get_allocations(b) == {"allocations": {}}


def test_write_many_updates_and_claims_together(real: Real) -> None:
    client = real.client()
    vm, other = _instance(real.admin, real.node), new_id()

    states = client.write_many(
        {
            vm: reportclient.add_allocations({real.node: {"VCPU": 1}}),
            other: {real.node: VCPU_2},
        },
        project_id=PROJECT,
        user_id=USER,
    )

    assert held(real.admin.get_allocations(vm)) == {real.node: {"VCPU": 3}}
    assert states[vm].generation == real.admin.get_allocations(vm)["consumer_generation"]
    assert held(real.admin.get_allocations(other)) == {real.node: VCPU_2}
