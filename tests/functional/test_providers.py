"""Providers, their fields, reconcile and reshape against the real Placement."""

from __future__ import annotations

from typing import Any

import pytest

import reportclient
from reportclient import Inventory, ProviderSpec, Reshape, ReshapeState
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import (
    claim,
    fast_retry,
    make_client,
    new_id,
    raw_body,
    run_together,
    wire,
)
from tests.functional._reshape import SERVICE, vgpu_consumer_before_reshape


def _get(admin: PlacementAdmin, path: str) -> Any:
    response = admin.request("GET", path)
    assert response.status_code == 200, response.text
    return response.json()


def _traits(admin: PlacementAdmin, rp: str) -> set[str]:
    return set(_get(admin, f"/resource_providers/{rp}/traits")["traits"])


def _aggregates(admin: PlacementAdmin, rp: str) -> set[str]:
    return set(_get(admin, f"/resource_providers/{rp}/aggregates")["aggregates"])


def test_provider_lifecycle_with_typed_errors(real_placement: EmbeddedPlacement) -> None:
    providers = make_client(real_placement).providers
    root = providers.create_provider(f"root-{new_id()}")
    child = providers.create_provider(f"child-{new_id()}", parent_provider_uuid=root.uuid)
    assert (child.root_provider_uuid, child.generation) == (root.uuid, 0)
    assert {rp.uuid for rp in providers.list_providers(in_tree=child.uuid)} == {
        root.uuid,
        child.uuid,
    }
    with pytest.raises(reportclient.DuplicateName):
        providers.create_provider(root.name)
    with pytest.raises(reportclient.CannotDeleteParent):
        providers.delete_provider(root.uuid)
    renamed = providers.update_provider(child.uuid, name=f"renamed-{new_id()}")
    assert renamed.parent_provider_uuid == root.uuid
    providers.delete_provider(child.uuid)
    providers.delete_provider(root.uuid)
    with pytest.raises(reportclient.ProviderNotFound):
        providers.get_provider(root.uuid)


