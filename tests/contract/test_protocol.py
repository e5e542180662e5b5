"""Microversions, body schema, auth, headers and provider views."""

from __future__ import annotations

import re

import pytest

from . import BAD_REQUEST, Backend, body, detail, new_uuid, outcome

VCPU_8 = {"VCPU": {"total": 8}}
REQUEST_ID = re.compile(
    r"^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)


def test_root_needs_no_token_and_states_the_version_range(anonymous: Backend) -> None:
    response = anonymous.request("GET", "/", microversion=None)
    assert response.status_code == 200
    assert response.json() == {
        "versions": [
            {
                "id": "v1.0",
                "max_version": "1.39",
                "min_version": "1.0",
                "status": "CURRENT",
                "links": [{"rel": "self", "href": ""}],
            }
        ]
    }


def test_missing_version_header_means_1_0(backend: Backend) -> None:
    response = backend.request("GET", f"/allocations/{new_uuid()}", microversion=None)
    assert response.headers["openstack-api-version"] == "placement 1.0"
    assert response.headers["vary"] == "openstack-api-version"


def test_latest_means_the_maximum(backend: Backend) -> None:
    response = backend.request("GET", f"/allocations/{new_uuid()}", microversion="latest")
    assert response.headers["openstack-api-version"] == "placement 1.39"


def test_version_above_maximum_is_406_with_the_supported_range(backend: Backend) -> None:
    response = backend.request("GET", f"/allocations/{new_uuid()}", microversion="1.40")
    error = response.json()["errors"][0]
    assert response.status_code == 406
    assert (error["max_version"], error["min_version"], "code" in error) == ("1.39", "1.0", False)
    assert "openstack-api-version" not in response.headers


def test_error_code_appears_only_from_1_23(backend: Backend) -> None:
    consumer = new_uuid()
    old = backend.request("DELETE", f"/allocations/{consumer}", microversion="1.22")
    new = backend.request("DELETE", f"/allocations/{consumer}", microversion="1.23")
    assert "code" not in old.json()["errors"][0]
    assert new.json()["errors"][0]["code"] == "placement.undefined_code"


def test_every_response_carries_a_request_id(backend: Backend) -> None:
    ok = backend.request("GET", f"/allocations/{new_uuid()}")
    error = backend.request("DELETE", f"/allocations/{new_uuid()}")
    for response in (ok, error):
        assert REQUEST_ID.match(response.headers["x-openstack-request-id"])
        # only the x- spelling: a caller reading "openstack-request-id" finds nothing
        assert "openstack-request-id" not in response.headers
    assert error.json()["errors"][0]["request_id"] == error.headers["x-openstack-request-id"]


def test_consumer_generation_missing_at_1_28_is_400(backend: Backend) -> None:
    rp = backend.create_provider(VCPU_8)
    doc = body({rp: {"VCPU": 1}}, consumer_type=None)
    del doc["consumer_generation"]
    response = backend.request("PUT", f"/allocations/{new_uuid()}", doc, microversion="1.28")
    assert outcome(response) == (400, "placement.undefined_code")
    assert "'consumer_generation' is a required property" in detail(response)


def test_consumer_type_sent_at_1_37_is_400(backend: Backend) -> None:
    rp = backend.create_provider(VCPU_8)
    response = backend.request(
        "PUT", f"/allocations/{new_uuid()}", body({rp: {"VCPU": 1}}), microversion="1.37"
    )
    assert outcome(response) == (400, "placement.undefined_code")
    assert "('consumer_type' was unexpected)" in detail(response)


def test_consumer_type_missing_at_1_38_is_400(backend: Backend) -> None:
    rp = backend.create_provider(VCPU_8)
    response = backend.request(
        "PUT",
        f"/allocations/{new_uuid()}",
        body({rp: {"VCPU": 1}}, consumer_type=None),
        microversion="1.38",
    )
    assert outcome(response) == (400, "placement.undefined_code")
    assert "'consumer_type' is a required property" in detail(response)


def test_post_consumer_type_missing_at_1_38_is_400(backend: Backend) -> None:
    rp = backend.create_provider(VCPU_8)
    response = backend.request(
        "POST", "/allocations", {new_uuid(): body({rp: {"VCPU": 1}}, consumer_type=None)}
    )
    assert outcome(response) == (400, "placement.undefined_code")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"resources": {"vcpu": 1}}, id="lower-case-class"),
        pytest.param({"resources": {"VCPU": 0}}, id="amount-0"),
        pytest.param({"resources": {"VCPU": "1"}}, id="amount-string"),
        pytest.param({"resources": {}}, id="no-resources"),
        pytest.param({"rp_key": "not-a-uuid"}, id="bad-provider-key"),
        pytest.param({"project_id": ""}, id="empty-project"),
        pytest.param({"user_id": "u" * 256}, id="user-too-long"),
        pytest.param({"consumer_type": "instance"}, id="lower-case-type"),
        pytest.param({"extra": True}, id="unknown-key"),
    ],
)
def test_schema_violation_is_400_undefined_code(
    backend: Backend, change: dict[str, object]
) -> None:
    rp, change = backend.create_provider(VCPU_8), dict(change)  # params are shared: copy
    key = str(change.pop("rp_key", rp))
    resources = change.pop("resources", {"VCPU": 1})
    doc = body({}, None)
    doc["allocations"] = {key: {"resources": resources}}
    doc.update(change)
    response = backend.request("PUT", f"/allocations/{new_uuid()}", doc)
    assert outcome(response) == (400, "placement.undefined_code")
    assert response.json()["errors"][0]["title"] == "Bad Request"
    assert detail(response).startswith(BAD_REQUEST.format("JSON does not validate: ")[:-2])


