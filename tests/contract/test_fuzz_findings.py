"""What the differential fuzzer (tests/fuzz) found, pinned against both backends."""

from __future__ import annotations

from typing import Any

import pytest

from . import BAD_REQUEST, CONFLICT, Backend, body, detail, new_uuid, outcome

VCPU_8 = {"VCPU": {"total": 8}}


def _generation(backend: Backend, rp: str) -> int:
    response = backend.request("GET", f"/resource_providers/{rp}")
    assert response.status_code == 200
    generation: int = response.json()["generation"]
    return generation


def _put_traits(backend: Backend, rp: str, traits: list[str], generation: int) -> Any:
    doc = {"traits": traits, "resource_provider_generation": generation}
    return backend.request("PUT", f"/resource_providers/{rp}/traits", doc)


# -- generations that do not move ------------------------------------------------------
def test_putting_no_traits_on_a_new_provider_leaves_generation_zero(backend: Backend) -> None:
    rp = backend.create_provider()
    put = _put_traits(backend, rp, [], 0)
    assert put.status_code == 200
    assert put.json() == {"traits": [], "resource_provider_generation": 0}
    assert _generation(backend, rp) == 0


def test_putting_the_traits_a_provider_has_leaves_its_generation(backend: Backend) -> None:
    rp = backend.create_provider()
    first = _put_traits(backend, rp, ["HW_CPU_X86_AVX"], 0)
    assert first.json()["resource_provider_generation"] == 1
    again = _put_traits(backend, rp, ["HW_CPU_X86_AVX"], 1)
    assert again.status_code == 200
    assert again.json() == {"traits": ["HW_CPU_X86_AVX"], "resource_provider_generation": 1}
    assert _generation(backend, rp) == 1


def test_deleting_the_traits_of_a_provider_without_any_leaves_its_generation(
    backend: Backend,
) -> None:
    rp = backend.create_provider()
    response = backend.request("DELETE", f"/resource_providers/{rp}/traits")
    assert response.status_code == 204
    assert _generation(backend, rp) == 0


# -- a refused allocation leaves its new consumer behind -------------------------------
def _left_behind(backend: Backend, consumer: str, rp: str) -> None:
    """The consumer exists at generation 0 with nothing allocated."""
    assert backend.request("GET", f"/allocations/{consumer}").json() == {"allocations": {}}
    retry = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 1}}, None))
    assert outcome(retry) == (409, "placement.concurrent_update")
    assert detail(retry) == CONFLICT.format(
        "consumer generation conflict - expected 0 but got None"
    )
    fixed = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 1}}, 0))
    assert outcome(fixed) == (204, None)
    assert backend.request("GET", f"/allocations/{consumer}").json()["consumer_generation"] == 1


def test_put_naming_a_missing_provider_leaves_a_consumer_at_generation_zero(
    backend: Backend,
) -> None:
    rp, missing, consumer = backend.create_provider(VCPU_8), new_uuid(), new_uuid()
    put = backend.request("PUT", f"/allocations/{consumer}", body({missing: {"VCPU": 1}}))
    assert outcome(put) == (400, "placement.undefined_code")
    assert detail(put) == BAD_REQUEST.format(
        f"Allocation for resource provider '{missing}' that does not exist."
    )
    _left_behind(backend, consumer, rp)


def test_post_naming_a_missing_provider_leaves_every_new_consumer(backend: Backend) -> None:
    rp, missing = backend.create_provider(VCPU_8), new_uuid()
    first, second = new_uuid(), new_uuid()
    doc = {first: body({rp: {"VCPU": 1}}), second: body({missing: {"VCPU": 1}})}
    post = backend.request("POST", "/allocations", doc)
    assert outcome(post) == (400, "placement.undefined_code")
    _left_behind(backend, first, rp)
    _left_behind(backend, second, rp)


def test_reshape_naming_a_missing_provider_leaves_a_consumer(backend: Backend) -> None:
    rp, missing, consumer = backend.create_provider(VCPU_8), new_uuid(), new_uuid()
    doc = {
        "inventories": {rp: {"inventories": VCPU_8, "resource_provider_generation": 1}},
        "allocations": {consumer: body({missing: {"VCPU": 1}})},
    }
    reshape = backend.request("POST", "/reshaper", doc, headers={"X-Roles": "admin,service"})
    assert outcome(reshape) == (400, "placement.undefined_code")
    _left_behind(backend, consumer, rp)


# -- inventory keys that are not resource class names ------------------------------------
def test_inventory_key_that_is_not_a_class_name_is_refused(backend: Backend) -> None:
    rp = backend.create_provider(VCPU_8)
    doc = {
        "inventories": {"MEMORY_MB": {"total": 512}, "vcpu": {"total": 4}},
        "resource_provider_generation": 1,
    }
    put = backend.request("PUT", f"/resource_providers/{rp}/inventories", doc)
    assert outcome(put) == (400, "placement.undefined_code")
    assert detail(put) == BAD_REQUEST.format(
        f"Unknown resource class in inventory for resource provider {rp}: "
        "No such resource class vcpu."
    )
    kept = backend.request("GET", f"/resource_providers/{rp}/inventories").json()
    assert set(kept["inventories"]) == {"VCPU"}
    assert kept["resource_provider_generation"] == 1


@pytest.mark.parametrize("record", ["eight", 8, None])
def test_inventory_key_that_is_not_a_class_name_with_a_bad_record_writes_nothing(
    backend: Backend, record: object
) -> None:
    # Placement 16.0.0 answers 500 here (a TypeError); the fake answers 400. Both keep
    # the provider's inventory as it was, which is what a caller relies on.
    rp = backend.create_provider(VCPU_8)
    doc = {"inventories": {"vcpu": record}, "resource_provider_generation": 1}
    put = backend.request("PUT", f"/resource_providers/{rp}/inventories", doc)
    assert put.status_code == (400 if backend.name == "fake" else 500)
    kept = backend.request("GET", f"/resource_providers/{rp}/inventories").json()
    assert set(kept["inventories"]) == {"VCPU"}