def test_provider_with_allocations_is_provider_in_use(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    client = make_client(real_placement)
    claim(client, new_id(), {compute_node: {"VCPU": 1}})
    with pytest.raises(reportclient.ProviderInUse):
        client.providers.delete_provider(compute_node)


def test_set_inventory_after_another_writer_keeps_their_class(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    providers = make_client(real_placement, retry=fast_retry()).providers
    rp = providers.create_provider(f"cn-{new_id()}").uuid
    providers.set_inventory(rp, "VCPU", 8)
    placement_admin.set_inventory(rp, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})

    providers.set_inventory(rp, "MEMORY_MB", 1024)

    assert set(placement_admin.inventory(rp)) == {"VCPU", "DISK_GB", "MEMORY_MB"}


def test_shrinking_inventory_in_use_is_typed_and_sent_once(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    client = make_client(real_placement)
    claim(client, new_id(), {compute_node: {"MEMORY_MB": 256}})
    real_placement.clear_requests_seen()

    with pytest.raises(reportclient.InventoryInUse):
        client.providers.remove_inventory(compute_node, "MEMORY_MB")

    puts = [w for w in wire(real_placement) if w[0] == "PUT"]
    assert puts == [("PUT", f"/resource_providers/{compute_node}/inventories", 409)]


def test_traits_and_aggregates_add_without_removing_others(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    providers = make_client(real_placement).providers
    rp = providers.create_provider(f"cn-{new_id()}").uuid
    assert providers.ensure_trait("CUSTOM_FUNCTIONAL_A") in (True, False)
    assert providers.ensure_trait("CUSTOM_FUNCTIONAL_A") is False
    providers.add_traits(rp, ["HW_CPU_X86_AVX2"])
    providers.add_traits(rp, ["CUSTOM_FUNCTIONAL_A"])
    one, two = new_id(), new_id()
    providers.add_aggregates(rp, [one])
    providers.add_aggregates(rp, [two])
    assert _traits(placement_admin, rp) == {"HW_CPU_X86_AVX2", "CUSTOM_FUNCTIONAL_A"}
    assert _aggregates(placement_admin, rp) == {one, two}
    providers.remove_traits(rp, ["HW_CPU_X86_AVX2"])
    assert _traits(placement_admin, rp) == {"CUSTOM_FUNCTIONAL_A"}


def _tree(root: str, child: str, gpus: int = 2) -> list[ProviderSpec]:
    return [
        ProviderSpec(root, f"cn-{root}", inventories={"VCPU": 16}, traits={"HW_CPU_X86_AVX2"}),
        ProviderSpec(
            child,
            f"gpu-{child}",
            parent=root,
            inventories={"CUSTOM_FUNCTIONAL_GPU": gpus},
            traits={"CUSTOM_FUNCTIONAL_GPU_FAST"},
        ),
    ]


def test_reconcile_counts_requests_of_new_unchanged_and_changed_trees(
    real_placement: EmbeddedPlacement,
) -> None:
    providers = make_client(real_placement).providers
    root, child = new_id(), new_id()
    counts = []
    for specs in (_tree(root, child), _tree(root, child), _tree(root, child, gpus=4)):
        real_placement.clear_requests_seen()
        report = providers.reconcile(specs)
        assert report.requests == len(wire(real_placement))
        counts.append(report.requests)
    # unchanged: 1 listing + 4 field reads; changed: one more PUT
    assert counts[1:] == [5, 6]


def test_two_agents_reconciling_one_tree_concurrently_lose_no_change(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    root, child = new_id(), new_id()
    aggs = {"nova": new_id(), "cyborg": new_id()}

    def agent(who: str, rc: str, rounds: int = 5) -> int:
        providers = make_client(real_placement, retry=fast_retry()).providers
        trait = f"CUSTOM_FUNCTIONAL_{who.upper()}"
        total = 0
        for n in range(1, rounds + 1):
            specs = [
                ProviderSpec(
                    root,
                    f"cn-{root}",
                    inventories={rc: 100 + n},
                    traits={trait},
                    aggregates={aggs[who]},
                ),
                ProviderSpec(child, f"dev-{child}", parent=root, traits={trait}),
            ]
            total += providers.reconcile(specs, merge=True).requests
        return total

    outcomes = run_together([lambda: agent("nova", "VCPU"), lambda: agent("cyborg", "DISK_GB")])

    assert [kind for kind, _ in outcomes] == ["ok", "ok"], outcomes
    inventory = placement_admin.inventory(root)
    assert (inventory["VCPU"]["total"], inventory["DISK_GB"]["total"]) == (105, 105)
    both = {"CUSTOM_FUNCTIONAL_NOVA", "CUSTOM_FUNCTIONAL_CYBORG"}
    assert _traits(placement_admin, root) == both == _traits(placement_admin, child)
    assert _aggregates(placement_admin, root) == set(aggs.values())


def test_reshape_moves_vgpu_inventory_and_allocation_to_a_child(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    client = make_client(real_placement, retry=fast_retry(), additional_headers=SERVICE)
    root, child, consumer = vgpu_consumer_before_reshape(client)
    providers = client.providers
    # Another writer resizes the consumer first: the reshape must move what is there now.
    placement_admin.put_allocations(consumer, raw_body({root: {"VCPU": 2, "VGPU": 2}}, 1))

    def compute(state: ReshapeState) -> Reshape:
        root_inv = dict(state.inventories[root].inventories)
        vgpu = root_inv.pop("VGPU", Inventory(total=4))
        moved: dict[str, dict[str, int]] = {}
        for rp, res in state.allocations[consumer].allocations.items():
            for rc, amount in res.items():
                moved.setdefault(child if rc == "VGPU" else rp, {})[rc] = amount
        return Reshape({root: root_inv, child: {"VGPU": vgpu}}, {consumer: moved})

    providers.reshape([root, child], [consumer], compute)

    assert set(placement_admin.inventory(root)) == {"VCPU"}
    assert placement_admin.inventory(child)["VGPU"]["total"] == 4
    held = placement_admin.get_allocations(consumer)["allocations"]
    assert {rp: e["resources"] for rp, e in held.items()} == {
        root: {"VCPU": 2},
        child: {"VGPU": 2},
    }
