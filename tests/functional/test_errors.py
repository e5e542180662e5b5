"""Typed errors built from the real Placement's answers, and the request ids that trace them."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from reportclient import (
    CapacityExceeded,
    InvalidInput,
    PlacementAuthError,
    PlacementClient,
    PlacementError,
)
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import (
    PROJECT,
    USER,
    Real,
    claim,
    fast_retry,
    make_cached_client,
    make_client,
    new_id,
    raw_body,
    wire,
)


def _claim_error(client: PlacementClient, allocations: dict[str, dict[str, int]]) -> Any:
    with pytest.raises(PlacementError) as caught:
        claim(client, new_id(), allocations)
    return caught.value


def _assert_traceable(error: PlacementError, placement: EmbeddedPlacement) -> None:
    """The error names the request Placement logged, and says so first in ``str()``."""
    assert error.request_id is not None and error.request_id.startswith("req-")
    assert error.request_id == placement.requests_seen[-1].response_request_id
    assert str(error).startswith(f"Request {error.request_id}:")
    assert error.detail


# -- 409 over capacity -----------------------------------------------------------------------


def test_claim_beyond_total_raises_capacity_exceeded_after_one_request(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    rp = placement_admin.create_provider(inventory={"VCPU": 4})
    client = make_client(real_placement, retry=fast_retry())
    real_placement.clear_requests_seen()

    error = _claim_error(client, {rp: {"VCPU": 5}})

    assert type(error) is CapacityExceeded
    assert len(wire(real_placement)) == 1
    assert wire(real_placement)[0][0::2] == ("PUT", 409)
    assert error.status == 409
    assert error.code == "placement.undefined_code"
    assert "capacity" in error.detail
    assert error.detail == (
        f"Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource "
        f"provider '{rp}'. The requested amount would exceed the capacity."
    )
    _assert_traceable(error, real_placement)
    assert placement_admin.usages(rp) == {"VCPU": 0}


def test_claim_beyond_max_unit_raises_capacity_exceeded_after_one_request(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    client = make_client(real_placement, retry=fast_retry())
    real_placement.clear_requests_seen()

    error = _claim_error(client, {compute_node: {"VCPU": 9}})

    assert type(error) is CapacityExceeded
    assert len(wire(real_placement)) == 1
    assert error.status == 409
    assert error.code == "placement.undefined_code"
    assert "would violate inventory constraints" in error.detail
    _assert_traceable(error, real_placement)


def test_claim_of_a_class_the_provider_has_no_inventory_of_raises_capacity_exceeded(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    rp = placement_admin.create_provider(inventory={"VCPU": 4})
    client = make_client(real_placement, retry=fast_retry())
    real_placement.clear_requests_seen()

    error = _claim_error(client, {rp: {"MEMORY_MB": 1}})

    # Placement's 409 "Inventory for 'MEMORY_MB' on resource provider ... invalid" shares the
    # over-capacity wording "Unable to allocate inventory"; retrying cannot help either way.
    assert type(error) is CapacityExceeded
    assert len(wire(real_placement)) == 1
    assert error.status == 409
    assert f"Inventory for 'MEMORY_MB' on resource provider '{rp}' invalid" in error.detail
    _assert_traceable(error, real_placement)


# -- 400 / 404 from the server -----------------------------------------------------------------


def test_unknown_resource_class_is_a_400_placement_error_without_retry(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    client = make_client(real_placement, retry=fast_retry())
    real_placement.clear_requests_seen()

    error = _claim_error(client, {compute_node: {"CUSTOM_NOPE": 1}})

    assert type(error) is PlacementError
    assert len(wire(real_placement)) == 1
    assert error.status == 400
    assert error.code == "placement.undefined_code"
    assert error.title == "Bad Request"
    assert "No such resource class CUSTOM_NOPE" in error.detail
    assert error.method == "PUT"
    _assert_traceable(error, real_placement)


def test_allocation_against_unknown_provider_is_a_400_placement_error(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement, retry=fast_retry())
    missing_rp = new_id()
    real_placement.clear_requests_seen()

    error = _claim_error(client, {missing_rp: {"VCPU": 1}})

    # Placement answers 400 (not 404) for a provider that does not exist.
    assert type(error) is PlacementError
    assert len(wire(real_placement)) == 1
    assert error.status == 400
    assert error.code == "placement.undefined_code"
    assert f"Allocation for resource provider '{missing_rp}' that does not exist" in error.detail
    _assert_traceable(error, real_placement)


def test_endpoint_with_a_wrong_path_is_a_404_placement_error(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    client = PlacementClient.from_endpoint(
        real_placement.url + "/placement", token=real_placement.token, microversion="1.39"
    )
    real_placement.clear_requests_seen()

    error = _claim_error(client, {compute_node: {"VCPU": 1}})

    assert type(error) is PlacementError
    assert len(wire(real_placement)) == 1
    assert error.status == 404
    assert error.code == "placement.undefined_code"
    assert error.detail == "The resource could not be found."
    _assert_traceable(error, real_placement)


# -- 401 / 403 ------------------------------------------------------------------------------------


def test_request_without_token_is_a_401_placement_auth_error(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    client = make_client(real_placement, token=None)
    real_placement.clear_requests_seen()

    error = _claim_error(client, {compute_node: {"VCPU": 1}})

    assert type(error) is PlacementAuthError
    assert len(wire(real_placement)) == 1
    assert error.status == 401
    # The auth middleware's body is not Placement's errors[] document: no code, no title.
    assert error.code is None
    assert "could not verify that you are authorized" in error.detail
    _assert_traceable(error, real_placement)


def test_request_with_non_admin_token_is_a_403_placement_error(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    client = make_client(real_placement, token="user1:project1")
    real_placement.clear_requests_seen()

    error = _claim_error(client, {compute_node: {"VCPU": 1}})

    assert type(error) is PlacementError
    assert len(wire(real_placement)) == 1
    assert error.status == 403
    assert error.code == "placement.undefined_code"
    assert "Policy does not allow placement:allocations:update" in error.detail
    _assert_traceable(error, real_placement)


def test_read_with_non_admin_token_is_a_403_placement_error(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement, token="user1:project1")
    real_placement.clear_requests_seen()

    with pytest.raises(PlacementError) as caught:
        client.get_allocations(new_id())

    error = caught.value
    assert type(error) is PlacementError
    assert (error.status, error.method) == (403, "GET")
    assert "Policy does not allow placement:allocations:list" in (error.detail or "")
    _assert_traceable(error, real_placement)


# -- malformed input never reaches the wire -------------------------------------------------------

RP = "8c8c6c4e-8b1b-4a3e-9a51-3a1f5b7c2d10"
_GOOD: dict[str, Any] = {
    "consumer": "5d7f3b0e-3f6a-4c1e-8d2a-0b9c4e6f1a22",
    "allocations": {RP: {"VCPU": 1}},
    "project_id": PROJECT,
    "user_id": USER,
    "consumer_type": None,
}


@pytest.mark.parametrize(
    "override",
    [
        {"consumer": "not-a-uuid"},
        {"allocations": {"not-a-uuid": {"VCPU": 1}}},
        {"allocations": {RP: {"vcpu": 1}}},
        {"allocations": {RP: {"VCPU": 0}}},
        {"allocations": {RP: {"VCPU": "1"}}},
        {"allocations": {RP: {"VCPU": True}}},
        {"allocations": {RP: {"VCPU": 2**31}}},
        {"allocations": {RP: {}}},
        {"project_id": ""},
        {"user_id": "u" * 256},
        {"consumer_type": "migration"},
    ],
    ids=lambda o: "-".join(f"{k}={v!r}"[:40] for k, v in o.items()),
)
def test_malformed_claim_raises_invalid_input_without_any_request(
    real_placement: EmbeddedPlacement, override: dict[str, Any]
) -> None:
    args = _GOOD | override
    client = make_client(real_placement, microversion=None)  # not even GET / may be sent
    real_placement.clear_requests_seen()

    with pytest.raises(InvalidInput) as caught:
        client.claim(
            args["consumer"],
            args["allocations"],
            project_id=args["project_id"],
            user_id=args["user_id"],
            consumer_type=args["consumer_type"],
        )

    assert isinstance(caught.value, ValueError)
    assert real_placement.wire_count() == 0


def test_malformed_consumer_on_read_and_release_raises_invalid_input_without_any_request(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement, microversion=None)
    real_placement.clear_requests_seen()

    with pytest.raises(InvalidInput):
        client.get_allocations("nope")
    with pytest.raises(InvalidInput):
        client.release("nope")
    with pytest.raises(InvalidInput):
        client.cached("nope")

    assert real_placement.wire_count() == 0


# -- global request id ----------------------------------------------------------------------------


def test_global_request_id_reaches_placement_on_every_request(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    global_id = f"req-{uuid.uuid4()}"
    client = make_client(real_placement, microversion=None, global_request_id=global_id)
    consumer = new_id()
    real_placement.clear_requests_seen()

    claim(client, consumer, {compute_node: {"VCPU": 1}})
    client.get_allocations(consumer)

    discovery, *seen = real_placement.requests_seen
    # keystoneauth's version discovery (GET /, once per Session) is anonymous
    # and carries no request id; every request of the client's own does.
    assert (discovery.method, discovery.path, discovery.sent_request_id) == ("GET", "/", None)
    assert [r.method for r in seen] == ["PUT", "GET"]
    assert [r.sent_request_id for r in seen] == [global_id] * 2
    assert [r.global_request_id for r in seen] == [global_id] * 2
    # Placement's own request ids stay distinct from the caller's global one.
    assert len({r.response_request_id for r in seen}) == 2
    assert global_id not in {r.response_request_id for r in seen}


def test_global_request_id_appears_in_placements_request_log(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    global_id = f"req-{uuid.uuid4()}"
    client = make_client(real_placement, global_request_id=global_id)
    consumer = new_id()
    real_placement.clear_requests_seen()

    claim(client, consumer, {compute_node: {"VCPU": 1}})

    lines = [
        line
        for line in real_placement.log_lines
        if line.logger == "placement.requestlog" and consumer in line.message
    ]
    assert len(lines) == 1
    assert lines[0].global_request_id == global_id
    assert lines[0].request_id == real_placement.requests_seen[-1].response_request_id


def test_error_from_a_request_with_global_id_carries_placements_own_request_id(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    global_id = f"req-{uuid.uuid4()}"
    client = make_client(real_placement, global_request_id=global_id)
    real_placement.clear_requests_seen()

    error = _claim_error(client, {compute_node: {"VCPU": 9}})

    assert real_placement.requests_seen[-1].global_request_id == global_id
    assert error.request_id != global_id
    _assert_traceable(error, real_placement)


def test_malformed_global_request_id_is_invalid_input(real_placement: EmbeddedPlacement) -> None:
    with pytest.raises(InvalidInput):
        make_client(real_placement, global_request_id="my-request-1")


@pytest.mark.parametrize(
    ("cached", "call"),
    [
        # The default client reads first: GET (the consumer is gone), PUT as new.
        (False, [("GET", 200), ("PUT", 204)]),
        # A client trusting its cache writes first and retries: PUT 409, GET, PUT.
        (True, [("PUT", 409), ("GET", 200), ("PUT", 204)]),
    ],
    ids=["default-ttl", "cached"],
)
def test_per_call_global_request_id_overrides_the_clients_on_every_request_of_the_call(
    real: Real,
    cached: bool,
    call: list[tuple[str, int]],
) -> None:
    client_id, call_id = f"req-{uuid.uuid4()}", f"req-{uuid.uuid4()}"
    build = make_cached_client if cached else make_client
    client = build(real.placement, global_request_id=client_id)
    consumer = new_id()
    claim(client, consumer, {real.node: {"VCPU": 1}})
    emptied = real.admin.put_allocations(consumer, raw_body({}, 1))
    assert emptied.status_code == 204, emptied.text
    real.placement.clear_requests_seen()

    claim(client, consumer, {real.node: {"VCPU": 2}}, global_request_id=call_id)
    client.get_allocations(consumer)

    seen = real.placement.requests_seen
    statuses = [(r.method, r.status) for r in seen]
    assert statuses == [*call, ("GET", 200)]
    assert [r.global_request_id for r in seen] == [call_id] * len(call) + [client_id]
    assert [r.sent_request_id for r in seen] == [call_id] * len(call) + [client_id]
