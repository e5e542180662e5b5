"""Input the real Placement (or its database) refuses is refused locally, and nothing is sent.

Each test first shows, with a raw request, what Placement 16.0.0 does with the value, then
that the client refuses it with ``InvalidInput`` naming the field before any request (the
embedded Placement records every request it serves). The NUL cases are refused by
Placement only on PostgreSQL (a 500): ``tests/races/test_nul_on_postgresql.py`` shows that;
here SQLite stores them, and the client refuses them all the same.
"""

from __future__ import annotations

from typing import Any

import pytest

import reportclient
from reportclient import Inventory, ProviderSpec, Reshape, ReshapeState
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import PROJECT, USER, Real, make_client, new_id, raw_body, wire
from tests.support.input_tables import INVENTORY_RECORDS, inventory_id

pytestmark = pytest.mark.functional


def _put_inventory(admin: PlacementAdmin, rp: str, record: dict[str, Any]) -> int:
    generation = admin.provider(rp)["generation"]
    response = admin.request(
        "PUT",
        f"/resource_providers/{rp}/inventories",
        json={"resource_provider_generation": generation, "inventories": {"VCPU": record}},
    )
    return response.status_code


def _refused_before_the_wire(placement: EmbeddedPlacement, refused: str, call: Any) -> None:
    placement.clear_requests_seen()
    with pytest.raises(reportclient.InvalidInput, match=refused):
        call()
    assert wire(placement) == []


# -- inventories ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "refused"), INVENTORY_RECORDS, ids=map(inventory_id, INVENTORY_RECORDS)
)
def test_placement_stores_exactly_the_inventories_the_rule_accepts(
    placement_admin: PlacementAdmin, record: dict[str, Any], refused: str | None
) -> None:
    """The shared table, sent raw: 200 where the local rule accepts, 400 where it refuses."""
    rp = placement_admin.create_provider()

    status = _put_inventory(placement_admin, rp, record)

    assert status == (200 if refused is None else 400)


@pytest.mark.parametrize(
    ("record", "refused"),
    [row for row in INVENTORY_RECORDS if row[1] is not None],
    ids=map(inventory_id, [row for row in INVENTORY_RECORDS if row[1] is not None]),
)
def test_set_inventory_refuses_what_placement_refuses_before_any_request(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    record: dict[str, Any],
    refused: str,
) -> None:
    rp = placement_admin.create_provider()
    providers = make_client(real_placement).providers

    _refused_before_the_wire(
        real_placement, refused, lambda: providers.set_inventory(rp, "VCPU", record)
    )
    _refused_before_the_wire(
        real_placement, refused, lambda: providers.set_inventories(rp, {"VCPU": record})
    )
    assert placement_admin.inventory(rp) == {}


