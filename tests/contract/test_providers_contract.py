"""Provider routes: shapes, statuses, error codes and generation rules, fake and real alike."""

from __future__ import annotations

from typing import Any

from . import BAD_REQUEST, CONFLICT, NOT_FOUND, Backend, body, detail, new_uuid, outcome


def _create(backend: Backend, parent: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": f"contract-{new_uuid()}"}
    if parent is not None:
        doc["parent_provider_uuid"] = parent
    response = backend.request("POST", "/resource_providers", doc)
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


def _shape(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "links"}


def test_create_returns_the_provider_at_generation_zero(backend: Backend) -> None:
    root = _create(backend)
    child = _create(backend, root["uuid"])
    assert _shape(child) == {
        "uuid": child["uuid"],
        "name": child["name"],
        "generation": 0,
        "parent_provider_uuid": root["uuid"],
        "root_provider_uuid": root["uuid"],
    }
    rels = [link["rel"] for link in child["links"]]
    assert rels == ["self", "inventories", "usages", "aggregates", "traits", "allocations"]


def test_duplicate_name_is_409_duplicate_name(backend: Backend) -> None:
    name = _create(backend)["name"]
    response = backend.request("POST", "/resource_providers", {"name": name})
    assert outcome(response) == (409, "placement.duplicate_name")


def test_missing_provider_is_404_naming_it(backend: Backend) -> None:
    missing = new_uuid()
    response = backend.request("GET", f"/resource_providers/{missing}")
    assert outcome(response) == (404, "placement.undefined_code")
    assert detail(response) == NOT_FOUND.format(f"No resource provider with uuid {missing} found")


def test_deleting_a_parent_is_409_cannot_delete_parent(backend: Backend) -> None:
    root = _create(backend)
    _create(backend, root["uuid"])
    response = backend.request("DELETE", f"/resource_providers/{root['uuid']}")
    assert outcome(response) == (409, "placement.resource_provider.cannot_delete_parent")


def test_deleting_a_provider_with_allocations_is_409_inuse(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}})
    backend.request("PUT", f"/allocations/{new_uuid()}", body({rp: {"VCPU": 1}}))
    response = backend.request("DELETE", f"/resource_providers/{rp}")
    assert outcome(response) == (409, "placement.resource_provider.inuse")


def test_rename_keeps_generation_and_parent(backend: Backend) -> None:
    root = _create(backend)
    child = _create(backend, root["uuid"])
    new_name = f"renamed-{new_uuid()}"
    response = backend.request("PUT", f"/resource_providers/{child['uuid']}", {"name": new_name})
    assert response.status_code == 200
    assert (
        response.json()["name"],
        response.json()["generation"],
        response.json()["parent_provider_uuid"],
    ) == (new_name, 0, root["uuid"])


def test_list_in_tree_and_unknown_query_parameter(backend: Backend) -> None:
    root = _create(backend)
    child = _create(backend, root["uuid"])
    response = backend.request("GET", f"/resource_providers?in_tree={child['uuid']}")
    assert {rp["uuid"] for rp in response.json()["resource_providers"]} == {
        root["uuid"],
        child["uuid"],
    }
    assert backend.request("GET", "/resource_providers?bogus=1").status_code == 400


def test_inventory_put_answers_the_new_generation_and_conflicts_on_a_stale_one(
    backend: Backend,
) -> None:
    rp = _create(backend)["uuid"]
    path = f"/resource_providers/{rp}/inventories"
    doc = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}}
    first = backend.request("PUT", path, doc)
    assert first.status_code == 200
    assert first.json()["resource_provider_generation"] == 1
    assert first.json()["inventories"]["VCPU"] == {
        "total": 8,
        "reserved": 0,
        "min_unit": 1,
        "max_unit": 2147483647,
        "step_size": 1,
        "allocation_ratio": 1.0,
    }
    stale = backend.request("PUT", path, doc)
    assert outcome(stale) == (409, "placement.concurrent_update")
    assert detail(stale) == CONFLICT.format("resource provider generation conflict")


def test_removing_allocated_inventory_is_409_inventory_inuse(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}, "DISK_GB": {"total": 10}})
    backend.request("PUT", f"/allocations/{new_uuid()}", body({rp: {"DISK_GB": 1}}))
    doc = {"resource_provider_generation": 2, "inventories": {"VCPU": {"total": 8}}}
    response = backend.request("PUT", f"/resource_providers/{rp}/inventories", doc)
    assert outcome(response) == (409, "placement.inventory.inuse")


