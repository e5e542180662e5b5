"""The fault proxy in front of the real Placement on 127.0.0.1: one test per behaviour.

The upstream is the session's shared ``real_placement`` (the real openstack-placement WSGI app
on a loopback port; the proxy only needs its port, as it would a ``PlacementServer``'s).
"Applied" is always read back from Placement directly, not through the proxy, and "not
forwarded" is checked on the requests Placement itself recorded.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import LATEST, Real, held, new_id, raw_body
from tests.support.faultproxy import (
    Action,
    FaultProxy,
    Match,
    answer,
    answer_after_forwarding,
    delay,
    drop_answer,
    gate,
    gate_answer,
    hold,
    reset,
    stall,
)

pytestmark = pytest.mark.functional

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {LATEST}"}
#: Connect and read timeouts of a client that gives up on a stalled or held request.
IMPATIENT = (1.0, 0.3)
WAIT = 10.0


@pytest.fixture
def proxy(real_placement: EmbeddedPlacement) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", real_placement.port) as proxy:
        yield proxy


def put(
    proxy: FaultProxy, consumer: str, provider: str, timeout: float | tuple[float, float] = WAIT
) -> requests.Response:
    """Claim 2 VCPU for a new ``consumer`` through the proxy."""
    body = raw_body({provider: {"VCPU": 2}}, None)
    url = f"{proxy.url}/allocations/{consumer}"
    return requests.put(url, json=body, headers=HEADERS, timeout=timeout)


def get(proxy: FaultProxy, path: str) -> requests.Response:
    return requests.get(f"{proxy.url}{path}", headers=HEADERS, timeout=WAIT)


def upstream_saw(upstream: EmbeddedPlacement, method: str, path: str) -> bool:
    return any(r.method == method and r.path == path for r in upstream.requests_seen)


def assert_applied(admin: PlacementAdmin, consumer: str, provider: str) -> None:
    raw = admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 1
    assert held(raw) == {provider: {"VCPU": 2}}


def assert_not_applied(upstream: EmbeddedPlacement, admin: PlacementAdmin, consumer: str) -> None:
    assert admin.get_allocations(consumer) == {"allocations": {}}
    assert not upstream_saw(upstream, "PUT", f"/allocations/{consumer}")


def raw_exchange(proxy: FaultProxy, data: bytes) -> bytes:
    """Send ``data`` on a plain socket and read the answer until the proxy closes."""
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=WAIT) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("host", ["10.0.0.1", "example.com", "0.0.0.0", "::"])
def test_only_a_loopback_upstream_is_accepted(host: str) -> None:
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        FaultProxy(host, 8778)


def test_pass_through_relays_the_upstream_answer(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    consumer = new_id()

    created = put(proxy, consumer, compute_node)
    read = get(proxy, f"/allocations/{consumer}")

    assert created.status_code == 204
    assert read.status_code == 200
    assert read.json() == placement_admin.get_allocations(consumer)
    assert read.headers["Connection"] == "close"
    assert [(r.action, r.upstream_status, r.client_status) for r in proxy.log] == [
        ("pass", 204, 204),
        ("pass", 200, 200),
    ]


def test_an_http_1_0_request_without_host_is_relayed(proxy: FaultProxy) -> None:
    reply = raw_exchange(proxy, b"GET / HTTP/1.0\r\nX-Auth-Token: admin\r\n\r\n")

    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert f"Content-Length: {len(body)}".encode() in head
    assert b'"max_version"' in body


def test_a_malformed_request_is_answered_400(proxy: FaultProxy) -> None:
    assert raw_exchange(proxy, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert proxy.log == []


def test_rules_match_method_and_prefix_and_are_consumed_in_order(proxy: FaultProxy) -> None:
    first = proxy.add_rule("GET", "/resource_providers", answer(503), times=2)
    second = proxy.add_rule(None, "/", answer(502))

    statuses = [get(proxy, p).status_code for p in ["/"] + ["/resource_providers"] * 3]

    assert statuses == [502, 503, 503, 200]
    assert first.applied.is_set() and second.applied.is_set()
    assert [r.action for r in proxy.log] == ["answer", "answer", "answer", "pass"]


def test_delay_waits_then_forwards(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    rule = proxy.add_rule("PUT", "/allocations/", delay(0.05))
    consumer = new_id()

    began = time.monotonic()
    response = put(proxy, consumer, compute_node)

    assert time.monotonic() - began >= 0.05
    assert response.status_code == 204
    assert rule.upstream_status == 204
    assert_applied(placement_admin, consumer, compute_node)


def test_drop_answer_applies_the_write_but_the_client_gets_no_answer(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    rule = proxy.add_rule("PUT", "/allocations/", drop_answer())
    consumer = new_id()

    with pytest.raises(requests.exceptions.ConnectionError):
        put(proxy, consumer, compute_node)

    assert rule.applied.wait(WAIT)
    assert rule.upstream_status == 204
    assert_applied(placement_admin, consumer, compute_node)
    record = proxy.wait_for(lambda r: r.action == "drop_answer", WAIT)
    assert (record.upstream_status, record.client_status) == (204, None)


def test_reset_applies_nothing(
    proxy: FaultProxy,
    real: Real,
) -> None:
    rule = proxy.add_rule("PUT", "/allocations/", reset())
    consumer = new_id()

    with pytest.raises(requests.exceptions.ConnectionError):
        put(proxy, consumer, real.node)

    assert rule.applied.wait(WAIT)
    assert not rule.forwarded.is_set()
    assert_not_applied(real.placement, real.admin, consumer)


def test_answer_503_is_an_html_page_and_applies_nothing(
    proxy: FaultProxy,
    real: Real,
) -> None:
    proxy.add_rule("PUT", "/allocations/", answer(503))
    consumer = new_id()

    response = put(proxy, consumer, real.node)

    assert response.status_code == 503
    assert response.headers["Content-Type"].startswith("text/html")
    assert "503 Service Unavailable" in response.text
    assert_not_applied(real.placement, real.admin, consumer)


def test_answer_after_forwarding_500_applies_the_write(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    rule = proxy.add_rule("PUT", "/allocations/", answer_after_forwarding(500))
    consumer = new_id()

    response = put(proxy, consumer, compute_node)

    assert response.status_code == 500
    assert response.headers["Content-Type"].startswith("text/html")
    assert rule.upstream_status == 204
    assert_applied(placement_admin, consumer, compute_node)


def test_stall_times_the_client_out_and_applies_nothing(
    proxy: FaultProxy,
    real: Real,
) -> None:
    rule = proxy.add_rule("PUT", "/allocations/", stall())
    consumer = new_id()

    with pytest.raises(requests.exceptions.ReadTimeout):
        put(proxy, consumer, real.node, timeout=IMPATIENT)
    assert rule.applied.wait(WAIT)
    proxy.release_stalled()

    record = proxy.wait_for(lambda r: r.action == "stall", WAIT)
    assert (record.upstream_status, record.client_status) == (None, None)
    assert_not_applied(real.placement, real.admin, consumer)


def test_hold_commits_when_forwarded_by_its_handle(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    rule = proxy.add_rule("PUT", "/allocations/", hold())
    consumer = new_id()
    with pytest.raises(requests.exceptions.ReadTimeout):
        put(proxy, consumer, compute_node, timeout=IMPATIENT)
    assert rule.applied.wait(WAIT)  # the proxy holds the PUT
    assert placement_admin.get_allocations(consumer) == {"allocations": {}}

    rule.forward()

    assert rule.forwarded.wait(WAIT)
    assert rule.upstream_status == 204
    assert_applied(placement_admin, consumer, compute_node)
    assert proxy.wait_for(lambda r: r.action == "hold", WAIT).upstream_status == 204


def test_hold_forwarded_after_the_reread_commits_between_it_and_the_next_request(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    rule = proxy.add_rule("PUT", "/allocations/", hold(forward_after=Match("GET", "/allocations/")))
    consumer = new_id()
    with pytest.raises(requests.exceptions.ReadTimeout):
        put(proxy, consumer, compute_node, timeout=IMPATIENT)
    assert rule.applied.wait(WAIT)  # the proxy holds the PUT

    reread = get(proxy, f"/allocations/{consumer}")
    after = get(proxy, f"/allocations/{consumer}")  # sent at once: no wait for the commit

    assert reread.json() == {"allocations": {}}
    assert after.json()["consumer_generation"] == 1
    assert rule.forwarded.wait(WAIT)
    assert rule.upstream_status == 204
    assert_applied(placement_admin, consumer, compute_node)


def test_gate_forwards_the_request_only_once_its_event_is_set_while_others_pass(
    proxy: FaultProxy,
    real: Real,
) -> None:
    go = threading.Event()
    rule = proxy.add_rule("PUT", "/allocations/", gate(go))
    consumer = new_id()
    answered: list[requests.Response] = []
    writer = threading.Thread(target=lambda: answered.append(put(proxy, consumer, real.node)))
    writer.start()
    try:
        assert rule.applied.wait(WAIT)  # the proxy keeps the PUT
        # Another request is answered while the PUT waits: it sees the consumer missing.
        assert get(proxy, f"/allocations/{consumer}").json() == {"allocations": {}}
        assert_not_applied(real.placement, real.admin, consumer)
    finally:
        go.set()
        writer.join(WAIT)

    assert not writer.is_alive()
    assert [r.status_code for r in answered] == [204]
    assert rule.upstream_status == 204
    assert_applied(real.admin, consumer, real.node)
    record = proxy.wait_for(lambda r: r.action == "gate", WAIT)
    assert (record.upstream_status, record.client_status) == (204, 204)


def test_gate_answer_applies_at_once_and_relays_the_answer_only_once_its_event_is_set(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    go = threading.Event()
    rule = proxy.add_rule("PUT", "/allocations/", gate_answer(go))
    consumer = new_id()
    answered: list[requests.Response] = []
    writer = threading.Thread(target=lambda: answered.append(put(proxy, consumer, compute_node)))
    writer.start()
    try:
        assert rule.forwarded.wait(WAIT)
        assert_applied(placement_admin, consumer, compute_node)
        assert answered == []  # committed, yet the client has no answer
    finally:
        go.set()
        writer.join(WAIT)

    assert not writer.is_alive()
    assert [r.status_code for r in answered] == [204]
    record = proxy.wait_for(lambda r: r.action == "gate_answer", WAIT)
    assert (record.upstream_status, record.client_status) == (204, 204)


def test_a_gate_needs_an_event(proxy: FaultProxy) -> None:
    with pytest.raises(ValueError, match="needs an event"):
        proxy.add_rule("PUT", "/allocations/", Action("gate"))


def test_close_releases_stalled_held_and_gated_requests_unforwarded(real: Real) -> None:
    proxy = FaultProxy("127.0.0.1", real.placement.port)
    actions = (stall(), hold(), gate(threading.Event()))
    rules = [proxy.add_rule("PUT", "/allocations/", a) for a in actions]
    consumers = [new_id() for _ in actions]
    errors: list[BaseException] = []

    def patient_client(consumer: str) -> None:
        try:
            put(proxy, consumer, real.node, timeout=(1.0, 60.0))
        except requests.RequestException as exc:
            errors.append(exc)

    clients = [threading.Thread(target=patient_client, args=(c,)) for c in consumers]
    for client in clients:
        client.start()
    assert all(rule.applied.wait(WAIT) for rule in rules)

    proxy.close()

    for client in clients:
        client.join(WAIT)
    assert not any(client.is_alive() for client in clients)
    assert len(errors) == len(actions)
    assert all(isinstance(e, requests.exceptions.ConnectionError) for e in errors)
    assert [t.name for t in threading.enumerate() if t.name.startswith("faultproxy")] == []
    for consumer in consumers:
        assert_not_applied(real.placement, real.admin, consumer)


def test_wait_for_times_out_without_a_matching_record(proxy: FaultProxy) -> None:
    with pytest.raises(TimeoutError):
        proxy.wait_for(lambda record: record.action == "reset", timeout=0.05)
