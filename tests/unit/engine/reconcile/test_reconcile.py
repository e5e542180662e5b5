"""Declarative reconcile on the fake: request counts, idempotence and concurrent agents."""

from __future__ import annotations

import pytest

import reportclient
from reportclient import Inventory, ProviderSpec
from reportclient._clients.providers import ProviderClient
from reportclient.fixture import FakeClock, FakePlacement, RequestRecord, make_client
from tests.support.clients import providers_on
from tests.support.wire import new_uuid

AGG = "5a5b5c5d-0000-4000-8000-000000000001"


def tree(root: str, child: str, *, vcpus: int = 16, gpus: int = 2) -> list[ProviderSpec]:
    """A compute node with a GPU child, as nova-compute and a device agent would describe it."""
    return [
        ProviderSpec(
            root,
            f"cn-{root[:8]}",
            inventories={"VCPU": vcpus, "MEMORY_MB": {"total": 4096, "reserved": 512}},
            traits={"HW_CPU_X86_AVX2", "CUSTOM_RACK_A"},
            aggregates={AGG},
        ),
        ProviderSpec(
            child,
            f"cn-{root[:8]}-gpu",
            parent=root,
            inventories={"CUSTOM_GPU": gpus},
            traits={"CUSTOM_GPU_FAST"},
        ),
    ]


def test_reconcile_creates_a_new_tree_without_reading_fields_it_created(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, child = new_uuid(), new_uuid()

    report = providers.reconcile(tree(root, child))

    assert report.created == (root, child)
    assert fake.inventory(child) == {"CUSTOM_GPU": reportclient.fixture.Inventory(total=2)}
    assert fake.traits(root) == {"HW_CPU_X86_AVX2", "CUSTOM_RACK_A"}
    assert fake.aggregates(root) == {AGG}
    methods = [r.method for r in fake.requests]
    # list, 2 creates, 3 ensures (CUSTOM_RACK_A, CUSTOM_GPU, CUSTOM_GPU_FAST), 5 field PUTs
    assert methods.count("GET") == 1
    assert report.requests == len(fake.requests) == 11


def test_reconcile_of_an_unchanged_tree_reads_and_writes_nothing(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child))
    fake.reset_requests()

    report = providers.reconcile(tree(root, child))

    assert report.written == () and report.created == ()
    assert {r.method for r in fake.requests} == {"GET"}
    # the listing plus one read per managed field (3 + 2): nothing cached is trusted by default
    assert report.requests == len(fake.requests) == 6


def test_reconcile_with_a_trusted_cache_checks_an_unchanged_tree_in_one_request(
    fake: FakePlacement,
) -> None:
    providers = providers_on(fake, cache_ttl=60.0, clock=FakeClock())
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child))
    fake.reset_requests()

    report = providers.reconcile(tree(root, child))

    assert [(r.method, r.path.split("?")[0]) for r in fake.requests] == [
        ("GET", "/resource_providers")
    ]
    assert report.requests == 1


def test_reconcile_of_a_changed_tree_writes_only_the_changed_field(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child))
    fake.reset_requests()

    report = providers.reconcile(tree(root, child, gpus=4))

    assert report.written == ((child, "inventories"),)
    assert [r.method for r in fake.requests].count("PUT") == 1
    assert report.requests == len(fake.requests) == 7
    assert fake.inventory(child)["CUSTOM_GPU"].total == 4


def test_reconcile_renames_a_provider_and_keeps_its_fields(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child))
    specs = tree(root, child)
    specs[1] = ProviderSpec(child, "renamed-gpu", parent=root, inventories={"CUSTOM_GPU": 2})

    report = providers.reconcile(specs)

    assert report.updated == (child,)
    assert providers.get_provider(child).name == "renamed-gpu"
    assert fake.traits(child) == {"CUSTOM_GPU_FAST"}  # traits not managed this time: untouched


def test_exact_reconcile_removes_what_is_not_described(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child))
    fake.set_traits(root, ["HW_CPU_X86_AVX2", "CUSTOM_RACK_A", "COMPUTE_TRUSTED_CERTS"])

    providers.reconcile(tree(root, child))

    assert fake.traits(root) == {"HW_CPU_X86_AVX2", "CUSTOM_RACK_A"}


