"""What a resource tracker reads and deletes besides fields: allocations, traits, classes."""

from __future__ import annotations

import pytest

import reportclient
from reportclient import PlacementClient, ProviderAllocations
from reportclient._clients.providers import CASCADE_ROUNDS
from reportclient.fixture import FakePlacement, RequestRecord, make_client
from tests.support.wire import new_uuid


@pytest.fixture
def client(fake: FakePlacement) -> PlacementClient:
    return make_client(fake, microversion="1.39", cache_ttl=60.0)


def calls(fake: FakePlacement) -> list[tuple[str, str, int]]:
    return [(r.method, r.path, r.status) for r in fake.requests]


# -- allocations ------------------------------------------------------------------
def test_provider_allocations_are_a_typed_value_by_consumer(
    client: PlacementClient, fake: FakePlacement
) -> None:
    rp = fake.create_provider("cn", inventory={"VCPU": 8, "MEMORY_MB": 1024})
    other = fake.create_provider("other", inventory={"VCPU": 8})
    a, b = new_uuid(), new_uuid()
    fake.put_allocations(a, {rp: {"VCPU": 2, "MEMORY_MB": 256}, other: {"VCPU": 1}})
    fake.put_allocations(b, {rp: {"VCPU": 1}})

    held = client.providers.get_provider_allocations(rp)

    assert held == ProviderAllocations(
        rp,
        fake.provider_generation(rp),
        {a: {"VCPU": 2, "MEMORY_MB": 256}, b: {"VCPU": 1}},
    )
    assert held.consumers == tuple(sorted((a, b)))
    assert held.used == {"VCPU": 3, "MEMORY_MB": 256}
    with pytest.raises(AttributeError):
        held.generation = 0  # type: ignore[misc]


def test_allocations_of_a_provider_without_any_are_empty(
    client: PlacementClient, fake: FakePlacement
) -> None:
    rp = fake.create_provider("cn")
    held = client.providers.get_provider_allocations(rp)
    assert (held.allocations, held.consumers, held.used) == ({}, (), {})


def test_allocations_of_an_unknown_provider_are_provider_not_found(
    client: PlacementClient,
) -> None:
    with pytest.raises(reportclient.ProviderNotFound):
        client.providers.get_provider_allocations(new_uuid())


def test_tree_allocations_list_the_tree_then_read_each_provider(
    client: PlacementClient, fake: FakePlacement
) -> None:
    root = fake.create_provider("cn", inventory={"VCPU": 8})
    child = fake.create_provider("gpu", parent=root, inventory={"VGPU": 2})
    consumer = new_uuid()
    fake.put_allocations(consumer, {root: {"VCPU": 1}, child: {"VGPU": 1}})
    fake.reset_requests()

    tree = client.providers.get_tree_allocations(root)

    assert set(tree) == {root, child}
    assert tree[root].allocations == {consumer: {"VCPU": 1}}
    assert tree[child].allocations == {consumer: {"VGPU": 1}}
    assert [m for m, _p, _s in calls(fake)] == ["GET"] * 3


def test_tree_allocations_of_an_unknown_tree_are_empty(client: PlacementClient) -> None:
    assert client.providers.get_tree_allocations(new_uuid()) == {}


# -- cascading delete ---------------------------------------------------------------
def test_delete_without_cascade_is_provider_in_use_and_deletes_nothing(
    client: PlacementClient, fake: FakePlacement
) -> None:
    rp = fake.create_provider("cn", inventory={"VCPU": 8})
    consumer = new_uuid()
    fake.put_allocations(consumer, {rp: {"VCPU": 1}})

    with pytest.raises(reportclient.ProviderInUse):
        client.providers.delete_provider(rp)

    assert fake.allocations(consumer) == {rp: {"VCPU": 1}}


