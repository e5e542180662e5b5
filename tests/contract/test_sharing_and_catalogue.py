"""Sharing providers, root traits, usages without a type and class renames: fake as real.

The real service is shared by the whole session, so candidate queries are
fenced by a fresh aggregate (``member_of``) or a fresh custom root trait
(``root_required``), and custom names are fresh per test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import os_resource_classes

from . import BAD_REQUEST, CONFLICT, Backend, body, detail, new_uuid, outcome

SHARES = "MISC_SHARES_VIA_AGGREGATE"


def _custom(prefix: str) -> str:
    return f"CUSTOM_{prefix}_{uuid.uuid4().hex[:12].upper()}"


def _provider(
    backend: Backend,
    inventory: dict[str, int],
    *,
    parent: str | None = None,
    traits: Iterable[str] = (),
    aggregates: Iterable[str] = (),
) -> str:
    name = f"contract-{new_uuid()}"
    inv = {rc: {"total": n} for rc, n in inventory.items()}
    if backend.fake is not None:
        rp = backend.fake.create_provider(name=name, inventory=inv, parent=parent)
    else:
        assert backend.admin is not None
        rp = backend.admin.create_provider(name=name, inventory=inv, parent=parent)
    generation = backend.request("GET", f"/resource_providers/{rp}").json()["generation"]
    for name in traits:
        if name.startswith("CUSTOM_"):
            assert backend.request("PUT", f"/traits/{name}").status_code in (201, 204)
    if traits:
        doc = {"resource_provider_generation": generation, "traits": sorted(traits)}
        response = backend.request("PUT", f"/resource_providers/{rp}/traits", doc)
        generation = response.json()["resource_provider_generation"]
    if aggregates:
        doc = {"resource_provider_generation": generation, "aggregates": sorted(aggregates)}
        assert backend.request("PUT", f"/resource_providers/{rp}/aggregates", doc).ok
    return rp


def _candidates(backend: Backend, query: str, version: str = "1.39") -> dict[str, Any]:
    response = backend.request("GET", f"/allocation_candidates?{query}", microversion=version)
    assert response.status_code == 200, response.text
    doc: dict[str, Any] = response.json()
    return doc


def _requests(doc: dict[str, Any]) -> list[Any]:
    """The allocation requests in a stable order, each mapping's providers sorted."""
    out = []
    for req in doc["allocation_requests"]:
        mappings = {s: sorted(rps) for s, rps in req.get("mappings", {}).items()}
        out.append((req["allocations"], mappings))
    return sorted(out, key=repr)


def test_a_sharing_provider_completes_a_compute_node_of_its_aggregate(backend: Backend) -> None:
    agg = new_uuid()
    cn = _provider(backend, {"VCPU": 8}, aggregates=[agg])
    ss = _provider(backend, {"DISK_GB": 100}, traits=[SHARES], aggregates=[agg])

    doc = _candidates(backend, f"resources=VCPU:1,DISK_GB:10&member_of={agg}")

    assert _requests(doc) == [
        (
            {cn: {"resources": {"VCPU": 1}}, ss: {"resources": {"DISK_GB": 10}}},
            {"": sorted([cn, ss])},
        )
    ]
    assert doc["provider_summaries"][ss] == {
        "resources": {"DISK_GB": {"capacity": 100, "used": 0}},
        "traits": [SHARES],
        "parent_provider_uuid": None,
        "root_provider_uuid": ss,
    }
    assert set(doc["provider_summaries"]) == {cn, ss}


def test_granular_groups_take_the_sharing_provider_for_its_anchors(backend: Backend) -> None:
    agg = new_uuid()
    cn1 = _provider(backend, {"VCPU": 8}, aggregates=[agg])
    cn2 = _provider(backend, {"VCPU": 8}, aggregates=[agg])
    ss = _provider(backend, {"DISK_GB": 100}, traits=[SHARES], aggregates=[agg])
    query = (
        f"resources_C=VCPU:1&member_of_C={agg}&resources_S=DISK_GB:10&member_of_S={agg}"
        "&group_policy=isolate"
    )

    doc = _candidates(backend, query)

    assert _requests(doc) == sorted(
        [
            (
                {cn: {"resources": {"VCPU": 1}}, ss: {"resources": {"DISK_GB": 10}}},
                {"_C": [cn], "_S": [ss]},
            )
            for cn in (cn1, cn2)
        ],
        key=repr,
    )


