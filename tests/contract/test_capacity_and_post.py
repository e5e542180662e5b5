"""Capacity arithmetic, unit constraints, unknown providers and POST /allocations atomicity."""

from __future__ import annotations

from . import BAD_REQUEST, CONFLICT, Backend, body, detail, new_uuid, outcome


def _put(
    backend: Backend, rp: str, amount: int, consumer: str | None = None, rc: str = "VCPU"
) -> tuple[int, str | None, str]:
    consumer = consumer or new_uuid()
    response = backend.request("PUT", f"/allocations/{consumer}", body({rp: {rc: amount}}, None))
    return (*outcome(response), detail(response) if response.status_code >= 400 else "")


def _exceeds(rp: str, rc: str = "VCPU") -> str:
    return CONFLICT.format(
        f"Unable to allocate inventory: Unable to create allocation for '{rc}' on resource "
        f"provider '{rp}'. The requested amount would exceed the capacity."
    )


def _violates(rp: str, rc: str = "VCPU") -> str:
    return CONFLICT.format(
        f"Unable to allocate inventory: Unable to create allocation for '{rc}' on resource "
        f"provider '{rp}'. The requested amount would violate inventory constraints."
    )


def test_allocation_up_to_capacity_succeeds(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}})
    assert _put(backend, rp, 8) == (204, None, "")


def test_over_capacity_is_an_undefined_code_conflict(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}})
    assert _put(backend, rp, 9) == (409, "placement.undefined_code", _exceeds(rp))


def test_capacity_counts_other_consumers(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}})
    _put(backend, rp, 6)
    assert _put(backend, rp, 3)[:2] == (409, "placement.undefined_code")
    assert _put(backend, rp, 2)[:2] == (204, None)


def test_reserved_is_subtracted_from_total(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8, "reserved": 3}})
    assert _put(backend, rp, 6)[:2] == (409, "placement.undefined_code")
    assert _put(backend, rp, 5)[:2] == (204, None)


def test_allocation_ratio_multiplies_unreserved_total(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8, "reserved": 2, "allocation_ratio": 1.5}})
    assert _put(backend, rp, 10)[:2] == (409, "placement.undefined_code")
    assert _put(backend, rp, 9)[:2] == (204, None)


def test_below_min_unit_violates_constraints(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8, "min_unit": 2}})
    assert _put(backend, rp, 1) == (409, "placement.undefined_code", _violates(rp))


def test_above_max_unit_violates_constraints_even_within_capacity(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8, "max_unit": 4}})
    assert _put(backend, rp, 5) == (409, "placement.undefined_code", _violates(rp))


def test_off_step_size_violates_constraints(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8, "step_size": 2}})
    assert _put(backend, rp, 3) == (409, "placement.undefined_code", _violates(rp))
    assert _put(backend, rp, 4)[:2] == (204, None)


def test_class_without_inventory_on_provider_is_invalid_inventory(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}})
    assert _put(backend, rp, 1, rc="DISK_GB") == (
        409,
        "placement.undefined_code",
        CONFLICT.format(
            f"Unable to allocate inventory: Inventory for 'DISK_GB' on resource provider "
            f"'{rp}' invalid."
        ),
    )


def test_unknown_resource_class_is_400(backend: Backend) -> None:
    rp, consumer = backend.create_provider({"VCPU": {"total": 8}}), new_uuid()
    assert _put(backend, rp, 1, consumer, rc="CUSTOM_NEVER_CREATED") == (
        400,
        "placement.undefined_code",
        BAD_REQUEST.format(
            f"Unable to allocate inventory for consumer {consumer}: "
            "No such resource class CUSTOM_NEVER_CREATED."
        ),
    )


def test_unknown_provider_is_400(backend: Backend) -> None:
    missing = new_uuid()
    assert _put(backend, missing, 1) == (
        400,
        "placement.undefined_code",
        BAD_REQUEST.format(f"Allocation for resource provider '{missing}' that does not exist."),
    )


def test_generation_is_checked_before_the_provider_exists(backend: Backend) -> None:
    rp, consumer = backend.create_provider({"VCPU": {"total": 8}}), new_uuid()
    _put(backend, rp, 1, consumer)
    response = backend.request("PUT", f"/allocations/{consumer}", body({new_uuid(): {"VCPU": 1}}))
    assert outcome(response) == (409, "placement.concurrent_update")