def test_cascade_deletes_every_allocation_of_each_consumer_then_the_provider(
    client: PlacementClient, fake: FakePlacement
) -> None:
    rp = fake.create_provider("cn", inventory={"VCPU": 8})
    elsewhere = fake.create_provider("other", inventory={"VCPU": 8})
    a, b = sorted((new_uuid(), new_uuid()))
    fake.put_allocations(a, {rp: {"VCPU": 1}, elsewhere: {"VCPU": 1}})
    fake.put_allocations(b, {rp: {"VCPU": 2}})
    fake.reset_requests()

    client.providers.delete_provider(rp, cascade=True)

    assert calls(fake) == [
        ("GET", f"/resource_providers/{rp}/allocations", 200),
        ("DELETE", f"/allocations/{a}", 204),
        ("DELETE", f"/allocations/{b}", 204),
        ("DELETE", f"/resource_providers/{rp}", 204),
    ]
    # DELETE /allocations/{c} removes the consumer everywhere, as nova's does
    assert fake.allocations(a) == {} and fake.allocations(b) == {}
    assert fake.usages(elsewhere) == {"VCPU": 0}
    # the client's consumer cache knows they are gone
    cached = client.cached(a)
    assert cached is not None and not cached.exists


def test_cascade_of_a_provider_without_allocations_is_one_read_and_the_delete(
    client: PlacementClient, fake: FakePlacement
) -> None:
    rp = fake.create_provider("cn")
    fake.reset_requests()
    client.providers.delete_provider(rp, cascade=True)
    assert [m for m, _p, _s in calls(fake)] == ["GET", "DELETE"]


def test_cascade_lists_again_when_a_consumer_allocates_before_the_provider_delete(
    client: PlacementClient, fake: FakePlacement
) -> None:
    rp = fake.create_provider("cn", inventory={"VCPU": 8})
    first, late = new_uuid(), new_uuid()
    fake.put_allocations(first, {rp: {"VCPU": 1}})

    def scheduler_claims_meanwhile(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.path == f"/allocations/{first}" and not fake.allocations(late):
            fake.put_allocations(late, {rp: {"VCPU": 1}})

    fake.between_requests(scheduler_claims_meanwhile)
    fake.reset_requests()

    client.providers.delete_provider(rp, cascade=True)

    assert [(m, s) for m, _p, s in calls(fake)] == [
        ("GET", 200),
        ("DELETE", 204),  # first's allocations
        ("DELETE", 409),  # the provider: late allocated meanwhile
        ("GET", 200),
        ("DELETE", 204),  # late's allocations
        ("DELETE", 204),  # the provider
    ]
    assert fake.allocations(late) == {}


def test_cascade_gives_up_after_a_bounded_number_of_rounds(
    client: PlacementClient, fake: FakePlacement
) -> None:
    rp = fake.create_provider("cn", inventory={"VCPU": 1000})

    def always_another_claim(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.method == "GET" and record.path.endswith("/allocations"):
            fake.put_allocations(new_uuid(), {rp: {"VCPU": 1}})

    fake.between_requests(always_another_claim)
    fake.reset_requests()

    with pytest.raises(reportclient.ProviderInUse):
        client.providers.delete_provider(rp, cascade=True)

    provider_deletes = [s for m, p, s in calls(fake) if m == "DELETE" and p.endswith(rp)]
    assert provider_deletes == [409] * CASCADE_ROUNDS


def test_cascade_never_deletes_children_for_you(
    client: PlacementClient, fake: FakePlacement
) -> None:
    root = fake.create_provider("cn")
    fake.create_provider("child", parent=root)
    fake.reset_requests()

    with pytest.raises(reportclient.CannotDeleteParent):
        client.providers.delete_provider(root, cascade=True)

    assert [m for m, _p, _s in calls(fake)] == ["GET", "DELETE"]


def test_cascade_of_an_unknown_provider_is_provider_not_found(client: PlacementClient) -> None:
    with pytest.raises(reportclient.ProviderNotFound):
        client.providers.delete_provider(new_uuid(), cascade=True)


# -- traits -----------------------------------------------------------------------
def test_list_traits_filters_by_prefix_names_and_association(
    client: PlacementClient, fake: FakePlacement
) -> None:
    providers = client.providers
    providers.ensure_trait("CUSTOM_USED")
    providers.ensure_trait("CUSTOM_UNUSED")
    rp = fake.create_provider("cn")
    fake.set_traits(rp, ["CUSTOM_USED", "HW_CPU_X86_AVX2"])

    assert providers.list_traits(name_prefix="CUSTOM_") == ("CUSTOM_UNUSED", "CUSTOM_USED")
    assert providers.list_traits(names=["CUSTOM_USED", "HW_CPU_X86_AVX2", "CUSTOM_NONE"]) == (
        "CUSTOM_USED",
        "HW_CPU_X86_AVX2",
    )
    assert providers.list_traits(associated=True) == ("CUSTOM_USED", "HW_CPU_X86_AVX2")
    assert "CUSTOM_UNUSED" in providers.list_traits(associated=False)
    everything = providers.list_traits()
    assert isinstance(everything, tuple) and "COMPUTE_TRUSTED_CERTS" in everything


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name_prefix": "CUSTOM_", "names": ["CUSTOM_A"]},
        {"name_prefix": "custom"},
        {"names": "CUSTOM_A"},
        {"associated": "yes"},
    ],
)
def test_list_traits_refuses_malformed_filters_before_any_request(
    client: PlacementClient, fake: FakePlacement, kwargs: dict[str, object]
) -> None:
    with pytest.raises(reportclient.InvalidInput):
        client.providers.list_traits(**kwargs)  # type: ignore[arg-type]
    assert fake.requests == []


