"""PlacementClient.request: untyped routes through the one transport, writes sent once."""

from __future__ import annotations

import pytest
import requests

import reportclient
from tests.support.answers import error_body, refused
from tests.support.wire import URL, calls, sent

RP = "4e8e5957-649f-477b-9e5b-f1f75b21c03c"
PROVIDER = {"uuid": RP, "name": "cn1", "generation": 0}
REQUEST_ID = "req-22222222-2222-4222-8222-222222222222"


def test_a_get_returns_status_body_headers_and_request_id(wire, client):
    wire.get(
        f"{URL}/resource_providers/{RP}",
        json=PROVIDER,
        headers={"x-openstack-request-id": REQUEST_ID, "Last-Modified": "Mon, 1 Jan 2024"},
    )

    answer = client.request("GET", f"/resource_providers/{RP}")

    assert answer.status == 200
    assert answer.body == PROVIDER
    assert answer.request_id == REQUEST_ID
    assert answer.headers["last-modified"] == "Mon, 1 Jan 2024"
    assert answer.microversion == "1.39"
    with pytest.raises(TypeError):
        answer.headers["x"] = "y"  # type: ignore[index]


def test_the_clients_microversion_goes_unless_one_is_given(wire, client):
    wire.get(f"{URL}/resource_providers/{RP}", json=PROVIDER)

    client.request("GET", f"/resource_providers/{RP}")
    answer = client.request("get", f"/resource_providers/{RP}", microversion="1.14")

    versions = [r.headers["OpenStack-API-Version"] for r in wire.request_history]
    assert versions == ["placement 1.39", "placement 1.14"]
    assert answer.microversion == "1.14"


def test_a_post_sends_its_body_and_shows_the_location(wire, client):
    wire.post(
        f"{URL}/resource_providers",
        status_code=200,
        json=PROVIDER,
        headers={"Location": f"{URL}/resource_providers/{RP}", "Set-Cookie": "session=secret"},
    )

    answer = client.request("POST", "/resource_providers", json={"name": "cn1", "uuid": RP})

    assert sent(wire, 0) == {"name": "cn1", "uuid": RP}
    assert answer.location == f"{URL}/resource_providers/{RP}"
    assert "set-cookie" not in answer.headers


def test_a_204_has_no_body(wire, client):
    wire.delete(f"{URL}/resource_providers/{RP}", status_code=204, text="")

    answer = client.request("DELETE", f"/resource_providers/{RP}")

    assert (answer.status, answer.body) == (204, None)


def test_an_error_is_the_same_typed_error_as_for_typed_calls(wire, client):
    wire.put(
        f"{URL}/resource_providers/{RP}/traits",
        status_code=409,
        json=error_body(
            409,
            "resource provider generation conflict",
            "placement.concurrent_update",
        ),
    )

    with pytest.raises(reportclient.GenerationConflict) as raised:
        client.request(
            "PUT",
            f"/resource_providers/{RP}/traits",
            json={"traits": [], "resource_provider_generation": 0},
        )

    assert raised.value.code == "placement.concurrent_update"
    assert raised.value.status == 409
    assert raised.value.provider_conflict
    assert len(wire.request_history) == 1  # a conflict is the caller's to handle


def test_a_404_naming_a_provider_is_provider_not_found(wire, client):
    wire.get(
        f"{URL}/resource_providers/{RP}",
        status_code=404,
        json=error_body(404, f"No resource provider with uuid {RP} found"),
    )

    with pytest.raises(reportclient.ProviderNotFound):
        client.request("GET", f"/resource_providers/{RP}")


@pytest.mark.parametrize(
    "failure",
    [
        {"exc": requests.exceptions.ConnectionError("reset")},
        {"exc": requests.exceptions.ReadTimeout("slow")},
        {"status_code": 503, "text": "<html>unavailable</html>"},
    ],
)
def test_a_write_whose_answer_is_lost_is_never_sent_again(wire, client, sleeps, failure):
    wire.put(f"{URL}/resource_classes/CUSTOM_FPGA", **failure)

    with pytest.raises(reportclient.PlacementUnavailable) as raised:
        client.request("PUT", "/resource_classes/CUSTOM_FPGA")

    assert raised.value.outcome_unknown
    assert calls(wire) == [("PUT", "/resource_classes/custom_fpga")]
    assert sleeps == []


