"""Claim, read, update and release against the real Placement: results and wire counts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reportclient import PlacementClient, add_allocations, remove_providers
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import (
    CACHE_TTL,
    PROJECT,
    USER,
    FakeClock,
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


def test_fresh_claim_is_one_put_and_placement_reports_generation_one(real: Real) -> None:
    client = real.client()
    consumer = new_id()
    real.placement.clear_requests_seen()

    state = claim(client, consumer, {real.node: {"VCPU": 2, "MEMORY_MB": 512}})

    assert real.wire() == [("PUT", f"/allocations/{consumer}", 204)]
    assert state.generation == 1
    raw = real.admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 1
    assert held(raw) == {real.node: {"VCPU": 2, "MEMORY_MB": 512}}
    assert (raw["project_id"], raw["user_id"], raw["consumer_type"]) == (
        PROJECT,
        USER,
        "INSTANCE",
    )


def test_cached_claim_is_one_put_and_placement_reports_generation_two(real: Real) -> None:
    client, consumer = real.claimed({real.node: {"VCPU": 1}}, cached=True)
    real.placement.clear_requests_seen()

    state = claim(client, consumer, {real.node: {"VCPU": 3}})

    assert real.wire() == [("PUT", f"/allocations/{consumer}", 204)]
    assert state.generation == 2
    assert real.holds(consumer) == (2, {real.node: {"VCPU": 3}})
    assert real.admin.usages(real.node)["VCPU"] == 3


@pytest.mark.parametrize(
    "cached",
    [
        pytest.param(False, id="default-ttl"),
        pytest.param(True, id="cached-once-the-entry-is-as-old-as-the-ttl"),
    ],
)
def test_claim_of_a_seen_consumer_reads_then_puts(real: Real, cached: bool) -> None:
    clock = FakeClock()
    client = real.cached_client(clock=clock) if cached else real.client()
    consumer = new_id()
    claim(client, consumer, {real.node: {"VCPU": 1}})
    clock.advance(CACHE_TTL)  # the cached client's entry is now as old as its TTL
    real.placement.clear_requests_seen()

    state = claim(client, consumer, {real.node: {"VCPU": 3}})

    path = f"/allocations/{consumer}"
    assert real.wire() == [("GET", path, 200), ("PUT", path, 204)]
    assert state.generation == 2
    assert real.holds(consumer) == (2, {real.node: {"VCPU": 3}})
    assert real.admin.usages(real.node)["VCPU"] == 3


@pytest.mark.parametrize(
    ("make", "read_first"),
    [
        pytest.param("cached_client", [], id="cached-is-one-put"),
        pytest.param("client", [("GET", 200)], id="default-ttl-reads-then-puts"),
    ],
)
def test_release_leaves_no_generation(
    real: Real, make: str, read_first: list[tuple[str, int]]
) -> None:
    client: PlacementClient = getattr(real, make)()
    consumer = new_id()
    claim(client, consumer, {real.node: {"VCPU": 1}})
    claim(client, consumer, {real.node: {"VCPU": 2}})
    assert real.admin.get_allocations(consumer)["consumer_generation"] == 2
    real.placement.clear_requests_seen()

    client.release(consumer)

    path = f"/allocations/{consumer}"
    assert real.wire() == [(method, path, status) for method, status in read_first] + [
        ("PUT", path, 204)
    ]
    assert real.admin.get_allocations(consumer) == {"allocations": {}}
    assert real.admin.usages(real.node)["VCPU"] == 0
    cached = client.cached(consumer)
    assert cached is not None and cached.generation is None and not cached.exists


def test_claim_after_release_starts_again_at_generation_one(real: Real) -> None:
    client, consumer = real.claimed({real.node: {"VCPU": 1}})
    client.release(consumer)
    real.placement.clear_requests_seen()

    state = claim(client, consumer, {real.node: {"VCPU": 4}})

    assert real.wire() == [("PUT", f"/allocations/{consumer}", 204)]
    assert state.generation == 1
    assert real.holds(consumer) == (1, {real.node: {"VCPU": 4}})


def test_release_of_unknown_consumer_reads_once_and_writes_nothing(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    client = make_client(real_placement)
    consumer = new_id()
    real_placement.clear_requests_seen()

    client.release(consumer)

    assert wire(real_placement) == [("GET", f"/allocations/{consumer}", 200)]
    assert placement_admin.get_allocations(consumer) == {"allocations": {}}
    # No invisible generation-0 record was left behind: a new consumer can still be written.
    response = placement_admin.put_allocations(consumer, raw_body({}, None))
    assert response.status_code == 204, response.text


def test_release_of_uncached_consumer_reads_then_writes_with_its_generation(real: Real) -> None:
    _writer, consumer = real.claimed({real.node: {"VCPU": 2}})
    releaser = real.client()
    real.placement.clear_requests_seen()

    releaser.release(consumer)

    assert real.wire() == [
        ("GET", f"/allocations/{consumer}", 200),
        ("PUT", f"/allocations/{consumer}", 204),
    ]
    assert real.admin.get_allocations(consumer) == {"allocations": {}}
    assert real.admin.usages(real.node)["VCPU"] == 0


def test_get_allocations_reports_what_placement_holds_and_refreshes_the_cache(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    writer = make_client(real_placement)
    consumer = new_id()
    claim(writer, consumer, {compute_node: {"VCPU": 1}})
    claim(writer, consumer, {compute_node: {"DISK_GB": 10}})
    reader = make_client(real_placement)
    real_placement.clear_requests_seen()

    state = reader.get_allocations(consumer)

    assert wire(real_placement) == [("GET", f"/allocations/{consumer}", 200)]
    assert state.allocations == {compute_node: {"DISK_GB": 10}}
    assert state.generation == 2
    assert (state.project_id, state.user_id, state.consumer_type) == (PROJECT, USER, "INSTANCE")
    assert reader.cached(consumer) == state


def test_get_allocations_of_unknown_consumer_has_no_generation(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement)
    consumer = new_id()

    state = client.get_allocations(consumer)

    assert state.allocations == {}
    assert state.generation is None
    assert not state.exists
    assert (state.project_id, state.user_id, state.consumer_type) == (None, None, None)


def test_first_call_of_unpinned_client_negotiates_once_with_get_root(
    real_placement: EmbeddedPlacement, compute_node: str
) -> None:
    client = make_client(real_placement, microversion=None)
    first, second = new_id(), new_id()
    real_placement.clear_requests_seen()

    claim(client, first, {compute_node: {"VCPU": 1}})
    claim(client, second, {compute_node: {"VCPU": 1}})

    assert wire(real_placement) == [
        ("GET", "/", 200),
        ("PUT", f"/allocations/{first}", 204),
        ("PUT", f"/allocations/{second}", 204),
    ]
    assert [r.microversion for r in real_placement.requests_seen[1:]] == ["1.39", "1.39"]


def test_add_allocations_on_cached_consumer_is_one_put_with_the_sum(real: Real) -> None:
    other = real.admin.create_provider(inventory={"VCPU": 4})
    client, consumer = real.claimed({real.node: {"VCPU": 2}}, cached=True)
    real.placement.clear_requests_seen()

    state = update(client, consumer, add_allocations({real.node: {"VCPU": 1}, other: {"VCPU": 2}}))

    assert real.wire() == [("PUT", f"/allocations/{consumer}", 204)]
    assert state.generation == 2
    assert real.holds(consumer) == (2, {real.node: {"VCPU": 3}, other: {"VCPU": 2}})


def test_add_allocations_with_the_default_ttl_reads_then_puts_the_sum(real: Real) -> None:
    other = real.admin.create_provider(inventory={"VCPU": 4})
    client, consumer = real.claimed({real.node: {"VCPU": 2}})
    real.placement.clear_requests_seen()

    state = update(client, consumer, add_allocations({real.node: {"VCPU": 1}, other: {"VCPU": 2}}))

    path = f"/allocations/{consumer}"
    assert real.wire() == [("GET", path, 200), ("PUT", path, 204)]
    assert state.generation == 2
    assert real.holds(consumer) == (2, {real.node: {"VCPU": 3}, other: {"VCPU": 2}})


def test_remove_providers_keeps_only_the_other_providers_allocations(real: Real) -> None:
    source = real.admin.create_provider(inventory={"VCPU": 4})
    client, consumer = real.claimed({source: {"VCPU": 2}, real.node: {"VCPU": 2}})

    update(client, consumer, remove_providers([source]))

    assert real.holds(consumer) == (2, {real.node: {"VCPU": 2}})
    assert real.admin.usages(source)["VCPU"] == 0


@pytest.mark.parametrize(
    ("make_reader", "method", "status", "generation"),
    [
        # Only a state read during this call is trusted to skip a write; a cached one is not.
        pytest.param(make_cached_client, "PUT", 204, 2, id="from-the-cache-writes-once"),
        # The claim reads first; the state just read already holds the claim: nothing written.
        pytest.param(make_client, "GET", 200, 1, id="default-ttl-reads-and-writes-nothing"),
    ],
)
def test_claiming_unchanged_allocations(
    real: Real,
    make_reader: Callable[..., PlacementClient],
    method: str,
    status: int,
    generation: int,
) -> None:
    _writer, consumer = real.claimed({real.node: {"VCPU": 1}})
    reader = make_reader(real.placement)
    reader.get_allocations(consumer)
    real.placement.clear_requests_seen()

    state = claim(reader, consumer, {real.node: {"VCPU": 1}})

    assert real.wire() == [(method, f"/allocations/{consumer}", status)]
    assert state.generation == generation
    assert state.allocations == {real.node: {"VCPU": 1}}
    assert real.holds(consumer) == (generation, {real.node: {"VCPU": 1}})