def test_single_inventory_delete_in_use_is_a_concurrent_update_409(backend: Backend) -> None:
    rp = backend.create_provider({"DISK_GB": {"total": 10}})
    backend.request("PUT", f"/allocations/{new_uuid()}", body({rp: {"DISK_GB": 1}}))
    response = backend.request("DELETE", f"/resource_providers/{rp}/inventories/DISK_GB")
    assert outcome(response) == (409, "placement.concurrent_update")
    assert "in use" in detail(response)


def test_traits_put_bumps_generation_and_refuses_unknown_traits(backend: Backend) -> None:
    rp = _create(backend)["uuid"]
    path = f"/resource_providers/{rp}/traits"
    ok = backend.request(
        "PUT", path, {"resource_provider_generation": 0, "traits": ["HW_CPU_X86_AVX2"]}
    )
    assert ok.json() == {"traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": 1}
    stale = backend.request("PUT", path, {"resource_provider_generation": 0, "traits": []})
    assert outcome(stale) == (409, "placement.concurrent_update")
    assert detail(stale) == CONFLICT.format(
        "Resource provider's generation already changed. Please update the generation and "
        "try again."
    )
    unknown = backend.request(
        "PUT", path, {"resource_provider_generation": 1, "traits": ["CUSTOM_NEVER_MADE"]}
    )
    assert outcome(unknown) == (400, "placement.undefined_code")
    assert detail(unknown) == BAD_REQUEST.format("No such trait CUSTOM_NEVER_MADE")


def test_put_trait_and_resource_class_are_201_then_204(backend: Backend) -> None:
    suffix = new_uuid().replace("-", "").upper()
    for path in (f"/traits/CUSTOM_T{suffix}", f"/resource_classes/CUSTOM_R{suffix}"):
        assert backend.request("PUT", path).status_code == 201
        assert backend.request("PUT", path).status_code == 204


def test_aggregates_carry_the_generation_from_1_19(backend: Backend) -> None:
    rp = _create(backend)["uuid"]
    path = f"/resource_providers/{rp}/aggregates"
    agg = new_uuid()
    new = backend.request("PUT", path, {"resource_provider_generation": 0, "aggregates": [agg]})
    assert new.json() == {"aggregates": [agg], "resource_provider_generation": 1}
    old = backend.request("GET", path, microversion="1.18")
    assert old.json() == {"aggregates": [agg]}


def test_reshaper_stale_provider_generation_is_409(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}})
    doc = {
        "inventories": {rp: {"resource_provider_generation": 0, "inventories": {}}},
        "allocations": {},
    }
    headers = {"X-Roles": "admin,service"}
    response = backend.request("POST", "/reshaper", doc, headers=headers)
    assert outcome(response) == (409, "placement.concurrent_update")
    assert detail(response) == CONFLICT.format(
        f"resource provider generation conflict for provider {rp}: actual: 1, given: 0"
    )


def test_a_parent_with_its_own_allocations_is_refused_as_a_parent(backend: Backend) -> None:
    parent = backend.create_provider({"VCPU": {"total": 8}})
    _child(backend, parent)
    consumer = new_uuid()
    assert backend.request("PUT", f"/allocations/{consumer}", body({parent: {"VCPU": 1}})).ok
    response = backend.request("DELETE", f"/resource_providers/{parent}")
    assert outcome(response) == (409, "placement.resource_provider.cannot_delete_parent")


def test_aggregates_at_1_0_check_the_content_type_first(backend: Backend) -> None:
    rp = backend.create_provider()
    path = f"/resource_providers/{rp}/aggregates"
    wrong = backend.session.put(
        backend.url + path, data="[]", headers={"Content-Type": "text/plain"}
    )
    assert wrong.status_code == 415
    right = backend.session.put(
        backend.url + path, data="[]", headers={"Content-Type": "application/json"}
    )
    assert right.status_code == 404


def test_a_childs_first_update_has_no_last_modified(backend: Backend) -> None:
    parent = backend.create_provider()
    child = _child(backend, parent)
    doc = {"name": f"renamed-{new_uuid()}", "parent_provider_uuid": parent}
    first = backend.request("PUT", f"/resource_providers/{child}", doc)
    assert first.status_code == 200
    assert "last-modified" not in first.headers
    doc["name"] = f"renamed-{new_uuid()}"
    second = backend.request("PUT", f"/resource_providers/{child}", doc)
    assert "last-modified" in second.headers
    root = backend.request("PUT", f"/resource_providers/{parent}", {"name": f"r-{new_uuid()}"})
    assert "last-modified" in root.headers


def _child(backend: Backend, parent: str) -> str:
    rp = new_uuid()
    doc = {"name": f"child-{rp}", "uuid": rp, "parent_provider_uuid": parent}
    assert backend.request("POST", "/resource_providers", doc).status_code == 200
    return rp