def test_a_get_placement_did_not_answer_is_tried_again_under_the_policy(wire, client, sleeps):
    wire.get(
        f"{URL}/resource_classes",
        [{"exc": refused()}, {"status_code": 503, "text": "busy"}, {"json": {"x": 1}}],
    )

    answer = client.request("GET", "/resource_classes")

    assert answer.body == {"x": 1}
    assert len(wire.request_history) == 3
    assert sleeps == [1.5, 3.0]


def test_a_get_under_a_per_call_policy_is_tried_once(wire, client, sleeps):
    wire.get(f"{URL}/resource_classes", [{"status_code": 503, "text": "busy"}, {"json": {}}])

    with pytest.raises(reportclient.PlacementUnavailable):
        client.request("GET", "/resource_classes", retry=reportclient.NO_RETRY)

    assert len(wire.request_history) == 1


def test_a_per_call_timeout_names_itself_in_the_error(wire, client):
    wire.get(f"{URL}/resource_classes", exc=requests.exceptions.ReadTimeout("slow"))

    with pytest.raises(reportclient.PlacementUnavailable) as raised:
        client.request("GET", "/resource_classes", timeout=2.5, retry=reportclient.NO_RETRY)

    assert "within 2.5 s" in raised.value.message


@pytest.mark.parametrize(
    "method, path, kwargs",
    [
        ("PATCH", "/resource_providers", {}),
        ("TRACE", "/", {}),
        (None, "/", {}),
        ("GET", "resource_providers", {}),
        ("GET", "", {}),
        ("GET", "//evil.example/x", {}),
        ("GET", "http://evil.example/x", {}),
        ("GET", "/a b", {}),
        ("GET", "/a\r\nX-Injected: 1", {}),
        ("GET", "/x#frag", {}),
        ("GET", "/resource_providers", {"json": {"a": 1}}),
        ("DELETE", "/resource_providers", {"json": {}}),
        ("GET", "/", {"microversion": "latest"}),
        ("GET", "/", {"timeout": 0}),
        ("GET", "/", {"global_request_id": "not-a-request-id"}),
        ("GET", "/", {"retry": object()}),
        # Dot segments: removed before sending (urllib3), so the route sent
        # is not the one the caches would be told of.
        ("DELETE", "/resource_providers/x/inventories/../../../allocations/y", {}),
        ("GET", "/allocations/../resource_providers", {}),
        ("PUT", "/allocations/./x", {"json": {}}),
        ("GET", "/..", {}),
        # ... however spelled: requests unescapes "%2e" to "." before urllib3.
        ("GET", "/allocations/%2e%2e/resource_providers", {}),
        ("DELETE", "/resource_providers/x/inventories/%2E%2E/.%2e/%2e./allocations/y", {}),
        ("PUT", "/allocations/%2e/x", {"json": {}}),
    ],
)
def test_malformed_requests_are_refused_before_the_wire(wire, client, method, path, kwargs):
    with pytest.raises(reportclient.InvalidInput):
        client.request(method, path, **kwargs)
    assert wire.request_history == []


def test_dots_in_a_query_or_inside_a_segment_are_not_dot_segments(wire, client):
    wire.get(f"{URL}/resource_providers", json={"resource_providers": []})
    assert client.request("GET", "/resource_providers?name=../x").status == 200
    wire.get(f"{URL}/traits/CUSTOM_A..B", status_code=404, json={"errors": []})
    with pytest.raises(reportclient.PlacementError):
        client.request("GET", "/traits/CUSTOM_A..B")
    assert len(wire.request_history) == 2


def test_a_query_string_may_name_a_url(wire, client):
    wire.get(f"{URL}/resource_providers", json={"resource_providers": []})

    answer = client.request("GET", "/resource_providers?name=http://x")

    assert answer.status == 200
    assert wire.request_history[0].url.startswith(URL + "/resource_providers?")
