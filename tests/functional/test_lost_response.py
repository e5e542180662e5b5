"""Lost answers and a crashed server, against the real Placement.

A write whose answer never arrives may or may not have landed; the client must look before it
writes again. The in-process Placement sees every request, so "wrote again" is countable.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from requests.adapters import HTTPAdapter

from reportclient import (
    NO_RETRY,
    AllocationWrite,
    ConsumerAllocations,
    Mutation,
    OutcomeUnknown,
    PlacementClient,
    PlacementUnavailable,
    add_allocations,
    remove_providers,
    replace_allocations,
)
from reportclient.testing import EmbeddedPlacement, PlacementAdmin, PlacementServer
from tests.functional._helpers import (
    CACHE_TTL,
    LATEST,
    PROJECT,
    USER,
    FakeClock,
    Real,
    claim,
    fast_retry,
    held,
    new_id,
    update,
    wire,
)


class LosingAdapter(HTTPAdapter):
    """Breaks the connection of the next ``times`` requests of ``method``.

    With ``deliver`` the request reaches the server first and only its answer is lost (a reset
    after the server committed); without it the request never leaves.
    """

    def __init__(self, method: str, *, deliver: bool, times: int = 1) -> None:
        super().__init__(max_retries=0)
        self.method = method
        self.deliver = deliver
        self.remaining = times
        self.lost: list[str] = []

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        if request.method != self.method or self.remaining == 0:
            return super().send(request, **kwargs)
        self.remaining -= 1
        if self.deliver:
            super().send(request, **kwargs).close()
        self.lost.append(f"{request.method} {request.path_url}")
        raise requests.exceptions.ConnectionError("connection reset by peer (simulated)")


def _client_over(url: str, adapter: HTTPAdapter, **kwargs: Any) -> PlacementClient:
    """A client pinned to 1.39 whose every request goes through ``adapter``."""
    http = requests.Session()
    http.mount("http://", adapter)
    session = ks_session.Session(auth=token_endpoint.Token(url, "admin"), session=http)
    return PlacementClient.from_session(
        session, endpoint_override=url, microversion=LATEST, **kwargs
    )


def claimed_then_losing(
    placement: EmbeddedPlacement, cache_ttl: float, allocs: Any
) -> tuple[LosingAdapter, PlacementClient, str]:
    """A consumer claimed through a client whose next PUT lands and loses its answer."""
    adapter = LosingAdapter("PUT", deliver=True, times=0)
    client = _client_over(
        placement.url, adapter, retry=fast_retry(), cache_ttl=cache_ttl, clock=FakeClock()
    )
    consumer = new_id()
    claim(client, consumer, allocs)
    adapter.remaining = 1
    placement.clear_requests_seen()
    return adapter, client, consumer


def test_lost_answer_to_a_claim_that_landed_is_success_without_writing_again(real: Real) -> None:
    adapter = LosingAdapter("PUT", deliver=True)
    client = _client_over(real.placement.url, adapter, retry=fast_retry())
    consumer = new_id()
    real.placement.clear_requests_seen()

    state = claim(client, consumer, {real.node: {"VCPU": 2}})

    path = f"/allocations/{consumer}"
    assert adapter.lost == [f"PUT {path}"]
    assert real.wire() == [("PUT", path, 204), ("GET", path, 200)]
    assert state.generation == 1
    assert real.holds(consumer) == (1, {real.node: {"VCPU": 2}})
    assert client.cached(consumer) == state


#: ``cache_ttl`` of the two kinds of client: the default (read before every write to a consumer
#: it has seen) and one trusting its cache (the write is the first request).
TTLS = pytest.mark.parametrize("cache_ttl", [0.0, CACHE_TTL], ids=["default-ttl", "cached"])


def _reads_first(cache_ttl: float, path: str) -> list[tuple[str, str, int]]:
    """The GET sent before writing to a consumer the client has seen, unless it trusts its cache."""
    return [] if cache_ttl else [("GET", path, 200)]


@pytest.mark.parametrize(
    "operation",
    ["claim", "replace_allocations", "remove_providers"],
)
@TTLS
def test_lost_answer_to_a_cached_update_that_landed_is_success_without_writing_again(
    real: Real,
    operation: str,
    cache_ttl: float,
) -> None:
    other = real.admin.create_provider(inventory={"VCPU": 4})
    adapter, client, consumer = claimed_then_losing(
        real.placement, cache_ttl, {real.node: {"VCPU": 1}, other: {"VCPU": 2}}
    )

    # Each operation is idempotent, so Placement holding its result settles it.
    if operation == "claim":
        wanted = {real.node: {"VCPU": 3}}
        state = claim(client, consumer, wanted)
    else:
        mutation: Mutation
        if operation == "replace_allocations":
            wanted = {real.node: {"VCPU": 3}}
            mutation = replace_allocations(wanted)
        else:
            wanted = {real.node: {"VCPU": 1}}
            mutation = remove_providers([other])
        state = update(client, consumer, mutation)

    path = f"/allocations/{consumer}"
    assert adapter.lost == [f"PUT {path}"]
    assert real.wire() == [
        *_reads_first(cache_ttl, path),
        ("PUT", path, 204),
        ("GET", path, 200),
    ]
    # Reads and writes without a type to set go at 1.28, which shows no type.
    assert state == ConsumerAllocations(consumer, wanted, 2, PROJECT, USER, None)
    assert real.holds(consumer) == (2, wanted)
    assert real.admin.usages(other)["VCPU"] == 0


@TTLS
def test_lost_answer_to_an_add_that_landed_is_outcome_unknown_and_never_applied_twice(
    real: Real,
    cache_ttl: float,
) -> None:
    adapter, client, consumer = claimed_then_losing(
        real.placement, cache_ttl, {real.node: {"VCPU": 1}}
    )

    with pytest.raises(OutcomeUnknown) as caught:
        update(client, consumer, add_allocations({real.node: {"VCPU": 2}}))

    # Generation 2 holding exactly what was written: this write landed, or another writer wrote
    # the same; adding again could apply it twice, so the client stops and says what it knows.
    path = f"/allocations/{consumer}"
    assert adapter.lost == [f"PUT {path}"]
    assert real.wire() == [
        *_reads_first(cache_ttl, path),
        ("PUT", path, 204),
        ("GET", path, 200),
    ]
    error = caught.value
    # An update names no type: none is sent, and the 1.28 re-read shows none.
    assert error.sent == AllocationWrite(consumer, {real.node: {"VCPU": 3}}, 1, PROJECT, USER)
    assert error.state == ConsumerAllocations(
        consumer, {real.node: {"VCPU": 3}}, 2, PROJECT, USER, None
    )
    assert error.outcome_unknown is True
    assert (error.method, error.url, error.consumer_uuid) == ("PUT", path, consumer)
    # Applied exactly once.
    assert real.holds(consumer) == (2, {real.node: {"VCPU": 3}})
    assert real.admin.usages(real.node)["VCPU"] == 3


@TTLS
def test_lost_answer_to_a_release_that_landed_is_success_without_writing_again(
    real: Real,
    cache_ttl: float,
) -> None:
    adapter, client, consumer = claimed_then_losing(
        real.placement, cache_ttl, {real.node: {"VCPU": 1}}
    )

    client.release(consumer)

    path = f"/allocations/{consumer}"
    assert adapter.lost == [f"PUT {path}"]
    assert real.wire() == [
        *_reads_first(cache_ttl, path),
        ("PUT", path, 204),
        ("GET", path, 200),
    ]
    assert real.admin.get_allocations(consumer) == {"allocations": {}}
    assert real.admin.usages(real.node)["VCPU"] == 0


def _seed(admin: PlacementAdmin, consumer: str, rp: str) -> None:
    """Another service's consumer holding 1 VCPU on ``rp``, at generation 1."""
    body = {
        "allocations": {rp: {"resources": {"VCPU": 1}}},
        "consumer_generation": None,
        "project_id": PROJECT,
        "user_id": USER,
        "consumer_type": "INSTANCE",
    }
    assert admin.put_allocations(consumer, body).status_code == 204