def test_root_required_and_forbidden_pick_the_trees(backend: Backend) -> None:
    mark, other = _custom("ROOT"), _custom("OTHER")
    good = _provider(backend, {"VCPU": 4}, traits=[mark])
    _provider(backend, {"VCPU": 4}, traits=[mark, other])
    child = _provider(backend, {"VCPU": 4}, parent=good)

    doc = _candidates(backend, f"resources=VCPU:1&root_required={mark},!{other}", "1.35")

    assert _requests(doc) == sorted(
        [
            ({good: {"resources": {"VCPU": 1}}}, {"": [good]}),
            ({child: {"resources": {"VCPU": 1}}}, {"": [child]}),
        ],
        key=repr,
    )
    refused = backend.request(
        "GET", f"/allocation_candidates?resources=VCPU:1&root_required={mark},!{mark}"
    )
    assert detail(refused) == BAD_REQUEST.format(
        f"Conflicting required and forbidden traits found in root_required: {mark}"
    )
    assert outcome(refused) == (400, "placement.query.bad_value")


def test_any_of_traits_and_forbidden_aggregates_from_1_39(backend: Backend) -> None:
    agg, banned = new_uuid(), new_uuid()
    a, b = _custom("A"), _custom("B")
    rp_a = _provider(backend, {"VCPU": 4}, traits=[a], aggregates=[agg])
    rp_b = _provider(backend, {"VCPU": 4}, traits=[b], aggregates=[agg])
    _provider(backend, {"VCPU": 4}, traits=[a], aggregates=[agg, banned])

    doc = _candidates(
        backend, f"resources=VCPU:1&required=in:{a},{b}&member_of={agg}&member_of=!{banned}"
    )

    assert sorted(doc["provider_summaries"]) == sorted([rp_a, rp_b])
    old = backend.request(
        "GET", f"/allocation_candidates?resources=VCPU:1&required=in:{a},{b}", microversion="1.38"
    )
    assert detail(old) == BAD_REQUEST.format(
        "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only "
        f"supported since microversion 1.39. Got: in:{a},{b}"
    )


def test_usages_of_consumers_without_a_type_are_unknown(backend: Backend) -> None:
    rp = _provider(backend, {"VCPU": 16})
    project = f"project-{new_uuid()}"
    untyped = body({rp: {"VCPU": 2}}, None, consumer_type=None, project_id=project)
    response = backend.request("PUT", f"/allocations/{new_uuid()}", untyped, microversion="1.37")
    assert response.status_code == 204

    usages = backend.request("GET", f"/usages?project_id={project}").json()
    too_long = backend.request("GET", f"/usages?project_id={'p' * 256}")

    assert usages == {"usages": {"unknown": {"VCPU": 2, "consumer_count": 1}}}
    assert too_long.status_code == 400
    assert "Failed validating 'maxLength'" in detail(too_long)


def test_put_resource_class_before_1_7_renames_it(backend: Backend) -> None:
    old, new, taken = _custom("OLD"), _custom("NEW"), _custom("TAKEN")
    for name in (old, taken):
        assert backend.request("PUT", f"/resource_classes/{name}").status_code == 201
    json = {"Content-Type": "application/json"}

    renamed = backend.request(
        "PUT", f"/resource_classes/{old}", {"name": new}, microversion="1.6", headers=json
    )
    clash = backend.request(
        "PUT", f"/resource_classes/{new}", {"name": taken}, microversion="1.6", headers=json
    )
    standard = backend.request(
        "PUT", "/resource_classes/VCPU", {"name": new}, microversion="1.6", headers=json
    )

    assert renamed.status_code == 200
    assert renamed.json() == {
        "name": new,
        "links": [{"rel": "self", "href": f"/resource_classes/{new}"}],
    }
    assert backend.request("GET", f"/resource_classes/{old}").status_code == 404
    assert detail(clash) == CONFLICT.format(f"Resource class already exists: {taken}")
    assert detail(standard) == BAD_REQUEST.format("Cannot update standard resource class VCPU")


def _emptied_in_use(
    backend: Backend, inventory: dict[str, int], used: dict[str, int]
) -> tuple[str, str]:
    """Allocate ``used`` on a new provider, then PUT it no inventories: it and the 409's detail."""
    rp = _provider(backend, inventory)
    doc = body({rp: used}, None)
    assert backend.request("PUT", f"/allocations/{new_uuid()}", doc).status_code == 204
    generation = backend.request("GET", f"/resource_providers/{rp}").json()["generation"]

    response = backend.request(
        "PUT",
        f"/resource_providers/{rp}/inventories",
        {"resource_provider_generation": generation, "inventories": {}},
    )

    assert outcome(response) == (409, "placement.inventory.inuse")
    return rp, detail(response)


