"""GET /allocation_candidates and GET /usages: the fake answers as Placement 16.0.0 does.

Candidate queries are fenced with ``in_tree`` (the real service is shared by
the whole session); every expectation is a literal body or detail.
"""

from __future__ import annotations

from typing import Any

import pytest

from . import BAD_REQUEST, Backend, body, new_uuid


def _provider(backend: Backend, inventory: dict[str, Any], parent: str | None = None) -> str:
    name = f"contract-{new_uuid()}"
    inv = {rc: {"total": n} for rc, n in inventory.items()}
    if backend.fake is not None:
        return backend.fake.create_provider(name=name, inventory=inv, parent=parent)
    assert backend.admin is not None
    return backend.admin.create_provider(name=name, inventory=inv, parent=parent)


def _tree(backend: Backend) -> tuple[str, str]:
    root = _provider(backend, {"VCPU": 8, "MEMORY_MB": 2048})
    nic = _provider(backend, {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}, parent=root)
    return root, nic


def _candidates(backend: Backend, query: str, version: str = "1.39") -> tuple[int, Any]:
    response = backend.request("GET", f"/allocation_candidates?{query}", microversion=version)
    return response.status_code, response.json()


def test_granular_candidates_in_a_tree_at_1_39(backend: Backend) -> None:
    root, nic = _tree(backend)
    query = (
        f"resources=VCPU:2&resources_NET=NET_BW_EGR_KILOBIT_PER_SEC:100&in_tree={root}"
        "&group_policy=none"
    )

    assert _candidates(backend, query) == (
        200,
        {
            "allocation_requests": [
                {
                    "allocations": {
                        root: {"resources": {"VCPU": 2}},
                        nic: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 100}},
                    },
                    "mappings": {"": [root], "_NET": [nic]},
                }
            ],
            "provider_summaries": {
                root: {
                    "resources": {
                        "VCPU": {"capacity": 8, "used": 0},
                        "MEMORY_MB": {"capacity": 2048, "used": 0},
                    },
                    "traits": [],
                    "parent_provider_uuid": None,
                    "root_provider_uuid": root,
                },
                nic: {
                    "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": {"capacity": 1000, "used": 0}},
                    "traits": [],
                    "parent_provider_uuid": root,
                    "root_provider_uuid": root,
                },
            },
        },
    )


def test_candidates_at_1_33_have_no_mappings_and_usage_counts(backend: Backend) -> None:
    root, _ = _tree(backend)
    response = backend.request("PUT", f"/allocations/{new_uuid()}", body({root: {"VCPU": 3}}, None))
    assert response.status_code == 204

    status, doc = _candidates(backend, f"resources=VCPU:5&in_tree={root}", "1.33")

    assert status == 200
    assert doc["allocation_requests"] == [{"allocations": {root: {"resources": {"VCPU": 5}}}}]
    assert doc["provider_summaries"][root]["resources"]["VCPU"] == {"capacity": 8, "used": 3}


def test_no_room_is_an_empty_answer_not_an_error(backend: Backend) -> None:
    root, _ = _tree(backend)
    assert _candidates(backend, f"resources=VCPU:9&in_tree={root}") == (
        200,
        {"allocation_requests": [], "provider_summaries": {}},
    )


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        (
            "resources=VCPU",
            "Badly formed resources parameter. Expected resources query string parameter in "
            "form: ?resources=VCPU:2,MEMORY_MB:1024. Got: VCPU.",
        ),
        ("resources=VCPU:0", "Requested resource VCPU requires amount >= 1. Got: 0."),
        (
            "resources=VCPU:x",
            "Requested resource VCPU expected positive integer amount. Got: x.",
        ),
        (
            "resources=CUSTOM_NOT_A_CLASS_ANYWHERE:1",
            "Invalid resource class in resources parameter: No such resource class "
            "CUSTOM_NOT_A_CLASS_ANYWHERE.",
        ),
        (
            "resources1=VCPU:1&resources2=VCPU:1",
            'The "group_policy" parameter is required when specifying more than one '
            '"resources{N}" parameter.',
        ),
        (
            "resources=VCPU:1&member_of=not-a-uuid",
            "Invalid query string parameters: Expected 'member_of' parameter to contain valid "
            "UUID(s). Got: not-a-uuid",
        ),
        (
            "resources=VCPU:1&required=CUSTOM_NOT_A_TRAIT_ANYWHERE",
            "No such trait(s): CUSTOM_NOT_A_TRAIT_ANYWHERE.",
        ),
        (
            # The shape of the query is judged before any name is looked up.
            "resources=VCPU:1&required_X=CUSTOM_NOT_A_TRAIT_ANYWHERE",
            "Resourceless suffixed group request should be specified in `same_subtree` "
            "query param: bad group(s) - ['_X'].",
        ),
    ],
)
def test_malformed_candidate_queries_are_refused_in_placements_words(
    backend: Backend, query: str, detail: str
) -> None:
    response = backend.request("GET", f"/allocation_candidates?{query}")
    assert response.status_code == 400
    assert response.json()["errors"][0]["detail"] == BAD_REQUEST.format(detail)


def test_usages_group_by_consumer_type_from_1_38(backend: Backend) -> None:
    rp = _provider(backend, {"VCPU": 16})
    project = f"project-{new_uuid()}"
    for amount, ctype in ((2, "INSTANCE"), (3, "INSTANCE"), (1, "MIGRATION")):
        doc = body({rp: {"VCPU": amount}}, None, consumer_type=ctype, project_id=project)
        assert backend.request("PUT", f"/allocations/{new_uuid()}", doc).status_code == 204

    grouped = backend.request("GET", f"/usages?project_id={project}")
    flat = backend.request("GET", f"/usages?project_id={project}", microversion="1.37")
    everything = backend.request("GET", f"/usages?project_id={project}&consumer_type=all")
    nobody = backend.request("GET", f"/usages?project_id={project}&user_id=nobody")

    assert grouped.json() == {
        "usages": {
            "INSTANCE": {"VCPU": 5, "consumer_count": 2},
            "MIGRATION": {"VCPU": 1, "consumer_count": 1},
        }
    }
    assert flat.json() == {"usages": {"VCPU": 6}}
    assert everything.json() == {"usages": {"all": {"VCPU": 6, "consumer_count": 3}}}
    assert nobody.json() == {"usages": {}}


def test_usages_need_a_project(backend: Backend) -> None:
    response = backend.request("GET", "/usages?user_id=someone")
    assert response.status_code == 400
    assert response.json()["errors"][0]["detail"].startswith(
        BAD_REQUEST.format("Invalid query string parameters: 'project_id' is a required property")[
            :-3
        ]
    )


def test_allocation_writes_accept_a_candidates_mappings_from_1_34(backend: Backend) -> None:
    root, _ = _tree(backend)
    doc = body({root: {"VCPU": 1}}, None, mappings={"": [root]})
    old = {k: v for k, v in doc.items() if k != "consumer_type"}

    accepted = backend.request("PUT", f"/allocations/{new_uuid()}", doc)
    refused = backend.request("PUT", f"/allocations/{new_uuid()}", old, microversion="1.33")

    assert accepted.status_code == 204
    assert refused.status_code == 400
