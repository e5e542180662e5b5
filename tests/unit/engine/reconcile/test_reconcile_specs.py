"""Every malformed description is InvalidInput before reconcile sends anything."""

from __future__ import annotations

from typing import Any

import pytest

import reportclient
from reportclient import Inventory, ProviderSpec
from reportclient.fixture import FakePlacement, make_client
from tests.support.wire import new_uuid

ROOT = new_uuid()


def spec(**fields: Any) -> ProviderSpec:
    return ProviderSpec(**{"uuid": ROOT, "name": "cn", **fields})


BAD_SPECS = [
    pytest.param(spec(name=""), "provider name", id="empty-name"),
    pytest.param(spec(name=None), "provider name", id="none-name"),
    pytest.param(spec(name=42), "provider name", id="int-name"),
    pytest.param(spec(name="x" * 201), "1-200 characters.*201 characters", id="name-over-200"),
    pytest.param(spec(uuid="not-a-uuid"), "uuid must be", id="bad-uuid"),
    pytest.param(spec(parent="nope"), "parent must be", id="bad-parent"),
    pytest.param(spec(inventories=[("VCPU", 8)]), "inventories are a list", id="inv-list"),
    pytest.param(spec(inventories=8), "inventories are an int", id="inv-int"),
    pytest.param(spec(inventories={"vcpu": 8}), "resource class must match", id="inv-rc"),
    pytest.param(spec(inventories={"VCPU": {"totl": 8}}), "unknown key.*'totl'", id="typo"),
    pytest.param(
        spec(inventories={"VCPU": {"total": 8, "reserverd": 1}}),
        "unknown key.*'reserverd'",
        id="typo-beside-total",
    ),
    pytest.param(spec(inventories={"VCPU": {"reserved": 1}}), "needs a 'total'", id="no-total"),
    pytest.param(spec(inventories={"VCPU": "8"}), "an Inventory, a total", id="inv-str"),
    pytest.param(spec(inventories={"VCPU": True}), "an Inventory, a total", id="inv-bool"),
    pytest.param(
        spec(inventories={"VCPU": {"total": 8, "allocation_ratio": float("nan")}}),
        "allocation_ratio must be finite",
        id="nan-ratio",
    ),
    pytest.param(
        spec(inventories={"VCPU": {"total": 8, "allocation_ratio": float("inf")}}),
        "allocation_ratio must be finite",
        id="inf-ratio",
    ),
    pytest.param(spec(traits="HW_CPU_X86_AVX2"), "traits must be an iterable", id="traits-str"),
    pytest.param(spec(traits=5), "traits must be an iterable", id="traits-int"),
    pytest.param(spec(traits=["hw_lower"]), "trait must match", id="trait-lower"),
    pytest.param(spec(traits=[None]), "trait must match", id="trait-none"),
    pytest.param(spec(aggregates=new_uuid()), "aggregates must be an iterable", id="aggs-str"),
    pytest.param(spec(aggregates=["nope"]), "aggregate must be", id="agg-bad"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_SPECS)
def test_a_malformed_spec_is_invalid_input_before_any_request(bad: ProviderSpec, message: str):
    fake = FakePlacement()
    providers = make_client(fake, microversion="1.39").providers

    with pytest.raises(reportclient.InvalidInput, match=message) as caught:
        providers.reconcile([bad])

    assert fake.requests == []
    if bad.uuid == ROOT:
        assert caught.value.message.startswith(f"ProviderSpec {ROOT}: ")


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        pytest.param([], "at least one ProviderSpec", id="empty"),
        pytest.param([spec(), spec(name="other")], "uuid may be described once", id="uuid-twice"),
        pytest.param(
            [spec(), ProviderSpec(new_uuid(), "cn")], "name may be described once", id="name-twice"
        ),
        pytest.param([spec(parent=ROOT)], "loop through", id="own-parent"),
    ],
)
def test_a_malformed_description_is_invalid_input_before_any_request(
    specs: list[ProviderSpec], message: str
):
    fake = FakePlacement()
    with pytest.raises(reportclient.InvalidInput, match=message):
        make_client(fake, microversion="1.39").providers.reconcile(specs)
    assert fake.requests == []


def test_a_name_of_exactly_200_characters_is_accepted():
    assert spec(name="x" * 200).normalized().name == "x" * 200


def test_traits_and_aggregates_from_any_iterable_of_strings():
    agg = new_uuid().upper()
    normalized = spec(traits=iter(["HW_CPU_X86_AVX2"]), aggregates=(agg,)).normalized()
    assert normalized.traits == frozenset({"HW_CPU_X86_AVX2"})
    assert normalized.aggregates == frozenset({agg.lower()})


def test_an_inventory_mapping_with_every_field_is_an_inventory():
    fields = {
        "total": 8,
        "reserved": 1,
        "min_unit": 1,
        "max_unit": 4,
        "step_size": 1,
        "allocation_ratio": 2.0,
    }
    assert Inventory.of(fields) == Inventory(8, 1, 1, 4, 1, 2.0)


def test_placement_records_keep_tolerating_fields_the_client_does_not_know():
    # from_json reads Placement's answers; a newer server may add a field.
    assert Inventory.from_json({"total": 8, "some_new_field": 1}) == Inventory(8)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda p, rp: p.add_traits(rp, "HW_CPU_X86_AVX2"), id="add_traits"),
        pytest.param(lambda p, rp: p.set_traits(rp, "HW_CPU_X86_AVX2"), id="set_traits"),
        pytest.param(lambda p, rp: p.remove_traits(rp, "HW_CPU_X86_AVX2"), id="remove_traits"),
        pytest.param(lambda p, rp: p.add_aggregates(rp, new_uuid()), id="add_aggregates"),
        pytest.param(lambda p, rp: p.set_aggregates(rp, new_uuid()), id="set_aggregates"),
        pytest.param(lambda p, rp: p.set_inventories(rp, [("VCPU", 1)]), id="set_inventories"),
        pytest.param(lambda p, rp: p.set_inventory(rp, "VCPU", {"totl": 1}), id="set_inventory"),
        pytest.param(lambda p, rp: p.create_provider("x" * 201), id="create_provider"),
    ],
)
def test_the_field_operations_apply_the_same_rules(call: Any):
    fake = FakePlacement()
    providers = make_client(fake, microversion="1.39").providers
    with pytest.raises(reportclient.InvalidInput):
        call(providers, new_uuid())
    assert fake.requests == []