def test_failed_write_to_new_consumer_leaves_no_record(backend: Backend) -> None:
    rp, consumer = backend.create_provider({"VCPU": {"total": 8}}), new_uuid()
    _put(backend, rp, 9, consumer)
    assert _put(backend, rp, 1, consumer)[:2] == (204, None)


def test_moving_away_does_not_bump_the_old_provider(backend: Backend) -> None:
    old, new = (
        backend.create_provider({"VCPU": {"total": 8}}),
        backend.create_provider({"VCPU": {"total": 8}}),
    )
    consumer = new_uuid()
    _put(backend, old, 1, consumer)
    backend.request("PUT", f"/allocations/{consumer}", body({new: {"VCPU": 1}}, 1))
    generations = [
        backend.request("GET", f"/resource_providers/{rp}").json()["generation"]
        for rp in (old, new)
    ]
    assert generations == [2, 2]


def test_post_writes_several_consumers_at_once(backend: Backend) -> None:
    rp, a, b = backend.create_provider({"VCPU": {"total": 8}}), new_uuid(), new_uuid()
    response = backend.request(
        "POST", "/allocations", {a: body({rp: {"VCPU": 1}}, None), b: body({rp: {"VCPU": 2}}, None)}
    )
    assert outcome(response) == (204, None)
    usages = backend.request("GET", f"/resource_providers/{rp}/usages").json()
    assert usages == {"resource_provider_generation": 2, "usages": {"VCPU": 3}}


def test_post_with_one_stale_generation_writes_nothing(backend: Backend) -> None:
    rp, a, b = backend.create_provider({"VCPU": {"total": 8}}), new_uuid(), new_uuid()
    _put(backend, rp, 1, a)
    response = backend.request(
        "POST", "/allocations", {a: body({rp: {"VCPU": 4}}, 1), b: body({rp: {"VCPU": 2}}, 7)}
    )
    assert outcome(response) == (409, "placement.concurrent_update")
    assert detail(response) == CONFLICT.format(
        "consumer generation conflict - expected null but got 7"
    )
    assert backend.request("GET", f"/allocations/{a}").json()["allocations"][rp]["resources"] == {
        "VCPU": 1
    }
    assert backend.request("GET", f"/allocations/{b}").json() == {"allocations": {}}


def test_post_over_capacity_writes_nothing(backend: Backend) -> None:
    rp, a, b = backend.create_provider({"VCPU": {"total": 8}}), new_uuid(), new_uuid()
    response = backend.request(
        "POST", "/allocations", {a: body({rp: {"VCPU": 4}}, None), b: body({rp: {"VCPU": 5}}, None)}
    )
    assert (*outcome(response), detail(response)) == (409, "placement.undefined_code", _exceeds(rp))
    assert backend.request("GET", f"/allocations/{a}").json() == {"allocations": {}}


def test_post_can_empty_one_consumer_and_fill_another(backend: Backend) -> None:
    rp, old, new = backend.create_provider({"VCPU": {"total": 8}}), new_uuid(), new_uuid()
    _put(backend, rp, 8, old)
    response = backend.request(
        "POST", "/allocations", {old: body({}, 1), new: body({rp: {"VCPU": 8}}, None)}
    )
    assert outcome(response) == (204, None)
    assert backend.request("GET", f"/allocations/{old}").json() == {"allocations": {}}
    assert backend.request("GET", f"/allocations/{new}").json()["consumer_generation"] == 1


def test_write_that_reduces_an_overage_is_allowed(backend: Backend) -> None:
    rp, consumer = backend.create_provider({"VCPU": {"total": 8}}), new_uuid()
    _put(backend, rp, 6, consumer)
    generation = backend.request("GET", f"/resource_providers/{rp}").json()["generation"]
    shrink = {"resource_provider_generation": generation, "inventories": {"VCPU": {"total": 2}}}
    assert backend.request("PUT", f"/resource_providers/{rp}/inventories", shrink).ok
    smaller = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 5}}, 1))
    larger = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 6}}, 2))
    assert [outcome(smaller), outcome(larger)] == [(204, None), (409, "placement.undefined_code")]