def test_inventory_in_use_names_the_classes_in_placements_order(backend: Backend) -> None:
    rp, said = _emptied_in_use(backend, {"DISK_GB": 100, "VCPU": 8}, {"VCPU": 1, "DISK_GB": 1})
    assert f"Inventory for 'VCPU, DISK_GB' on resource provider '{rp}' in use." in said


def test_custom_classes_in_use_are_named_in_the_order_they_were_created(
    backend: Backend,
) -> None:
    # Placement's row ids: a custom class after the standard ones, each one
    # past the last; the fake sorted them by name (nova's reshape test found it).
    tag = uuid.uuid4().hex[:8].upper()
    first, second = f"CUSTOM_Z_{tag}", f"CUSTOM_A_{tag}"
    for name in (first, second):
        assert backend.request("PUT", f"/resource_classes/{name}").status_code == 201
    rp, said = _emptied_in_use(
        backend, {"VCPU": 8, second: 4, first: 4}, {second: 1, "VCPU": 1, first: 1}
    )
    named = f"VCPU, {first}, {second}"
    assert f"Inventory for '{named}' on resource provider '{rp}' in use." in said


def test_a_child_of_a_missing_parent_is_refused_as_the_object_action_failed(
    backend: Backend,
) -> None:
    rp, name = new_uuid(), f"contract-{new_uuid()}"
    doc = {"uuid": rp, "name": name, "parent_provider_uuid": new_uuid()}

    response = backend.request("POST", "/resource_providers", doc)

    assert detail(response) == BAD_REQUEST.format(
        f'Unable to create resource provider "{name}", {rp}: Object action create failed '
        "because: parent provider UUID does not exist."
    )


def test_amounts_one_provider_gives_two_groups_grow_as_placement_folds_them(
    backend: Backend,
) -> None:
    # Placement 16.0.0 folds the granular group's VCPU into the unsuffixed group's
    # own amount object, which all three of that group's requests share (one per
    # PF): 1+2, then 3+2, then 5+2 > 6 refuses the third; both kept answer 7.
    root = _provider(backend, {"VCPU": 6})
    numa = _provider(backend, {}, parent=root)
    for _ in range(3):
        _provider(backend, {"SRIOV_NET_VF": 1}, parent=numa)
    query = f"resources=VCPU:1,SRIOV_NET_VF:1&in_tree={root}&resources2=VCPU:2&in_tree2={root}"

    doc = _candidates(backend, query)

    assert [req["allocations"][root] for req in doc["allocation_requests"]] == [
        {"resources": {"VCPU": 7}}
    ] * 2


def test_resource_classes_are_listed_in_row_order(backend: Backend) -> None:
    made = [_custom(prefix) for prefix in ("ZZ", "AA", "MM")]
    for name in made:
        assert backend.request("PUT", f"/resource_classes/{name}").status_code == 201
    listed = [
        rc["name"] for rc in backend.request("GET", "/resource_classes").json()["resource_classes"]
    ]
    assert listed[:3] == ["VCPU", "MEMORY_MB", "DISK_GB"]
    customs = [name for name in listed if name in made]
    assert customs == made
    standard = [name for name in listed if not name.startswith("CUSTOM_")]
    assert standard == list(os_resource_classes.STANDARDS)


def test_a_sharing_provider_alone_beside_a_suffixed_group_keeps_one_anchor(
    backend: Backend,
) -> None:
    """Declared (sharing-beside-suffixed): which anchor survives is each side's own order."""
    agg = new_uuid()
    ss = _provider(backend, {"DISK_GB": 100}, traits=[SHARES], aggregates=[agg])
    cn = _provider(backend, {"VCPU": 8}, aggregates=[agg])

    doc = _candidates(backend, f"resources=DISK_GB:10&resources_C=VCPU:1&member_of_C={agg}")

    found = _requests(doc)
    joined = (
        {cn: {"resources": {"VCPU": 1}}, ss: {"resources": {"DISK_GB": 10}}},
        {"": [ss], "_C": [cn]},
    )
    assert found in ([], [joined])
    if backend.fake is not None:
        # The fake keeps the candidate anchored to the tree whose root uuid sorts first.
        assert found == ([joined] if cn < ss else [])
