"""What nova's resource tracker needs, against the real Placement.

Reconcile deletes what its caller dropped (and nothing it does not own),
re-parents a child moved between trees, names the holder of a taken name
and refuses malformed descriptions before any request; the provider client
reads allocations per provider and per tree, deletes a provider with its
consumers' allocations, and reads and deletes traits and resource classes.
"""

from __future__ import annotations

import pytest
import requests

import reportclient
from reportclient import ProviderAllocations, ProviderSpec
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import claim, make_client, new_id, raw_body, wire
from tests.functional._scheduling import hooked_client


def _node(root: str, *children: str) -> list[ProviderSpec]:
    return [ProviderSpec(root, f"cn-{root}", inventories={"VCPU": 8})] + [
        ProviderSpec(c, f"dev-{c}", parent=root, inventories={"VCPU": 2}) for c in children
    ]


def _exists(admin: PlacementAdmin, rp: str) -> bool:
    return admin.request("GET", f"/resource_providers/{rp}").status_code == 200


def _allocate(admin: PlacementAdmin, consumer: str, allocations: dict[str, dict[str, int]]) -> None:
    response = admin.put_allocations(consumer, raw_body(allocations, None))
    assert response.status_code == 204, response.text


# -- reconcile: deleting ------------------------------------------------------------
def test_reconcile_deletes_dropped_children_and_only_named_roots(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    providers = make_client(real_placement).providers
    one, two, three = new_id(), new_id(), new_id()
    kept, dropped, grandchild = new_id(), new_id(), new_id()
    providers.reconcile(
        [
            *_node(one, kept, dropped),
            ProviderSpec(grandchild, f"gc-{grandchild}", parent=dropped),
            *_node(two),
            *_node(three),
        ]
    )

    report = providers.reconcile(_node(one, kept) + _node(two), delete_roots=[three])

    assert report.deleted == (grandchild, dropped, three)
    assert not any(_exists(placement_admin, rp) for rp in (grandchild, dropped, three))
    assert all(_exists(placement_admin, rp) for rp in (one, kept, two))

    # two is no longer described and not named: another agent's, as far as we know
    report = providers.reconcile(_node(one, kept))
    assert report.deleted == () and _exists(placement_admin, two)


def test_reconcile_never_deletes_under_a_provider_it_does_not_describe(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    nova_root = placement_admin.create_provider()
    theirs = placement_admin.create_provider(parent=nova_root)
    mine = new_id()

    report = make_client(real_placement).providers.reconcile(
        [ProviderSpec(mine, f"mine-{mine}", parent=nova_root)]
    )

    assert report.created == (mine,) and report.deleted == ()
    assert _exists(placement_admin, theirs)


def test_a_dropped_child_with_allocations_is_provider_in_use_naming_it_after_the_rest(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    providers = make_client(real_placement).providers
    root, busy, idle = new_id(), new_id(), new_id()
    providers.reconcile(_node(root, busy, idle))
    _allocate(placement_admin, new_id(), {busy: {"VCPU": 1}})

    with pytest.raises(reportclient.ProviderInUse) as caught:
        providers.reconcile([ProviderSpec(root, f"cn-{root}", inventories={"VCPU": 16})])

    assert caught.value.code == "placement.resource_provider.inuse"
    assert busy in caught.value.message and f"dev-{busy}" in caught.value.message
    assert caught.value.request_id and str(caught.value).startswith("Request req-")
    assert placement_admin.inventory(root)["VCPU"]["total"] == 16
    assert not _exists(placement_admin, idle) and _exists(placement_admin, busy)


def test_naming_another_trees_child_in_delete_roots_deletes_nothing(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    theirs = placement_admin.create_provider()
    their_child = placement_admin.create_provider(parent=theirs)
    real_placement.clear_requests_seen()

    with pytest.raises(reportclient.InvalidInput, match="not a root"):
        make_client(real_placement).providers.reconcile(_node(new_id()), delete_roots=[their_child])

    assert {m for m, _p, _s in wire(real_placement)} == {"GET"}
    assert _exists(placement_admin, their_child)


# -- reconcile: moves and names -------------------------------------------------------
def test_a_child_moved_from_another_tree_is_re_parented(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    providers = make_client(real_placement).providers
    old_root, new_root, child = new_id(), new_id(), new_id()
    providers.reconcile(_node(old_root, child))

    report = providers.reconcile(_node(new_root, child))

    moved = placement_admin.provider(child)
    assert (moved["parent_provider_uuid"], moved["root_provider_uuid"]) == (new_root, new_root)
    assert report.updated == (child,)
    assert placement_admin.inventory(child)["VCPU"]["total"] == 2
    assert _exists(placement_admin, old_root)


def test_re_parenting_below_1_37_is_microversion_unsupported_before_any_write(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    one, two, child = new_id(), new_id(), new_id()
    make_client(real_placement).providers.reconcile(_node(one, child) + _node(two))
    real_placement.clear_requests_seen()

    with pytest.raises(reportclient.MicroversionUnsupported, match=r"1\.37"):
        make_client(real_placement, microversion="1.36").providers.reconcile(
            _node(one) + _node(two, child)
        )

    assert {m for m, _p, _s in wire(real_placement)} == {"GET"}
    assert placement_admin.provider(child)["parent_provider_uuid"] == one


def test_a_name_held_by_another_uuid_is_duplicate_name_naming_the_holder(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    name = f"compute-{new_id()}"
    holder = placement_admin.create_provider(name=name)

    with pytest.raises(reportclient.DuplicateName, match=f"provider {holder}") as caught:
        make_client(real_placement).providers.reconcile([ProviderSpec(new_id(), name)])

    assert caught.value.code == "placement.duplicate_name"


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(ProviderSpec(new_id(), "x" * 201), id="name-over-200"),
        pytest.param(ProviderSpec(new_id(), "cn", inventories={"VCPU": {"totl": 8}}), id="typo"),
        pytest.param(ProviderSpec(new_id(), "cn", traits="HW_CPU_X86_AVX2"), id="one-string"),
    ],
)
def test_a_malformed_spec_sends_nothing(
    real_placement: EmbeddedPlacement, bad: ProviderSpec
) -> None:
    real_placement.clear_requests_seen()
    with pytest.raises(reportclient.InvalidInput):
        make_client(real_placement).providers.reconcile([bad])
    assert wire(real_placement) == []


def test_placement_itself_refuses_a_201_character_name(
    placement_admin: PlacementAdmin,
) -> None:
    # The limit the client checks is the server's own.
    body = {"name": "x" * 201}
    assert placement_admin.request("POST", "/resource_providers", json=body).status_code == 400
    body = {"name": (new_id() * 6)[:200], "uuid": new_id()}
    assert placement_admin.request("POST", "/resource_providers", json=body).status_code == 200


# -- allocations reads and the cascading delete -------------------------------------------
def test_provider_and_tree_allocations(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    root = placement_admin.create_provider(inventory={"VCPU": 8})
    child = placement_admin.create_provider(parent=root, inventory={"DISK_GB": 100})
    consumer = new_id()
    _allocate(placement_admin, consumer, {root: {"VCPU": 2}, child: {"DISK_GB": 10}})
    providers = make_client(real_placement).providers

    held = providers.get_provider_allocations(root)
    tree = providers.get_tree_allocations(root)

    assert held == ProviderAllocations(
        root, placement_admin.provider(root)["generation"], {consumer: {"VCPU": 2}}
    )
    assert tree == {root: held, child: providers.get_provider_allocations(child)}
    assert tree[child].allocations == {consumer: {"DISK_GB": 10}}
    with pytest.raises(reportclient.ProviderNotFound):
        providers.get_provider_allocations(new_id())


def test_cascading_delete_removes_each_consumers_allocations_then_the_provider(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    rp = placement_admin.create_provider(inventory={"VCPU": 8})
    client = make_client(real_placement)
    consumers = [new_id(), new_id()]
    for consumer in consumers:
        claim(client, consumer, {rp: {"VCPU": 1}})

    with pytest.raises(reportclient.ProviderInUse):
        client.providers.delete_provider(rp)
    client.providers.delete_provider(rp, cascade=True)

    assert not _exists(placement_admin, rp)
    for consumer in consumers:
        assert placement_admin.get_allocations(consumer) == {"allocations": {}}


def test_cascading_delete_lists_again_when_a_consumer_allocates_meanwhile(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    rp = placement_admin.create_provider(inventory={"VCPU": 8})
    first, late = new_id(), new_id()
    _allocate(placement_admin, first, {rp: {"VCPU": 1}})

    def scheduler_claims_meanwhile(response: requests.Response) -> None:
        request = response.request
        if request.method == "DELETE" and (request.path_url or "").endswith(first):
            _allocate(placement_admin, late, {rp: {"VCPU": 1}})

    client = hooked_client(real_placement, scheduler_claims_meanwhile)
    real_placement.clear_requests_seen()

    client.providers.delete_provider(rp, cascade=True)

    assert [(m, s) for m, _p, s in wire(real_placement) if m == "DELETE"] == [
        ("DELETE", 204),  # first's allocations
        ("DELETE", 409),  # the provider: late allocated meanwhile
        ("DELETE", 204),  # late's allocations, from the second listing
        ("DELETE", 204),  # the provider
    ]
    assert not _exists(placement_admin, rp)
    assert placement_admin.get_allocations(late) == {"allocations": {}}


# -- traits and resource classes -------------------------------------------------------------
def test_traits_list_get_and_delete(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    providers = make_client(real_placement).providers
    suffix = new_id().replace("-", "_").upper()
    used, unused = f"CUSTOM_USED_{suffix}", f"CUSTOM_UNUSED_{suffix}"
    providers.ensure_trait(used)
    providers.ensure_trait(unused)
    rp = placement_admin.create_provider()
    providers.add_traits(rp, [used])

    assert providers.list_traits(names=[used, unused, "CUSTOM_NONE"]) == tuple(
        sorted((used, unused))
    )
    assert providers.list_traits(name_prefix=f"CUSTOM_USED_{suffix}") == (used,)
    assert used in providers.list_traits(associated=True)
    assert unused in providers.list_traits(associated=False)
    assert unused not in providers.list_traits(associated=True)
    assert providers.get_trait(used) == used

    with pytest.raises(reportclient.PlacementError) as in_use:
        providers.delete_trait(used)
    assert in_use.value.status == 409 and in_use.value.code == "placement.undefined_code"
    providers.delete_trait(unused)
    with pytest.raises(reportclient.PlacementError) as gone:
        providers.get_trait(unused)
    assert gone.value.status == 404
    with pytest.raises(reportclient.PlacementError) as gone:
        providers.delete_trait(unused)
    assert gone.value.status == 404


def test_resource_classes_list_get_and_delete(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    providers = make_client(real_placement).providers
    suffix = new_id().replace("-", "_").upper()
    used, unused = f"CUSTOM_USED_{suffix}", f"CUSTOM_UNUSED_{suffix}"
    providers.ensure_resource_class(used)
    providers.ensure_resource_class(unused)
    providers.set_inventory(placement_admin.create_provider(), used, 1)

    names = providers.list_resource_classes()
    assert {"VCPU", used, unused} <= set(names)
    assert providers.get_resource_class(used) == used

    with pytest.raises(reportclient.PlacementError) as in_use:
        providers.delete_resource_class(used)
    assert in_use.value.status == 409
    assert not isinstance(in_use.value, reportclient.InventoryInUse)
    providers.delete_resource_class(unused)
    with pytest.raises(reportclient.PlacementError) as gone:
        providers.get_resource_class(unused)
    assert gone.value.status == 404
