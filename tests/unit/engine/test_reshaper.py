"""Reshape on the fake: inventories and allocations move together, recovering from conflicts."""

from __future__ import annotations

import pytest

import reportclient
from reportclient import Inventory, Reshape, ReshapeState
from reportclient._clients.providers import ProviderClient
from reportclient.fixture import FakePlacement, RequestRecord, make_client

# Placement's reshaper policy is role:service (its new defaults, which 16.0.0 enforces),
# so the client sends the role nova's service token carries, as on the real service.
SERVICE = {"X-Roles": "admin,service"}


def client_for(fake: FakePlacement, sleeps: list[float], microversion: str = "1.39"):  # type: ignore[no-untyped-def]
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    return make_client(fake, microversion=microversion, retry=policy, additional_headers=SERVICE)


@pytest.fixture
def providers(fake: FakePlacement, sleeps: list[float]) -> ProviderClient:
    return client_for(fake, sleeps).providers


def move_vgpu(root: str, child: str, consumer: str):  # type: ignore[no-untyped-def]
    """The target: VGPU inventory and its allocations on the child; described, not a delta."""

    def compute(state: ReshapeState) -> Reshape:
        root_inv = dict(state.inventories[root].inventories)
        vgpu = root_inv.pop("VGPU", None) or state.inventories[child].inventories["VGPU"]
        moved: dict[str, dict[str, int]] = {}
        for rp, resources in state.allocations[consumer].allocations.items():
            for rc, amount in resources.items():
                target = child if rc == "VGPU" else rp
                moved.setdefault(target, {})[rc] = amount
        return Reshape(
            inventories={root: root_inv, child: {"VGPU": vgpu}},
            allocations={consumer: moved},
        )

    return compute


def test_reshape_moves_inventory_and_allocations_in_one_post(
    providers: ProviderClient, fake: FakePlacement, tree: tuple[str, str, str]
) -> None:
    root, child, consumer = tree

    providers.reshape([root, child], [consumer], move_vgpu(root, child, consumer))

    assert set(fake.inventory(root)) == {"VCPU"}
    assert fake.inventory(child)["VGPU"].total == 4
    assert fake.allocations(consumer) == {root: {"VCPU": 2}, child: {"VGPU": 1}}
    assert [r.method for r in fake.requests] == ["GET", "GET", "GET", "POST"]


def test_reshape_recomputes_from_a_reread_after_a_consumer_changed(
    providers: ProviderClient, fake: FakePlacement, tree: tuple[str, str, str]
) -> None:
    root, child, consumer = tree
    fired: list[bool] = []

    def resize(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.path == f"/allocations/{consumer}" and not fired:
            fired.append(True)
            fake.put_allocations(consumer, {root: {"VCPU": 4, "VGPU": 2}})

    fake.between_requests(resize)
    providers.reshape([root, child], [consumer], move_vgpu(root, child, consumer))

    # The resize another writer made is kept: the allocation moved is the re-read one.
    assert fake.allocations(consumer) == {root: {"VCPU": 4}, child: {"VGPU": 2}}
    assert [r.status for r in fake.requests if r.method == "POST"] == [409, 204]


def test_reshape_that_strands_allocations_is_inventory_in_use(
    providers: ProviderClient, fake: FakePlacement, tree: tuple[str, str, str]
) -> None:
    root = tree[0]

    def drop_vgpu(state: ReshapeState) -> Reshape:
        inv = {rc: i for rc, i in state.inventories[root].inventories.items() if rc != "VGPU"}
        return Reshape(inventories={root: inv})

    with pytest.raises(reportclient.InventoryInUse):
        providers.reshape([root], [], drop_vgpu)
    assert "VGPU" in fake.inventory(root)  # nothing applied


def test_reshape_already_done_sends_nothing(
    providers: ProviderClient, fake: FakePlacement, tree: tuple[str, str, str]
) -> None:
    root, child, consumer = tree
    providers.reshape([root, child], [consumer], move_vgpu(root, child, consumer))
    fake.reset_requests()

    providers.reshape([root, child], [consumer], move_vgpu(root, child, consumer))

    assert [r.method for r in fake.requests] == ["GET", "GET", "GET"]


def test_reshape_lost_answer_is_settled_by_the_reread(
    providers: ProviderClient, fake: FakePlacement, tree: tuple[str, str, str]
) -> None:
    root, child, consumer = tree
    fake.lose_next_response()

    providers.reshape([root, child], [consumer], move_vgpu(root, child, consumer))

    assert fake.allocations(consumer) == {root: {"VCPU": 2}, child: {"VGPU": 1}}
    assert [r.method for r in fake.requests] == ["GET", "GET", "GET", "POST"] + ["GET"] * 3


def test_reshape_below_1_30_is_refused_before_the_wire(
    fake: FakePlacement, sleeps: list[float], tree: tuple[str, str, str]
) -> None:
    root = tree[0]
    client = client_for(fake, sleeps, microversion="1.29")
    with pytest.raises(reportclient.MicroversionUnsupported):
        client.providers.reshape([root], [], lambda s: Reshape())
    assert fake.requests == []


def test_reshape_as_plain_admin_is_refused_as_the_real_service_does(
    fake: FakePlacement, sleeps: list[float], tree: tuple[str, str, str]
) -> None:
    root, child, consumer = tree
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    admin = make_client(fake, microversion="1.39", retry=policy).providers
    with pytest.raises(reportclient.PlacementError) as info:
        admin.reshape([root, child], [consumer], move_vgpu(root, child, consumer))
    assert info.value.status == 403
    assert fake.allocations(consumer) == {root: {"VCPU": 2, "VGPU": 1}}


def test_reshape_target_naming_an_unread_provider_is_invalid_input(
    providers: ProviderClient, tree: tuple[str, str, str]
) -> None:
    root, child, _ = tree
    with pytest.raises(reportclient.InvalidInput):
        providers.reshape(
            [root], [], lambda s: Reshape(inventories={child: {"VGPU": Inventory(1)}})
        )