def test_get_trait_confirms_it_exists_or_is_a_404(client: PlacementClient) -> None:
    assert client.providers.get_trait("HW_CPU_X86_AVX2") == "HW_CPU_X86_AVX2"
    with pytest.raises(reportclient.PlacementError) as caught:
        client.providers.get_trait("CUSTOM_NEVER_MADE")
    assert caught.value.status == 404 and "CUSTOM_NEVER_MADE" in str(caught.value)


def test_delete_trait_deletes_an_unused_custom_trait(client: PlacementClient) -> None:
    client.providers.ensure_trait("CUSTOM_OLD")
    client.providers.delete_trait("CUSTOM_OLD")
    assert client.providers.list_traits(name_prefix="CUSTOM_OLD") == ()


def test_delete_trait_in_use_is_a_409(client: PlacementClient, fake: FakePlacement) -> None:
    client.providers.ensure_trait("CUSTOM_BUSY")
    fake.set_traits(fake.create_provider("cn"), ["CUSTOM_BUSY"])
    with pytest.raises(reportclient.PlacementError) as caught:
        client.providers.delete_trait("CUSTOM_BUSY")
    assert caught.value.status == 409 and "in use" in (caught.value.detail or "")


def test_delete_trait_of_an_unknown_one_is_a_404(client: PlacementClient) -> None:
    with pytest.raises(reportclient.PlacementError) as caught:
        client.providers.delete_trait("CUSTOM_NEVER_MADE")
    assert caught.value.status == 404


def test_standard_traits_and_classes_are_never_sent_for_deletion(
    client: PlacementClient, fake: FakePlacement
) -> None:
    with pytest.raises(reportclient.InvalidInput, match="CUSTOM_"):
        client.providers.delete_trait("HW_CPU_X86_AVX2")
    with pytest.raises(reportclient.InvalidInput, match="CUSTOM_"):
        client.providers.delete_resource_class("VCPU")
    assert fake.requests == []


# -- resource classes ---------------------------------------------------------------
def test_resource_classes_list_get_and_delete(client: PlacementClient) -> None:
    providers = client.providers
    providers.ensure_resource_class("CUSTOM_GOLD")

    names = providers.list_resource_classes()
    assert {"VCPU", "MEMORY_MB", "CUSTOM_GOLD"} <= set(names)
    assert list(names) == sorted(names)
    assert providers.get_resource_class("CUSTOM_GOLD") == "CUSTOM_GOLD"

    providers.delete_resource_class("CUSTOM_GOLD")

    with pytest.raises(reportclient.PlacementError) as caught:
        providers.get_resource_class("CUSTOM_GOLD")
    assert caught.value.status == 404
    with pytest.raises(reportclient.PlacementError) as caught:
        providers.delete_resource_class("CUSTOM_GOLD")
    assert caught.value.status == 404


def test_delete_resource_class_in_use_is_a_409(
    client: PlacementClient, fake: FakePlacement
) -> None:
    fake.create_provider("cn", inventory={"CUSTOM_SILVER": 1})
    with pytest.raises(reportclient.PlacementError) as caught:
        client.providers.delete_resource_class("CUSTOM_SILVER")
    assert caught.value.status == 409
    assert not isinstance(caught.value, reportclient.InventoryInUse)
