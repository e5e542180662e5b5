"""Incarnations: a consumer or provider deleted and re-created while a write's answer is lost.

Placement restarts a consumer's generation at 1 (a provider's at 0) when it is deleted and
re-created, so after a lost answer "Placement holds the generation the write carried" does not
prove the write did not land: the write may have landed on the old incarnation, which another
writer then replaced with a new one that reached the same generation. Each test here builds one
such history against the real Placement, deterministically:

- "lands, answer lost": ``CommitThenAct`` (``_lost_answers.py``) delivers the write, reads
  Placement's answer (the write has committed), runs the other writer's actions synchronously
  with a separate raw client (``after_commit``), and only then raises a connection reset to
  the client under test, whose next request is its re-read;
- a slow write: the fault proxy holds the PUT past the client's read timeout and forwards it
  right after the client's re-read was answered (``hold(forward_after=...)``);
- a late read: ``LateAnswer`` reads an answer from Placement and keeps it from the client
  until the test says so.

Every outcome is the typed error the client raised and what Placement holds, read back with
``placement_admin`` (never through the cache of the client under test).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import reportclient as rc
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import (
    PROJECT,
    USER,
    Real,
    claim,
    holds,
    new_id,
    update,
)
from tests.functional._lost_answers import WAIT, CommitThenAct, LateAnswer, client_over
from tests.functional._outcome_helpers import other_writer_puts
from tests.functional._reshape import SERVICE, vgpu_consumer_before_reshape
from tests.support.faultproxy import FaultProxy, Match, hold

pytestmark = pytest.mark.functional

Allocs = dict[str, dict[str, int]]


# -- another writer and the read-back (raw HTTP, never the client under test) ----------------


def delete(admin: PlacementAdmin, consumer: str) -> None:
    """Another writer deletes the consumer (``DELETE /allocations``, as nova's force release)."""
    response = admin.delete_allocations(consumer)
    assert response.status_code == 204, response.text


def consumer_at(admin: PlacementAdmin, allocations: Allocs) -> str:
    """A consumer another writer created holding ``allocations`` (generation 1)."""
    consumer = new_id()
    other_writer_puts(admin, consumer, allocations, None)
    return consumer


def vcpu_total(admin: PlacementAdmin, rp: str) -> int:
    total: int = admin.inventory(rp)["VCPU"]["total"]
    return total


# -- (1) a provider deleted and re-created under its uuid ------------------------------------


def test_lost_inventory_add_then_provider_recreated_is_outcome_unknown_and_not_reapplied(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    """The +4 VCPU lands on the old provider (generation 1 -> 2) and its answer is lost; nova
    then deletes the compute node and re-creates it under the same uuid with VCPU 2, which
    brings the new provider to generation 1 again: the generation the lost write carried. The
    re-read cannot tell "not landed" from "landed on a provider that is gone"; adding 4 to the
    new provider would apply the change to something the caller never saw."""
    admin = placement_admin
    name = f"cn-{new_id()}"
    rp = admin.create_provider(name, inventory={"VCPU": {"total": 8}})
    assert admin.provider(rp)["generation"] == 1

    def recreate() -> None:
        assert admin.delete_provider(rp).status_code == 204
        admin.create_provider(name, uuid=rp, inventory={"VCPU": {"total": 2}})

    adapter = CommitThenAct("PUT", f"/resource_providers/{rp}/inventories", recreate)
    client = client_over(real_placement.url, adapter)

    def add_four(current: dict[str, rc.Inventory]) -> dict[str, rc.Inventory]:
        vcpu = current["VCPU"]
        current["VCPU"] = rc.Inventory(total=vcpu.total + 4, max_unit=vcpu.max_unit)
        return current

    with pytest.raises(rc.OutcomeUnknown):
        client.providers.update_inventories(rp, add_four)

    assert [status for _, _, status in adapter.lost] == [200]
    assert admin.provider(rp)["generation"] == 1
    assert vcpu_total(admin, rp) == 2


# -- (2) (3) a consumer deleted and claimed anew ---------------------------------------------


def test_lost_add_then_consumer_deleted_and_reclaimed_is_outcome_unknown_and_not_reapplied(
    real: Real,
) -> None:
    """The +1 VCPU lands (generation 1 -> 2) and its answer is lost; another client then
    deletes the consumer and claims it anew with other allocations (generation 1 again). The
    re-read shows the generation the write carried, but on a new incarnation: the +1 must not
    be added to allocations the caller never saw."""
    admin = real.admin
    consumer = consumer_at(admin, {real.node: {"VCPU": 1}})
    reclaim = {real.node: {"VCPU": 3}}

    def delete_and_reclaim() -> None:
        delete(admin, consumer)
        other_writer_puts(admin, consumer, reclaim, None)

    adapter = CommitThenAct("PUT", f"/allocations/{consumer}", delete_and_reclaim)
    client = client_over(real.placement.url, adapter)

    with pytest.raises(rc.OutcomeUnknown):
        update(client, consumer, rc.add_allocations({real.node: {"VCPU": 1}}))

    assert adapter.lost == [("PUT", f"/allocations/{consumer}", 204)]
    assert holds(admin, consumer) == (1, reclaim)
    assert admin.usages(real.node)["VCPU"] == 3


def test_lost_release_then_consumer_claimed_anew_is_outcome_unknown_and_keeps_the_new_claim(
    real: Real,
) -> None:
    """The release lands (the consumer at generation 1 is deleted) and its answer is lost;
    another client then claims the consumer anew (an unshelve) at generation 1 with other
    allocations. Releasing again would delete the unshelve's claim, which the release never
    saw."""
    admin = real.admin
    consumer = consumer_at(admin, {real.node: {"VCPU": 2}})
    unshelve = {real.node: {"VCPU": 4}}
    adapter = CommitThenAct(
        "PUT",
        f"/allocations/{consumer}",
        lambda: other_writer_puts(admin, consumer, unshelve, None),
    )
    client = client_over(real.placement.url, adapter)

    with pytest.raises(rc.OutcomeUnknown):
        client.release(consumer)

    assert adapter.lost == [("PUT", f"/allocations/{consumer}", 204)]
    assert holds(admin, consumer) == (1, unshelve)
    assert admin.usages(real.node)["VCPU"] == 4


# -- (4) a multi-consumer write ----------------------------------------------------------------


def test_lost_write_many_then_new_consumer_deleted_is_outcome_unknown_and_adds_once(
    real: Real,
) -> None:
    """One POST adds 1 VCPU to X (generation 1 -> 2) and creates Y; the answer is lost and
    another client deletes Y before the re-read. Y missing again looks like "not landed", yet X
    moved on holding exactly X + 1: the POST is all or nothing, so it did land, and sending it
    again would add to X twice."""
    admin = real.admin
    x = consumer_at(admin, {real.node: {"VCPU": 2}})
    y = new_id()
    adapter = CommitThenAct("POST", "/allocations", lambda: delete(admin, y))
    client = client_over(real.placement.url, adapter)

    with pytest.raises(rc.OutcomeUnknown):
        client.write_many(
            {x: rc.add_allocations({real.node: {"VCPU": 1}}), y: {real.node: {"VCPU": 1}}},
            project_id=PROJECT,
            user_id=USER,
        )

    assert adapter.lost == [("POST", "/allocations", 204)]
    assert holds(admin, x) == (2, {real.node: {"VCPU": 3}})
    assert holds(admin, y) == (None, {})
    assert admin.usages(real.node)["VCPU"] == 3


# -- (5) (6) moves --------------------------------------------------------------------------------


def test_lost_move_then_target_deleted_is_outcome_unknown_not_nothing_to_move(real: Real) -> None:
    """The move lands (source deleted, new target at generation 1) and its answer is lost;
    another client deletes the target before the re-read. The source holding nothing is the
    move's own doing, not a move that had nothing to move: the outcome is unknown."""
    admin = real.admin
    source, target = consumer_at(admin, {real.node: {"VCPU": 2}}), new_id()
    adapter = CommitThenAct("POST", "/allocations", lambda: delete(admin, target))
    client = client_over(real.placement.url, adapter)

    with pytest.raises(rc.PlacementError) as caught:
        client.move_allocations(source, target)

    assert not isinstance(caught.value, rc.NothingToMove), caught.value
    assert isinstance(caught.value, rc.OutcomeUnknown), caught.value
    assert adapter.lost == [("POST", "/allocations", 204)]
    assert holds(admin, source) == (None, {})
    assert holds(admin, target) == (None, {})
    assert admin.usages(real.node)["VCPU"] == 0


def test_move_expecting_a_target_released_meanwhile_is_consumer_changed_and_writes_nothing(
    real: Real,
) -> None:
    """The caller knows the target holds E, but another client released it (the target is
    deleted) before the move. Adding the source to E would resurrect E on a consumer that no
    longer holds it: the premise changed, and nothing is written."""
    admin = real.admin
    other = admin.create_provider(inventory={"VCPU": 8})
    expected: Allocs = {other: {"VCPU": 1}}
    source = consumer_at(admin, {real.node: {"VCPU": 2}})
    target = consumer_at(admin, expected)
    delete(admin, target)
    client = client_over(real.placement.url)

    with pytest.raises(rc.ConsumerChanged):
        client.move_allocations(source, target, expect_target=expected)

    assert holds(admin, target) == (None, {})
    assert holds(admin, source) == (1, {real.node: {"VCPU": 2}})
    assert admin.usages(other)["VCPU"] == 0


# -- (7) a slow first write and a mutate that fails on its second call ------------------------


@pytest.fixture
def proxy(real_placement: EmbeddedPlacement) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", real_placement.port) as faults:
        yield faults


def test_slow_write_landing_after_the_reread_then_mutate_failing_is_outcome_unknown(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    """The first PUT (+1 VCPU, generation 1) is held past the client's 0.5 s read timeout; the
    client's re-read shows generation 1 (not landed), and the held PUT commits right after that
    re-read was answered. The caller's ``mutate`` then raises on its second call: the operation
    ends while its first write has landed, so the error is OutcomeUnknown (caused by the
    caller's error), never the bare RuntimeError that would say nothing was written."""
    admin = placement_admin
    consumer = consumer_at(admin, {compute_node: {"VCPU": 1}})
    path = f"/allocations/{consumer}"
    slow = proxy.add_rule("PUT", path, hold(forward_after=Match("GET", path)))
    client = client_over(proxy.url, timeout=(5, 0.5))
    calls: list[rc.ConsumerAllocations] = []
    failure = RuntimeError("mutate failed on its second call")

    def mutate(current: rc.ConsumerAllocations) -> Allocs:
        calls.append(current)
        if len(calls) > 1:
            raise failure
        return {rp: {k: v + 1 for k, v in res.items()} for rp, res in current.allocations.items()}

    with pytest.raises(rc.OutcomeUnknown) as caught:
        update(client, consumer, mutate)

    assert caught.value.__cause__ is failure
    assert slow.forwarded.wait(WAIT), "the held PUT was never forwarded"
    assert slow.upstream_status == 204
    assert len(calls) == 2
    assert holds(admin, consumer) == (2, {compute_node: {"VCPU": 2}})


# -- (8) a late read racing a write on the same client ------------------------------------------


def test_late_read_answer_does_not_roll_back_what_a_concurrent_write_cached(real: Real) -> None:
    """Thread A reads the consumer (generation 1); Placement answers, but the answer reaches A
    late. Meanwhile thread B, on the same client, updates the consumer (1 -> 2) and completes.
    Then A's answer, generation 1, is processed: it is older than what B cached, and must not
    replace it, or the client's next claim of what B wrote would find "allocations it never
    saw" and raise ConsumerChanged."""
    admin = real.admin
    consumer = consumer_at(admin, {real.node: {"VCPU": 1}})
    late = LateAnswer(f"/allocations/{consumer}")
    client = client_over(real.placement.url, late)
    written: Allocs = {real.node: {"VCPU": 2}}
    read: list[rc.ConsumerAllocations] = []
    wrote: list[rc.ConsumerAllocations] = []
    failed: list[BaseException] = []

    def thread_a() -> None:
        try:
            read.append(client.get_allocations(consumer))
        except BaseException as exc:  # collected and asserted below
            failed.append(exc)

    def thread_b() -> None:
        try:
            wrote.append(update(client, consumer, rc.replace_allocations(written)))
        except BaseException as exc:  # collected and asserted below
            failed.append(exc)

    reader = threading.Thread(target=thread_a, name="late-reader", daemon=True)
    writer = threading.Thread(target=thread_b, name="writer", daemon=True)
    reader.start()
    try:
        assert late.answered.wait(WAIT), "the late read never reached Placement"
        writer.start()
        writer.join(WAIT)
        assert not writer.is_alive(), "the write waited for the late read to end"
    finally:
        late.release.set()
        reader.join(WAIT)
    assert not reader.is_alive()
    assert not failed, failed
    assert wrote[0].generation == 2
    assert read[0].generation == 1  # what A's late answer said

    cached = client.cached(consumer)
    assert cached is not None
    assert cached.generation == 2
    assert dict(cached.allocations) == written
    claimed = claim(client, consumer, written)
    assert claimed.generation == 2
    assert holds(admin, consumer) == (2, written)


# -- (9) reshape and the client's cache ---------------------------------------------------------


TTLS = pytest.mark.parametrize("cache_ttl", [0.0, 60.0], ids=["cache_ttl=0", "cache_ttl=60"])


def reshaped_by_the_client(
    placement: EmbeddedPlacement, cache_ttl: float
) -> tuple[rc.PlacementClient, str, str, str]:
    """A client claims VCPU 2 and VGPU 1 on a new root, then reshapes the VGPU inventory and
    allocation onto a new child: returns the client, the consumer, the root and the child."""
    client = client_over(
        placement.url,
        additional_headers=SERVICE,
        cache_ttl=cache_ttl,
        # A clock that stands still: within cache_ttl, cached states stay trusted.
        clock=lambda: 0.0,
    )
    root, child, consumer = vgpu_consumer_before_reshape(client)
    providers = client.providers
    reshaped: Allocs = {root: {"VCPU": 2}, child: {"VGPU": 1}}

    def compute(state: rc.ReshapeState) -> rc.Reshape:
        root_inv = dict(state.inventories[root].inventories)
        vgpu = root_inv.pop("VGPU")
        return rc.Reshape({root: root_inv, child: {"VGPU": vgpu}}, {consumer: reshaped})

    providers.reshape([root, child], [consumer], compute)
    return client, consumer, root, child


@TTLS
def test_claim_of_what_a_reshape_moved_succeeds_and_caches_placements_generation(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, cache_ttl: float
) -> None:
    """The client claims VCPU and VGPU on a compute node, then reshapes the VGPU inventory and
    allocation onto a child provider: the consumer moves to generation 2 by the client's own
    reshape. Its claim of the reshaped allocations is then no change of premise, and its cache
    shows what Placement holds."""
    admin = placement_admin
    client, consumer, root, child = reshaped_by_the_client(real_placement, cache_ttl)
    reshaped: Allocs = {root: {"VCPU": 2}, child: {"VGPU": 1}}
    assert holds(admin, consumer) == (2, reshaped)

    state = claim(client, consumer, reshaped)

    generation, allocations = holds(admin, consumer)
    assert allocations == reshaped
    assert state.generation == generation
    cached = client.cached(consumer)
    assert cached is not None
    assert (cached.generation, dict(cached.allocations)) == (generation, reshaped)


@TTLS
def test_claim_after_its_own_reshape_replaces_the_reshaped_allocations(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, cache_ttl: float
) -> None:
    """As above, but the claim after the reshape asks for more (VCPU 2 -> 3): the reshaped
    allocations were written by this very client, so they are what it knows the consumer to
    hold, and replacing them is no clobber (a cache left at the pre-reshape allocations would
    make the claim raise ConsumerChanged over the client's own write)."""
    admin = placement_admin
    client, consumer, root, child = reshaped_by_the_client(real_placement, cache_ttl)
    resized: Allocs = {root: {"VCPU": 3}, child: {"VGPU": 1}}

    state = claim(client, consumer, resized)

    assert holds(admin, consumer) == (3, resized)
    assert (state.generation, dict(state.allocations)) == (3, resized)


# -- (11) callbacks returning nonsense ---------------------------------------------------------


BAD_INVENTORIES = pytest.mark.parametrize(
    "returned",
    [None, [("VCPU", 16)], {"VCPU": "x"}, {"VCPU": None}, {"VCPU": {"total": "x"}}, {7: 8}],
    ids=["None", "list", "bad-value", "None-value", "bad-total", "int-key"],
)


@BAD_INVENTORIES
def test_inventory_mutator_returning_nonsense_is_invalid_input_and_writes_nothing(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, returned: Any
) -> None:
    """An ``update_inventories`` callback that returns something other than a mapping of
    resource class to inventory is the caller's bug: InvalidInput, never an AttributeError or
    TypeError from inside the engine, and nothing is written."""
    admin = placement_admin
    rp = admin.create_provider(inventory={"VCPU": {"total": 8}})
    before = admin.provider(rp)["generation"]
    client = client_over(real_placement.url)

    with pytest.raises(rc.InvalidInput):
        client.providers.update_inventories(rp, lambda _current: returned)

    assert admin.provider(rp)["generation"] == before
    assert vcpu_total(admin, rp) == 8


@pytest.mark.parametrize("returned", [None, []], ids=["None", "list"])
def test_reshape_compute_returning_nonsense_is_invalid_input_and_writes_nothing(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, returned: Any
) -> None:
    """A reshape ``compute`` that returns something other than a ``Reshape`` is the caller's
    bug: InvalidInput, and neither the provider nor the consumer is written."""
    admin = placement_admin
    rp = admin.create_provider(inventory={"VCPU": {"total": 8}})
    consumer = consumer_at(admin, {rp: {"VCPU": 1}})
    before = admin.provider(rp)["generation"]
    client = client_over(real_placement.url, additional_headers=SERVICE)

    with pytest.raises(rc.InvalidInput):
        client.providers.reshape([rp], [consumer], lambda _state: returned)

    assert admin.provider(rp)["generation"] == before
    assert holds(admin, consumer) == (1, {rp: {"VCPU": 1}})
