"""Microversions against the real Placement: 1.28 floor, consumer types, negotiation."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest

from reportclient import InvalidInput, MicroversionUnsupported, PlacementClient, add_allocations
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import (
    JOIN_TIMEOUT,
    Real,
    claim,
    held,
    make_cached_client,
    make_client,
    new_id,
    raw_body,
    update,
    wire,
)


def test_client_pinned_to_1_28_claims_at_1_28_without_consumer_type(real: Real) -> None:
    client = real.client(microversion="1.28")
    consumer = new_id()
    real.placement.clear_requests_seen()

    state = claim(client, consumer, {real.node: {"VCPU": 1}})

    # Placement refuses consumer_type below 1.38 with a 400, so a 204 proves none was sent.
    assert real.wire() == [("PUT", f"/allocations/{consumer}", 204)]
    assert [r.microversion for r in real.placement.requests_seen] == ["1.28"]
    assert state.generation == 1
    assert state.consumer_type is None
    raw = real.admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 1
    assert raw["consumer_type"] == "unknown"  # what Placement shows for a typeless consumer
    assert held(raw) == {real.node: {"VCPU": 1}}


@pytest.mark.parametrize(
    ("make", "tried_first"),
    [
        # The cached generation is sent, refused, re-read: the consumer is created anew.
        pytest.param(make_cached_client, [("PUT", 409)], id="cached-recovers-after-a-409"),
        # The default TTL reads first, finds the consumer gone and re-creates it.
        pytest.param(make_client, [], id="default-ttl-reads-and-recreates"),
    ],
)
def test_client_pinned_to_1_28_recreates_a_consumer_deleted_by_another_writer(
    real: Real,
    make: Callable[..., PlacementClient],
    tried_first: list[tuple[str, int]],
) -> None:
    client = make(real.placement, microversion="1.28")
    consumer = new_id()
    claim(client, consumer, {real.node: {"VCPU": 1}})
    emptied = real.admin.put_allocations(consumer, raw_body({}, 1))
    assert emptied.status_code == 204, emptied.text
    real.placement.clear_requests_seen()

    state = claim(client, consumer, {real.node: {"VCPU": 2}})

    path = f"/allocations/{consumer}"
    expected = [(method, path, status) for method, status in tried_first]
    expected += [("GET", path, 200), ("PUT", path, 204)]
    assert real.wire() == expected
    assert [r.microversion for r in real.placement.requests_seen] == ["1.28"] * len(expected)
    assert state.generation == 1
    assert real.holds(consumer) == (1, {real.node: {"VCPU": 2}})


def test_client_pinned_to_1_28_releases_with_the_cached_generation(real: Real) -> None:
    client = real.cached_client(microversion="1.28")
    consumer = new_id()
    claim(client, consumer, {real.node: {"VCPU": 1}})
    real.placement.clear_requests_seen()

    client.release(consumer)

    assert real.wire() == [("PUT", f"/allocations/{consumer}", 204)]
    assert [r.microversion for r in real.placement.requests_seen] == ["1.28"]
    assert real.admin.get_allocations(consumer) == {"allocations": {}}
    assert real.admin.usages(real.node)["VCPU"] == 0


def test_client_pinned_to_1_28_with_the_default_ttl_releases_with_the_generation_it_reads(
    real: Real,
) -> None:
    client = real.client(microversion="1.28")
    consumer = new_id()
    claim(client, consumer, {real.node: {"VCPU": 1}})
    real.placement.clear_requests_seen()

    client.release(consumer)

    path = f"/allocations/{consumer}"
    assert real.wire() == [("GET", path, 200), ("PUT", path, 204)]
    assert [r.microversion for r in real.placement.requests_seen] == ["1.28"] * 2
    assert real.admin.get_allocations(consumer) == {"allocations": {}}
    assert real.admin.usages(real.node)["VCPU"] == 0


def test_negotiated_client_reports_1_39_after_one_get_root(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement, microversion=None)
    real_placement.clear_requests_seen()

    assert client.microversion == "1.39"
    assert client.microversion == "1.39"

    assert wire(real_placement) == [("GET", "/", 200)]


def test_pinned_client_reports_its_version_without_a_request(
    real_placement: EmbeddedPlacement,
) -> None:
    real_placement.clear_requests_seen()

    client = make_client(real_placement, microversion="1.30")

    assert client.microversion == "1.30"
    assert wire(real_placement) == []


def test_client_pinned_to_1_38_writes_the_consumer_type_it_is_given(real: Real) -> None:
    client = real.client(microversion="1.38")
    consumer = new_id()
    real.placement.clear_requests_seen()

    state = claim(client, consumer, {real.node: {"VCPU": 1}}, consumer_type="MIGRATION")

    assert [r.microversion for r in real.placement.requests_seen] == ["1.38"]
    assert state.consumer_type == "MIGRATION"
    raw = real.admin.request("GET", f"/allocations/{consumer}", microversion="1.39").json()
    assert raw["consumer_type"] == "MIGRATION"
    assert raw["consumer_generation"] == 1


def test_release_at_1_38_of_an_uncached_migration_consumer_reads_then_deletes_it(
    real: Real,
) -> None:
    consumer = new_id()
    real.admin.put_allocations(
        consumer, raw_body({real.node: {"VCPU": 1}}, None, consumer_type="MIGRATION")
    ).raise_for_status()
    client = real.client(microversion="1.38")
    real.placement.clear_requests_seen()

    client.release(consumer)

    # The PUT needs a consumer_type at 1.38; the one Placement reported is sent back.
    path = f"/allocations/{consumer}"
    assert real.wire() == [("GET", path, 200), ("PUT", path, 204)]
    assert real.admin.get_allocations(consumer) == {"allocations": {}}
    assert real.admin.usages(real.node)["VCPU"] == 0


def test_update_without_consumer_type_keeps_the_consumers_type(real: Real) -> None:
    client, consumer = real.claimed({real.node: {"VCPU": 1}}, consumer_type="MIGRATION")
    real.placement.clear_requests_seen()

    update(client, consumer, add_allocations({real.node: {"VCPU": 1}}))

    # Sent with no type, at the lowest version with consumer generations
    # (the cheapest for Placement, see LEAN_VERSION), and Placement keeps the type.
    seen = [(r.method, r.microversion) for r in real.placement.requests_seen]
    assert seen == [("GET", "1.28"), ("PUT", "1.28")]
    raw = real.admin.get_allocations(consumer)
    assert held(raw) == {real.node: {"VCPU": 2}}
    assert raw["consumer_type"] == "MIGRATION"


@pytest.mark.parametrize("version", ["1.27", "1.40", "2.0", "latest"])
def test_pinning_a_version_outside_1_28_to_1_39_is_invalid_input(
    real_placement: EmbeddedPlacement, version: str
) -> None:
    real_placement.clear_requests_seen()

    with pytest.raises(InvalidInput) as caught:
        make_client(real_placement, microversion=version)

    assert version in str(caught.value)
    assert wire(real_placement) == []


# -- a server too old for consumer generations ---------------------------------------------------


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""


@pytest.fixture
def old_placement() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """A loopback server whose root document offers 1.0 to 1.27 and refuses everything else.

    Yields its URL and the ``(method, path)`` of every request it received.
    """
    seen: list[tuple[str, str]] = []
    root = (
        b'{"versions": [{"id": "v1.0", "max_version": "1.27", "min_version": "1.0", '
        b'"status": "CURRENT", "links": [{"rel": "self", "href": ""}]}]}'
    )

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        seen.append((environ["REQUEST_METHOD"], environ["PATH_INFO"]))
        if environ["REQUEST_METHOD"] == "GET" and environ["PATH_INFO"] == "/":
            start_response("200 OK", [("Content-Type", "application/json")])
            return [root]
        start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
        return [b"this fake only serves GET /"]

    server: WSGIServer = make_server("127.0.0.1", 0, app, handler_class=_QuietHandler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", seen
    finally:
        server.shutdown()
        thread.join(JOIN_TIMEOUT)
        server.server_close()
        assert not thread.is_alive()


def test_server_offering_only_up_to_1_27_is_refused_with_microversion_unsupported(
    old_placement: tuple[str, list[tuple[str, str]]],
) -> None:
    url, seen = old_placement
    client = PlacementClient.from_endpoint(url, token="admin")
    rp, consumer = new_id(), new_id()

    with pytest.raises(MicroversionUnsupported) as caught:
        claim(client, consumer, {rp: {"VCPU": 1}})

    error = caught.value
    assert seen == [("GET", "/")]  # nothing was written
    assert error.message == (
        "Placement offers microversions 1.0 to 1.27; reportclient speaks 1.28 to 1.39"
    )
    # keystoneauth's discovery read the document: no status or request id to report.
    assert error.status is None
    assert (error.method, error.url) == ("GET", "/")
    assert "1.27" in str(error) and "1.28" in str(error)


def test_server_offering_only_up_to_1_27_refuses_microversion_property_too(
    old_placement: tuple[str, list[tuple[str, str]]],
) -> None:
    url, seen = old_placement
    client = PlacementClient.from_endpoint(url, token="admin")

    with pytest.raises(MicroversionUnsupported):
        _ = client.microversion

    assert seen == [("GET", "/")]