def test_an_inventory_at_the_edge_placement_accepts_is_written(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    """Capacity int((1 - 2) * 0.5) == 0: Placement stores it, so the client must send it."""
    rp = placement_admin.create_provider()
    providers = make_client(real_placement).providers

    providers.set_inventory(rp, "VCPU", {"total": 1, "reserved": 2, "allocation_ratio": 0.5})

    assert placement_admin.inventory(rp)["VCPU"]["reserved"] == 2


def test_the_reshaper_stores_reserved_above_total_and_the_client_refuses_it(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    """Placement's reshaper skips its capacity check; the library refuses the value anyway
    (see ``reportclient._model.providers.check_capacity`` for why)."""
    service = {"X-Roles": "admin,service"}
    rp = placement_admin.create_provider(inventory={"VCPU": 8})
    raw = placement_admin.request(
        "POST",
        "/reshaper",
        json={
            "inventories": {
                rp: {
                    "resource_provider_generation": placement_admin.provider(rp)["generation"],
                    "inventories": {"VCPU": {"total": 4, "reserved": 6}},
                }
            },
            "allocations": {},
        },
        headers=service,
    )
    assert raw.status_code == 204, raw.text
    assert placement_admin.inventory(rp)["VCPU"]["reserved"] == 6
    # What Placement holds can be read back; writing it again is refused by Placement too.
    client = make_client(real_placement, additional_headers=service)
    held = client.providers.get_inventories(rp).inventories["VCPU"]
    assert (held.total, held.reserved) == (4, 6)
    assert _put_inventory(placement_admin, rp, {"total": 4, "reserved": 6}) == 400

    other = placement_admin.create_provider(inventory={"VCPU": 8})

    def compute(state: ReshapeState) -> Reshape:
        return Reshape({other: {"VCPU": Inventory(total=4, reserved=6)}}, {})

    real_placement.clear_requests_seen()
    with pytest.raises(reportclient.InvalidInput, match="reserved"):
        client.providers.reshape([other], [], compute)
    assert [method for method, _, _ in wire(real_placement)] == ["GET"]  # the read, no POST
    assert placement_admin.inventory(other)["VCPU"]["total"] == 8


# -- reconcile: the whole description before any request -------------------------------------


@pytest.mark.parametrize(
    "bad_inventory",
    [{"total": 0}, {"total": 2**31}, {"total": 4, "reserved": 5}, {"total": 4, "max_unit": 0}],
    ids=["total-0", "total-2**31", "reserved-above-total", "max_unit-0"],
)
def test_reconcile_with_one_bad_provider_writes_nothing(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, bad_inventory: Any
) -> None:
    root, child, bad = new_id(), new_id(), new_id()
    specs = [
        ProviderSpec(root, f"cn-{root}", inventories={"VCPU": 8}),
        ProviderSpec(child, f"dev-{child}", parent=root, inventories={"VGPU": 2}),
        ProviderSpec(bad, f"bad-{bad}", parent=root, inventories={"VGPU": bad_inventory}),
    ]
    providers = make_client(real_placement).providers

    _refused_before_the_wire(
        real_placement, f"ProviderSpec {bad}", lambda: providers.reconcile(specs)
    )
    for uuid in (root, child, bad):
        assert placement_admin.request("GET", f"/resource_providers/{uuid}").status_code == 404


# -- allocations ---------------------------------------------------------------------------


def test_a_256_character_resource_class_in_allocations_is_refused_before_any_request(
    real: Real,
) -> None:
    name = "CUSTOM_" + "X" * 249
    consumer = new_id()
    raw = real.admin.put_allocations(consumer, raw_body({real.node: {name: 1}}, None))
    assert raw.status_code == 400, raw.text
    client = real.client()

    _refused_before_the_wire(
        real.placement,
        "resource class.*255",
        lambda: client.claim(consumer, {real.node: {name: 1}}, project_id=PROJECT, user_id=USER),
    )


@pytest.mark.parametrize("field", ["project_id", "user_id"])
def test_a_nul_in_an_owner_is_refused_before_any_request(
    real_placement: EmbeddedPlacement, compute_node: str, field: str
) -> None:
    owner = {"project_id": PROJECT, "user_id": USER, field: "owner\x00x"}
    client = make_client(real_placement)

    _refused_before_the_wire(
        real_placement,
        f"{field} must not contain a NUL",
        lambda: client.claim(new_id(), {compute_node: {"VCPU": 1}}, **owner),
    )


def test_a_nul_in_a_provider_name_is_refused_before_any_request(
    real_placement: EmbeddedPlacement,
) -> None:
    providers = make_client(real_placement).providers
    name = f"cn-{new_id()}\x00"

    _refused_before_the_wire(
        real_placement,
        "provider name must not contain a NUL",
        lambda: providers.create_provider(name),
    )
    _refused_before_the_wire(
        real_placement,
        "provider name must not contain a NUL",
        lambda: providers.reconcile([ProviderSpec(new_id(), name)]),
    )


# -- list_providers' filters ------------------------------------------------------------------


def test_list_providers_refuses_a_string_of_traits_placement_would_split(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    """Sent as given, "HW_CPU_X86_AVX2" became required=H,W,_,C,...: a 400 for no trait H."""
    assert placement_admin.request("GET", "/resource_providers?required=H,W").status_code == 400
    providers = make_client(real_placement).providers

    _refused_before_the_wire(
        real_placement,
        "required must be an iterable",
        lambda: providers.list_providers(required="HW_CPU_X86_AVX2"),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("amount", [2**63, 2**31, 0])
def test_list_providers_refuses_an_amount_out_of_range(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, amount: int
) -> None:
    """Placement answers 2**63 with a 500, 0 with a 400, and 2**31 with an empty list (no
    provider can match: max_unit is at most 2**31-1); the rule of get_allocation_candidates."""
    raw = placement_admin.request("GET", f"/resource_providers?resources=VCPU:{amount}")
    assert raw.status_code == {2**63: 500, 2**31: 200, 0: 400}[amount]
    providers = make_client(real_placement).providers

    _refused_before_the_wire(
        real_placement,
        "amount of VCPU in resources",
        lambda: providers.list_providers(resources={"VCPU": amount}),
    )


def test_list_providers_sends_valid_filters(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    rp = placement_admin.create_provider(inventory={"VCPU": 8})
    providers = make_client(real_placement).providers

    found = providers.list_providers(uuid=rp, resources={"VCPU": 8}, required=["!HW_CPU_X86_AVX2"])

    assert [p.uuid for p in found] == [rp]
