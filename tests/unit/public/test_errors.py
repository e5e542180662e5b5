"""Error responses become typed errors carrying what an operator needs."""

from __future__ import annotations

import pytest

import reportclient
from tests.support.answers import error_body
from tests.support.wire import PROJECT, URL, USER

REQ = "req-22222222-2222-4222-8222-222222222222"


def test_400_schema_error_is_placement_error_with_code_detail_and_request_id(
    wire, client, consumer, rp
):
    wire.put(
        f"{URL}/allocations/{consumer}",
        status_code=400,
        json=error_body(400, "JSON does not validate: 0 is less than the minimum of 1"),
        headers={"x-openstack-request-id": REQ},
    )

    with pytest.raises(reportclient.PlacementError) as err:
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    exc = err.value
    assert type(exc) is reportclient.PlacementError
    assert (exc.status, exc.code, exc.title) == (400, "placement.undefined_code", "Bad Request")
    assert exc.request_id == REQ
    assert exc.method == "PUT"
    assert exc.url == f"/allocations/{consumer}"
    assert exc.consumer_uuid == consumer
    assert "minimum of 1" in exc.detail
    assert str(exc).startswith(f"Request {REQ}:")


def test_404_keeps_placements_code(wire, client, consumer, rp):
    wire.put(
        f"{URL}/allocations/{consumer}",
        status_code=404,
        json=error_body(404, "No such provider", "placement.resource_provider.not_found"),
    )

    with pytest.raises(reportclient.PlacementError) as err:
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert err.value.status == 404
    assert err.value.code == "placement.resource_provider.not_found"


def test_request_id_falls_back_to_the_error_body(wire, client, consumer):
    wire.get(f"{URL}/allocations/{consumer}", status_code=400, json=error_body(400, "bad"))

    with pytest.raises(reportclient.PlacementError) as err:
        client.get_allocations(consumer)

    assert err.value.request_id == "req-00000000-0000-4000-8000-000000000000"


def test_html_error_page_is_kept_as_detail(wire, client, consumer):
    wire.get(
        f"{URL}/allocations/{consumer}",
        status_code=500,
        text="<html><body><h1>500 Internal Server Error</h1></body></html>",
    )

    with pytest.raises(reportclient.PlacementUnavailable) as err:
        client.get_allocations(consumer)

    assert err.value.status == 500
    assert err.value.code is None
    assert "500 Internal Server Error" in err.value.detail
    assert str(err.value).startswith("Request (no request id):")


def test_non_json_success_body_is_a_typed_error(wire, client, consumer):
    wire.get(f"{URL}/allocations/{consumer}", status_code=200, text="not json")

    with pytest.raises(reportclient.PlacementError, match="not JSON") as err:
        client.get_allocations(consumer)

    assert err.value.status == 200


def test_401_and_403_are_placement_errors_with_status(wire, client, consumer):
    wire.get(
        f"{URL}/allocations/{consumer}",
        [
            {"status_code": 401, "json": error_body(401, "unauthorized")},
            {"status_code": 403, "json": error_body(403, "forbidden")},
        ],
    )

    for status in (401, 403):
        with pytest.raises(reportclient.PlacementError) as err:
            client.get_allocations(consumer)
        assert err.value.status == status


def test_406_is_microversion_unsupported(wire, client, consumer):
    wire.get(
        f"{URL}/allocations/{consumer}",
        status_code=406,
        json={
            "errors": [
                {
                    "status": 406,
                    "title": "Not Acceptable",
                    "detail": "Version 1.39 is not supported",
                    "max_version": "1.30",
                    "min_version": "1.0",
                    "code": "placement.undefined_code",
                }
            ]
        },
    )

    with pytest.raises(reportclient.MicroversionUnsupported):
        client.get_allocations(consumer)


def test_every_error_is_a_placement_error():
    for cls in (
        reportclient.InvalidInput,
        reportclient.GenerationConflict,
        reportclient.CapacityExceeded,
        reportclient.PlacementUnavailable,
        reportclient.MicroversionUnsupported,
    ):
        assert issubclass(cls, reportclient.PlacementError)
    assert issubclass(reportclient.InvalidInput, ValueError)


def test_noauth2_401_body_is_read_for_title_and_message(wire, client, consumer):
    wire.get(
        f"{URL}/allocations/{consumer}",
        status_code=401,
        json={
            "message": "This server could not verify that you are authorized.<br /><br />\n",
            "code": "401 Unauthorized",
            "title": "Unauthorized",
        },
    )

    with pytest.raises(reportclient.PlacementError) as err:
        client.get_allocations(consumer)

    assert err.value.title == "Unauthorized"
    assert err.value.detail == "This server could not verify that you are authorized."


def test_webob_preamble_is_stripped_from_the_detail(wire, client, consumer):
    detail = (
        "The server could not comply with the request since it is either malformed or "
        "otherwise incorrect.\n\n JSON does not validate: 0 is less than the minimum of 1\n\n"
        "Failed validating 'minimum' in schema"
    )
    wire.get(f"{URL}/allocations/{consumer}", status_code=400, json=error_body(400, detail))

    with pytest.raises(reportclient.PlacementError) as err:
        client.get_allocations(consumer)

    assert err.value.detail.startswith("JSON does not validate: 0 is less than the minimum of 1")
    assert "Failed validating 'minimum'" in err.value.detail