def test_merge_reconcile_keeps_another_agents_class_trait_and_aggregate(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    rp, other_agg = new_uuid(), new_uuid()
    providers.reconcile([ProviderSpec(rp, "shared", inventories={"VCPU": 8})])
    fake.set_inventory(rp, {"VCPU": 8, "DISK_GB": 100})
    fake.set_traits(rp, ["COMPUTE_VOLUME_MULTI_ATTACH"])
    fake.set_aggregates(rp, [other_agg])

    spec = ProviderSpec(
        rp, "shared", inventories={"VCPU": 12}, traits={"CUSTOM_MINE"}, aggregates={AGG}
    )
    providers.reconcile([spec], merge=True)

    assert fake.inventory(rp)["DISK_GB"].total == 100
    assert fake.inventory(rp)["VCPU"].total == 12
    assert fake.traits(rp) == {"COMPUTE_VOLUME_MULTI_ATTACH", "CUSTOM_MINE"}
    assert fake.aggregates(rp) == {AGG, other_agg}


def test_reconcile_recovers_when_another_agent_writes_between_listing_and_write(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child))
    fired: list[bool] = []

    def other_agent(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.path.endswith(f"{root}/inventories") and record.method == "GET" and not fired:
            fired.append(True)
            fake.set_traits(root, ["COMPUTE_VOLUME_MULTI_ATTACH"])  # moves the generation

    fake.between_requests(other_agent)
    report = providers.reconcile(tree(root, child, vcpus=32), merge=True)

    assert fake.inventory(root)["VCPU"].total == 32
    assert fake.traits(root) == {"COMPUTE_VOLUME_MULTI_ATTACH", "HW_CPU_X86_AVX2", "CUSTOM_RACK_A"}
    assert [r.status for r in fake.requests].count(409) == 1
    assert (root, "inventories") in report.written


def test_reconcile_refuses_a_looping_description_before_any_request(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    a, b = new_uuid(), new_uuid()
    with pytest.raises(reportclient.InvalidInput):
        providers.reconcile([ProviderSpec(a, "a", parent=b), ProviderSpec(b, "b", parent=a)])
    assert fake.requests == []


def test_reconcile_removing_allocated_inventory_is_inventory_in_use(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    rp = new_uuid()
    providers.reconcile([ProviderSpec(rp, "cn", inventories={"VCPU": 8, "MEMORY_MB": 512})])
    fake.put_allocations(new_uuid(), {rp: {"MEMORY_MB": 256}})

    with pytest.raises(reportclient.InventoryInUse):
        providers.reconcile([ProviderSpec(rp, "cn", inventories={"VCPU": 8})])


def test_specs_validate_inventories_into_typed_values() -> None:
    spec = ProviderSpec(new_uuid(), "cn", inventories={"VCPU": 4}).normalized()
    assert spec.inventories == {"VCPU": Inventory(total=4)}


def test_trusted_cache_expires_after_cache_ttl_and_reads_again(fake: FakePlacement) -> None:
    clock = FakeClock()
    providers = providers_on(fake, cache_ttl=60.0, clock=clock)
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child))
    clock.advance(61)
    fake.reset_requests()

    report = providers.reconcile(tree(root, child))

    assert report.requests == 6  # the listing and every managed field read again


def test_cached_field_is_not_trusted_when_the_listing_shows_another_generation(
    fake: FakePlacement,
) -> None:
    providers = providers_on(fake, cache_ttl=60.0, clock=FakeClock())
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child))
    fake.set_traits(root, ["HW_CPU_X86_AVX2", "CUSTOM_RACK_A", "COMPUTE_TRUSTED_CERTS"])
    fake.reset_requests()

    report = providers.reconcile(tree(root, child))

    assert fake.traits(root) == {"HW_CPU_X86_AVX2", "CUSTOM_RACK_A"}
    assert report.written == ((root, "traits"),)
    # root: 3 reads + 1 write; child: proven by the listing, nothing sent
    assert report.requests == 1 + 3 + 1


def test_wrong_guess_from_a_created_provider_is_reread_without_backoff(
    fake: FakePlacement,
) -> None:
    sleeps: list[float] = []
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    providers = make_client(fake, microversion="1.39", retry=policy).providers
    rp = new_uuid()
    fired: list[bool] = []

    def other_agent(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.method == "POST" and not fired:
            fired.append(True)
            fake.set_traits(rp, ["COMPUTE_TRUSTED_CERTS"])

    fake.between_requests(other_agent)
    providers.reconcile([ProviderSpec(rp, "cn", inventories={"VCPU": 4})], merge=True)

    assert fake.inventory(rp)["VCPU"].total == 4
    assert fake.traits(rp) == {"COMPUTE_TRUSTED_CERTS"}
    assert sleeps == [0.0]
