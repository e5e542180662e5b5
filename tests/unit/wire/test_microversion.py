"""Microversion negotiation and what each version changes (behaviour 7)."""

from __future__ import annotations

import pytest
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

import reportclient
from tests.support.answers import NO_CONTENT, allocations_body, root_document
from tests.support.wire import PROJECT, URL, USER, sent


def unpinned(**kwargs):
    return reportclient.PlacementClient.from_endpoint(URL, token="t", **kwargs)


def test_negotiates_once_and_uses_highest_common_version(wire, consumer, rp):
    wire.get(URL + "/", json=root_document("1.45"))
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    client = unpinned()

    client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    client.claim(consumer, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)

    path = f"/allocations/{consumer}"
    assert [(r.method, r.path) for r in wire.request_history] == [
        ("GET", "/"),
        ("PUT", path),
        ("GET", path),
        ("PUT", path),
    ]
    versions = [r.headers["OpenStack-API-Version"] for r in wire.request_history[1:]]
    # The new consumer's type needs 1.38+; the replacement of an existing
    # consumer carries no type and goes at the lowest version with generations.
    assert versions == ["placement 1.39", "placement 1.28", "placement 1.28"]
    assert client.microversion == "1.39"


def test_an_exact_client_sends_its_own_version_where_the_default_goes_lean(wire, consumer, rp):
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    lean = unpinned(microversion="1.37")
    exact = unpinned(microversion="1.37", exact_microversion=True)
    add = reportclient.add_allocations({rp: {"VCPU": 1}})

    for client in (lean, exact):
        client.update_allocations(consumer, add, project_id=PROJECT, user_id=USER)

    versions = [r.headers["OpenStack-API-Version"] for r in wire.request_history]
    assert versions == ["placement 1.28"] * 2 + ["placement 1.37"] * 2


@pytest.mark.parametrize("exact", ["yes", 1, None])
def test_exact_microversion_is_a_bool(exact):
    with pytest.raises(reportclient.InvalidInput, match="exact_microversion"):
        unpinned(microversion="1.37", exact_microversion=exact)


def test_server_below_consumer_generations_is_refused(wire, consumer, rp):
    wire.get(URL + "/", json=root_document("1.27"))
    client = unpinned()

    with pytest.raises(reportclient.MicroversionUnsupported) as err:
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert "1.28" in str(err.value)
    assert "1.27" in str(err.value)
    assert len(wire.request_history) == 1


def test_server_whose_minimum_is_above_what_the_client_speaks_is_refused(wire):
    wire.get(URL + "/", json=root_document("1.45", min_version="1.40"))
    client = unpinned()

    with pytest.raises(reportclient.MicroversionUnsupported, match=r"1\.40 to 1\.45"):
        _ = client.microversion


def test_version_between_128_and_137_omits_consumer_type(wire, consumer, rp):
    wire.get(URL + "/", json=root_document("1.36"))
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    client = unpinned()

    state = client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    body = sent(wire, 1)
    assert "consumer_type" not in body
    assert body["consumer_generation"] is None
    assert state.consumer_type is None


def test_consumer_type_is_sent_from_138(wire, consumer, rp):
    wire.put(f"{URL}/allocations/{consumer}", **NO_CONTENT)
    client = unpinned(microversion="1.38")

    client.claim(
        consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER, consumer_type="MIGRATION"
    )

    assert sent(wire, 0)["consumer_type"] == "MIGRATION"
    assert wire.request_history[0].headers["OpenStack-API-Version"] == "placement 1.38"


def test_pinned_version_skips_negotiation(wire, consumer):
    wire.get(f"{URL}/allocations/{consumer}", json={"allocations": {}})
    client = unpinned(microversion="1.28")

    client.get_allocations(consumer)

    assert [r.path for r in wire.request_history] == [f"/allocations/{consumer}"]
    assert wire.request_history[0].headers["OpenStack-API-Version"] == "placement 1.28"


@pytest.mark.parametrize("pin", ["1.27", "1.40", "2.0", "one.two", ""])
def test_pin_outside_supported_range_is_invalid_input(pin):
    with pytest.raises(reportclient.InvalidInput):
        unpinned(microversion=pin)


def test_failed_negotiation_is_retried_on_next_call(wire, consumer):
    busy = {"status_code": 503, "text": "busy"}
    wire.get(URL + "/", [busy, busy, {"json": root_document()}])
    wire.get(f"{URL}/allocations/{consumer}", json={"allocations": {}})
    client = unpinned()

    with pytest.raises(reportclient.PlacementUnavailable) as err:
        client.get_allocations(consumer)
    client.get_allocations(consumer)

    assert client.microversion == "1.39"
    assert err.value.status == 503
    # keystoneauth's discovery fails, then the client's own GET / says why;
    # the next call's discovery succeeds.
    assert [r.path for r in wire.request_history] == ["/", "/", "/", f"/allocations/{consumer}"]
    assert "X-Auth-Token" not in wire.request_history[0].headers  # discovery is anonymous
    assert wire.request_history[1].headers["X-Auth-Token"] == "t"


def test_clients_sharing_a_session_negotiate_with_one_discovery(wire, consumer):
    wire.get(URL + "/", json=root_document("1.36"))
    session = ks_session.Session(auth=token_endpoint.Token(URL, "t"), timeout=10)
    first = reportclient.PlacementClient.from_session(session, endpoint_override=URL)
    second = reportclient.PlacementClient.from_session(session, endpoint_override=URL)

    assert (first.microversion, second.microversion) == ("1.36", "1.36")
    assert [r.path for r in wire.request_history] == ["/"]


def test_session_without_timeout_negotiates_with_its_own_bounded_get_root(wire):
    wire.get(URL + "/", json=root_document())
    session = ks_session.Session(auth=token_endpoint.Token(URL, "t"))  # timeout None
    client = reportclient.PlacementClient.from_session(session, endpoint_override=URL)

    assert client.microversion == "1.39"
    # keystoneauth's discovery would carry no timeout; the transport's GET / carries its own.
    assert [(r.path, r.timeout) for r in wire.request_history] == [("/", (5.0, 30.0))]


def test_root_document_without_self_link_still_negotiates(wire):
    document = root_document("1.30")
    document["versions"][0]["links"] = []  # keystoneauth's discovery rejects this
    wire.get(URL + "/", json=document)
    client = unpinned()

    assert client.microversion == "1.30"
    assert [r.path for r in wire.request_history] == ["/", "/"]


def test_unrecognised_root_document_is_a_placement_error(wire, consumer):
    wire.get(URL + "/", json={"hello": "world"})
    client = unpinned()

    with pytest.raises(reportclient.PlacementError, match="unrecognised version document"):
        client.get_allocations(consumer)