def test_claim_of_a_new_consumer_whose_answer_was_lost_is_never_sent_again(real: Real) -> None:
    """Still missing after a reset: the create may have landed and been deleted since."""
    adapter = LosingAdapter("PUT", deliver=False)
    client = _client_over(real.placement.url, adapter, retry=fast_retry())
    consumer = new_id()
    real.placement.clear_requests_seen()

    with pytest.raises(OutcomeUnknown) as caught:
        claim(client, consumer, {real.node: {"VCPU": 2}})

    path = f"/allocations/{consumer}"
    assert adapter.lost == [f"PUT {path}"]
    assert real.wire() == [("GET", path, 200)]
    assert caught.value.sent.consumer_generation is None
    assert real.admin.get_allocations(consumer) == {"allocations": {}}


def test_update_whose_request_never_left_is_written_once_after_reading(real: Real) -> None:
    """At the carried generation, holding the premise: not landed, written again."""
    consumer = new_id()
    _seed(real.admin, consumer, real.node)
    adapter = LosingAdapter("PUT", deliver=False)
    client = _client_over(real.placement.url, adapter, retry=fast_retry())
    real.placement.clear_requests_seen()

    state = update(client, consumer, replace_allocations({real.node: {"VCPU": 2}}))

    path = f"/allocations/{consumer}"
    assert adapter.lost == [f"PUT {path}"]
    assert real.wire() == [("GET", path, 200), ("GET", path, 200), ("PUT", path, 204)]
    assert state.generation == 2
    assert real.holds(consumer) == (2, {real.node: {"VCPU": 2}})


