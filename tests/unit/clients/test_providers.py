"""ProviderClient on the fake: providers themselves, typed errors, ensured classes and traits."""

from __future__ import annotations

import pytest

import reportclient
from reportclient._clients.providers import ProviderClient
from reportclient.fixture import FakePlacement, make_client
from tests.support.wire import new_uuid


@pytest.fixture
def providers(fake: FakePlacement) -> ProviderClient:
    return make_client(fake, microversion="1.39").providers


def test_create_provider_returns_typed_provider_at_generation_zero(
    providers: ProviderClient,
) -> None:
    rp = providers.create_provider("cn1")
    assert isinstance(rp, reportclient.ResourceProvider)
    assert (rp.name, rp.generation, rp.parent_provider_uuid, rp.root_provider_uuid) == (
        "cn1",
        0,
        None,
        rp.uuid,
    )


def test_create_provider_with_parent_shares_the_root(providers: ProviderClient) -> None:
    root = providers.create_provider("cn1")
    child = providers.create_provider("cn1-numa0", parent_provider_uuid=root.uuid)
    assert (child.parent_provider_uuid, child.root_provider_uuid) == (root.uuid, root.uuid)


def test_get_provider_reads_generation(providers: ProviderClient, fake: FakePlacement) -> None:
    rp = providers.create_provider("cn1")
    fake.set_inventory(rp.uuid, {"VCPU": 4})
    assert providers.get_provider(rp.uuid).generation == 1


def test_get_missing_provider_is_provider_not_found(providers: ProviderClient) -> None:
    with pytest.raises(reportclient.ProviderNotFound) as caught:
        providers.get_provider(new_uuid())
    assert caught.value.status == 404


def test_duplicate_name_is_typed(providers: ProviderClient) -> None:
    providers.create_provider("cn1")
    with pytest.raises(reportclient.DuplicateName) as caught:
        providers.create_provider("cn1")
    assert caught.value.code == "placement.duplicate_name"


def test_list_providers_filters_by_name_uuid_and_tree(providers: ProviderClient) -> None:
    root = providers.create_provider("cn1")
    child = providers.create_provider("cn1-numa0", parent_provider_uuid=root.uuid)
    other = providers.create_provider("cn2")
    assert [rp.uuid for rp in providers.list_providers(name="cn2")] == [other.uuid]
    assert [rp.uuid for rp in providers.list_providers(uuid=child.uuid)] == [child.uuid]
    tree = {rp.uuid for rp in providers.list_providers(in_tree=child.uuid)}
    assert tree == {root.uuid, child.uuid}


def test_list_providers_filters_by_aggregate_trait_and_free_capacity(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    agg = new_uuid()
    small = providers.create_provider("small").uuid
    big = providers.create_provider("big").uuid
    for rp, vcpus in ((small, 2), (big, 16)):
        fake.set_inventory(rp, {"VCPU": vcpus})
        fake.set_aggregates(rp, [agg])
        fake.set_traits(rp, ["HW_CPU_X86_AVX2"])
    found = providers.list_providers(
        member_of=[agg], required=["HW_CPU_X86_AVX2"], resources={"VCPU": 4}
    )
    assert [rp.uuid for rp in found] == [big]
    assert providers.list_providers(required=["!HW_CPU_X86_AVX2"]) == []


def test_update_provider_renames_and_keeps_parent(providers: ProviderClient) -> None:
    root = providers.create_provider("cn1")
    child = providers.create_provider("old", parent_provider_uuid=root.uuid)
    renamed = providers.update_provider(child.uuid, name="new")
    assert (renamed.name, renamed.parent_provider_uuid) == ("new", root.uuid)


def test_update_provider_reparents_under_another_root(providers: ProviderClient) -> None:
    one, two = providers.create_provider("one"), providers.create_provider("two")
    child = providers.create_provider("child", parent_provider_uuid=one.uuid)
    moved = providers.update_provider(child.uuid, parent_provider_uuid=two.uuid)
    assert (moved.name, moved.parent_provider_uuid, moved.root_provider_uuid) == (
        "child",
        two.uuid,
        two.uuid,
    )


def test_delete_parent_is_cannot_delete_parent(providers: ProviderClient) -> None:
    root = providers.create_provider("cn1")
    providers.create_provider("numa", parent_provider_uuid=root.uuid)
    with pytest.raises(reportclient.CannotDeleteParent) as caught:
        providers.delete_provider(root.uuid)
    assert caught.value.code == "placement.resource_provider.cannot_delete_parent"


def test_delete_provider_with_allocations_is_provider_in_use(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    rp = fake.create_provider(inventory={"VCPU": 4})
    fake.put_allocations(new_uuid(), {rp: {"VCPU": 1}})
    with pytest.raises(reportclient.ProviderInUse) as caught:
        providers.delete_provider(rp)
    assert caught.value.code == "placement.resource_provider.inuse"


def test_delete_provider_removes_it(providers: ProviderClient) -> None:
    rp = providers.create_provider("cn1")
    providers.delete_provider(rp.uuid)
    with pytest.raises(reportclient.ProviderNotFound):
        providers.delete_provider(rp.uuid)


def test_ensure_resource_class_creates_once_then_confirms(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    assert providers.ensure_resource_class("CUSTOM_GPU") is True
    assert providers.ensure_resource_class("CUSTOM_GPU") is False
    assert [(r.method, r.status) for r in fake.requests] == [("PUT", 201), ("PUT", 204)]


def test_ensure_trait_is_idempotent_and_one_request_each(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    assert providers.ensure_trait("CUSTOM_FAST") is True
    assert providers.ensure_trait("CUSTOM_FAST") is False
    assert [(r.method, r.path) for r in fake.requests] == [("PUT", "/traits/CUSTOM_FAST")] * 2


def test_ensure_refuses_a_standard_name_before_the_wire(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    with pytest.raises(reportclient.InvalidInput):
        providers.ensure_trait("HW_CPU_X86_AVX2")
    assert fake.requests == []