def test_malformed_consumer_uuid_is_400(backend: Backend) -> None:
    rp = backend.create_provider(VCPU_8)
    response = backend.request("PUT", "/allocations/not-a-uuid", body({rp: {"VCPU": 1}}))
    assert (*outcome(response), detail(response)) == (
        400,
        "placement.undefined_code",
        BAD_REQUEST.format("Malformed consumer_uuid: not-a-uuid"),
    )


def test_post_allocations_below_1_13_is_404(backend: Backend) -> None:
    response = backend.request("POST", "/allocations", {}, microversion="1.12")
    assert response.status_code == 404


def test_missing_token_is_401(anonymous: Backend) -> None:
    response = anonymous.request("GET", f"/allocations/{new_uuid()}")
    assert response.status_code == 401
    assert response.json()["title"] == "Unauthorized"


@pytest.mark.parametrize(
    ("method", "path", "policy"),
    [
        ("GET", "/allocations/{c}", "placement:allocations:list"),
        ("PUT", "/allocations/{c}", "placement:allocations:update"),
        ("DELETE", "/allocations/{c}", "placement:allocations:delete"),
        ("POST", "/allocations", "placement:allocations:manage"),
    ],
)
def test_non_admin_token_is_403(member: Backend, method: str, path: str, policy: str) -> None:
    response = member.request(
        method, path.format(c=new_uuid()), json={} if method in ("PUT", "POST") else None
    )
    assert outcome(response) == (403, "placement.undefined_code")
    assert detail(response) == (
        f"Access was denied to this resource.\n\n Policy does not allow {policy} to be performed.  "
    )


def test_unknown_provider_reads_are_404(backend: Backend) -> None:
    rp = new_uuid()
    for path in ("", "/usages", "/allocations", "/inventories"):
        response = backend.request("GET", f"/resource_providers/{rp}{path}")
        assert outcome(response) == (404, "placement.undefined_code"), path


def test_provider_allocations_and_usages_after_writes(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}})
    a, b = new_uuid(), new_uuid()
    backend.request("PUT", f"/allocations/{a}", body({rp: {"VCPU": 2, "MEMORY_MB": 256}}))
    backend.request("PUT", f"/allocations/{b}", body({rp: {"VCPU": 1}}))
    backend.request("PUT", f"/allocations/{b}", body({rp: {"VCPU": 3}}, 1))
    allocations = backend.request("GET", f"/resource_providers/{rp}/allocations").json()
    usages = backend.request("GET", f"/resource_providers/{rp}/usages").json()
    assert allocations == {
        "resource_provider_generation": 4,
        "allocations": {
            a: {"resources": {"VCPU": 2, "MEMORY_MB": 256}, "consumer_generation": 1},
            b: {"resources": {"VCPU": 3}, "consumer_generation": 2},
        },
    }
    assert usages == {"resource_provider_generation": 4, "usages": {"VCPU": 5, "MEMORY_MB": 256}}


def test_delete_frees_usage_without_bumping_the_provider(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}))
    backend.request("DELETE", f"/allocations/{consumer}")
    usages = backend.request("GET", f"/resource_providers/{rp}/usages").json()
    assert usages == {"resource_provider_generation": 2, "usages": {"VCPU": 0}}


def test_inventory_defaults_and_generation_conflict(backend: Backend) -> None:
    rp = backend.create_provider(VCPU_8)
    put = backend.request(
        "PUT",
        f"/resource_providers/{rp}/inventories",
        {"resource_provider_generation": 1, "inventories": {"DISK_GB": {"total": 100}}},
    )
    stale = backend.request(
        "PUT",
        f"/resource_providers/{rp}/inventories",
        {"resource_provider_generation": 1, "inventories": {"DISK_GB": {"total": 100}}},
    )
    assert put.json() == {
        "resource_provider_generation": 2,
        "inventories": {
            "DISK_GB": {
                "total": 100,
                "reserved": 0,
                "min_unit": 1,
                "max_unit": 2147483647,
                "step_size": 1,
                "allocation_ratio": 1.0,
            }
        },
    }
    assert outcome(stale) == (409, "placement.concurrent_update")


def test_removing_inventory_in_use_is_inventory_inuse(backend: Backend) -> None:
    rp = backend.create_provider(VCPU_8)
    backend.request("PUT", f"/allocations/{new_uuid()}", body({rp: {"VCPU": 2}}))
    response = backend.request(
        "PUT",
        f"/resource_providers/{rp}/inventories",
        {"resource_provider_generation": 2, "inventories": {}},
    )
    assert outcome(response) == (409, "placement.inventory.inuse")


def test_provider_name_must_be_unique(backend: Backend) -> None:
    name = f"dup-{new_uuid()}"
    first = backend.request("POST", "/resource_providers", {"name": name})
    second = backend.request("POST", "/resource_providers", {"name": name})
    assert first.status_code == 200 and first.json()["generation"] == 0
    assert outcome(second) == (409, "placement.duplicate_name")