def test_answers_lost_beyond_the_retry_policy_raise_placement_unavailable(real: Real) -> None:
    consumer = new_id()
    _seed(real.admin, consumer, real.node)
    adapter = LosingAdapter("PUT", deliver=False, times=3)
    client = _client_over(real.placement.url, adapter, retry=fast_retry(attempts=3))
    real.placement.clear_requests_seen()

    with pytest.raises(PlacementUnavailable) as caught:
        update(client, consumer, replace_allocations({real.node: {"VCPU": 2}}))

    path = f"/allocations/{consumer}"
    assert len(adapter.lost) == 3
    # Each attempt looked before trying again; no write ever reached Placement, but the
    # client cannot know that: the last one may still land.
    assert real.wire() == [("GET", path, 200)] * 4
    assert isinstance(caught.value, OutcomeUnknown)
    assert (caught.value.method, caught.value.url) == ("PUT", path)
    assert held(real.admin.get_allocations(consumer)) == {real.node: {"VCPU": 1}}


# -- a real crash: the server process is killed, then restarted ------------------------------------


@pytest.fixture
def process_admin(placement_process: PlacementServer) -> Iterator[PlacementAdmin]:
    with PlacementAdmin(placement_process.url, placement_process.token) as admin:
        yield admin


def test_claim_fails_while_placement_is_down_and_succeeds_after_restart(
    placement_process: PlacementServer, process_admin: PlacementAdmin
) -> None:
    admin = process_admin
    rp = admin.create_provider(inventory={"VCPU": {"total": 8, "max_unit": 8}})
    client = PlacementClient.from_endpoint(
        placement_process.url,
        token=placement_process.token,
        microversion=LATEST,
        retry=fast_retry(attempts=2),
    )
    consumer = new_id()
    first = claim(client, consumer, {rp: {"VCPU": 1}})

    placement_process.kill()
    with pytest.raises(PlacementUnavailable) as caught:
        claim(client, consumer, {rp: {"VCPU": 2}})
    # A consumer the client has seen is read first; the refused GET sent nothing, so no write
    # was ever attempted and the outcome is known.
    path = f"/allocations/{consumer}"
    assert (caught.value.method, caught.value.url) == ("GET", path)
    assert caught.value.outcome_unknown is False
    assert not isinstance(caught.value, OutcomeUnknown)
    # Nothing reached Placement during the outage, so what the client knew is kept.
    assert client.cached(consumer) == first

    placement_process.restart()
    placement_process.clear_requests_seen()
    state = claim(client, consumer, {rp: {"VCPU": 3}})
    seen = wire(placement_process)

    raw = admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 2
    assert held(raw) == {rp: {"VCPU": 3}}
    assert state.generation == 2
    assert client.cached(consumer) == state
    # After the restart Placement still holds what the client knew (generation 1), so the claim
    # reads it and replaces it: GET + PUT, no conflict.
    assert seen == [("GET", path, 200), ("PUT", path, 204)]


def test_unreachable_placement_raises_placement_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port any more: every connection is refused.
    client = PlacementClient.from_endpoint(
        f"http://127.0.0.1:{port}", token="admin", retry=NO_RETRY
    )

    with pytest.raises(PlacementUnavailable) as caught:
        claim(client, new_id(), {new_id(): {"VCPU": 1}})

    error = caught.value
    assert (error.method, error.url, error.status) == ("GET", "/", None)
    assert error.message.startswith("could not connect to Placement: ")
    assert error.outcome_unknown is False
    assert error.request_id is None
