"""What the client caches must be what Placement holds, or be marked in doubt (issue 35).

Each test builds one history against the real Placement in which the client's cache used to
end up believing something Placement never held, or no longer held, and trusting it for a
write: its own write overlapped by a read on the same client, a DELETE whose answer was
lost, a raw write through ``client.request``, a conflict's "expected N" outliving the read
it was meant for, a caller's ``retry_error_callback`` swallowing a write that may still land.

The embedded Placement is one process, so every ordering is made by the fault proxy
(``tests/support/faultproxy.py``): ``gate`` keeps a request until the test lets it commit,
``gate_answer`` keeps an answer Placement already gave until the test lets the client see
it, ``drop_answer`` applies a write and loses its answer, ``hold`` keeps a write past the
client's read timeout. What Placement holds is always read back with ``placement_admin``,
never through the client under test.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import pytest
import tenacity

import reportclient as rc
from reportclient.fixture import FakeClock
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import (
    CACHE_TTL,
    LATEST,
    claim,
    fast_retry,
    holds,
    new_id,
    raw_body,
    update,
)
from tests.support.faultproxy import FaultProxy, RuleHandle, drop_answer, gate, gate_answer, hold

pytestmark = pytest.mark.functional

Allocs = dict[str, dict[str, int]]
#: A consumer's (generation, allocations): what a GET shows, and what ``mutate`` was shown.
Seen = tuple[int | None, Allocs]
T = TypeVar("T")
#: Bounded wait for events, proxy records and worker threads.
WAIT = 30.0
#: Read timeout of a client whose held write must time out quickly.
IMPATIENT = (5.0, 0.3)


@pytest.fixture
def proxy(real_placement: EmbeddedPlacement) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", real_placement.port) as faults:
        yield faults


def client_via(proxy: FaultProxy, **kwargs: Any) -> rc.PlacementClient:
    """The client under test, every request through ``proxy`` (1.39, fast retries)."""
    kwargs.setdefault("retry", fast_retry())
    return rc.PlacementClient.from_endpoint(proxy.url, "admin", microversion=LATEST, **kwargs)


def cached_client_via(proxy: FaultProxy, **kwargs: Any) -> rc.PlacementClient:
    """As :func:`client_via`, trusting its cache for ``CACHE_TTL`` of a clock that stands still."""
    return client_via(proxy, cache_ttl=CACHE_TTL, clock=FakeClock(), **kwargs)


class Background(Generic[T]):
    """``work`` run in its own thread; :meth:`result` joins it (bounded), returns or raises."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._value: list[T] = []
        self._error: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(work,), name=name, daemon=True)
        self._thread.start()

    def _run(self, work: Callable[[], T]) -> None:
        try:
            self._value.append(work())
        except BaseException as exc:  # handed to the test by result()
            self._error.append(exc)

    def result(self) -> T:
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), f"{self._thread.name} still running after {WAIT}s"
        if self._error:
            raise self._error[0]
        return self._value[0]


def put(admin: PlacementAdmin, consumer: str, allocations: Allocs, generation: int | None) -> None:
    """Another writer writes ``allocations`` (``generation`` None creates the consumer)."""
    response = admin.put_allocations(consumer, raw_body(allocations, generation))
    assert response.status_code == 204, response.text


def delete(admin: PlacementAdmin, consumer: str) -> None:
    """Another writer deletes the consumer (``DELETE /allocations``)."""
    response = admin.delete_allocations(consumer)
    assert response.status_code == 204, response.text


def vcpus(state: rc.ConsumerAllocations) -> int:
    return sum(res.get("VCPU", 0) for res in state.allocations.values())


class Recorder:
    """A ``mutate`` that notes every state it is shown and asks for 1 VCPU more on ``rp``."""

    def __init__(self, rp: str) -> None:
        self.rp = rp
        self.seen: list[Seen] = []

    def __call__(self, state: rc.ConsumerAllocations) -> Allocs:
        allocations = {p: dict(res) for p, res in state.allocations.items()}
        self.seen.append((state.generation, allocations))
        return {self.rp: {"VCPU": vcpus(state) + 1}}


# -- 1. 2. the client's own write, overlapped by a read on the same client ---------------------

#: The read is answered and processed before Placement even commits the write.
READ_BEFORE_COMMIT = "read-processed-before-the-commit"
#: Both are answered (the read first); the client processes the read's answer first.
READ_PROCESSED_FIRST = "read-processed-before-the-ack"
#: Both are answered (the read first); the client processes the write's answer first.
ACK_PROCESSED_FIRST = "ack-processed-before-the-read"
OVERLAPS = pytest.mark.parametrize(
    "order", [READ_BEFORE_COMMIT, READ_PROCESSED_FIRST, ACK_PROCESSED_FIRST]
)


def overlap(
    proxy: FaultProxy,
    path: str,
    write: Callable[[], T],
    read: Callable[[], rc.ConsumerAllocations],
    order: str,
) -> tuple[T, rc.ConsumerAllocations]:
    """Run ``write`` (thread A) and ``read`` (thread B) of one client on ``path``, the read
    answered by Placement before the write commits, their answers processed in ``order``.

    Returns what the write returned and what the read returned.
    """
    go_put, go_get = threading.Event(), threading.Event()
    try:
        if order == READ_BEFORE_COMMIT:
            kept_put = proxy.add_rule("PUT", path, gate(go_put))
            writer = Background(write, "A")
            assert kept_put.applied.wait(WAIT), "A's PUT never reached the proxy"
            got = Background(read, "B").result()
            go_put.set()
            return writer.result(), got
        kept_get = proxy.add_rule("GET", path, gate_answer(go_get))
        kept_put = proxy.add_rule("PUT", path, gate_answer(go_put))
        reader = Background(read, "B")
        assert kept_get.forwarded.wait(WAIT), "B's GET was never answered"
        writer = Background(write, "A")
        assert kept_put.forwarded.wait(WAIT), "A's PUT was never answered"
        assert (kept_get.upstream_status, kept_put.upstream_status) == (200, 204)
        if order == READ_PROCESSED_FIRST:
            go_get.set()
            got = reader.result()
            go_put.set()
            return writer.result(), got
        go_put.set()
        wrote = writer.result()
        go_get.set()
        return wrote, reader.result()
    finally:
        go_put.set()
        go_get.set()


@OVERLAPS
def test_own_create_stays_cached_when_an_overlapping_read_answered_missing(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str, order: str
) -> None:
    """Thread A claims a new consumer; thread B of the same client reads it, and Placement
    answers B "missing" before A's PUT commits. Whichever answer the client processes
    first, the cache never shows B's "missing": the two answers overlapped and cannot be
    ordered, so the entry is in doubt (``cached`` shows nothing, the next write reads),
    and what the client knew is its own write: its next claim of its own consumer (a
    resize) is no change of premise."""
    client = client_via(proxy)  # cache_ttl=0, the default
    consumer = new_id()
    claimed: Allocs = {compute_node: {"VCPU": 1}}

    written, read = overlap(
        proxy,
        f"/allocations/{consumer}",
        lambda: claim(client, consumer, claimed),
        lambda: client.get_allocations(consumer),
        order,
    )

    assert (read.generation, dict(read.allocations)) == (None, {})
    assert written.generation == 1
    assert client.cached(consumer) in (written, None)
    resized: Allocs = {compute_node: {"VCPU": 2}}
    state = claim(client, consumer, resized)
    assert state.generation == 2
    assert holds(placement_admin, consumer) == (2, resized)


@OVERLAPS
def test_update_after_own_release_and_an_overlapping_read_computes_from_the_recreated_consumer(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str, order: str
) -> None:
    """Thread A releases a consumer the client cached (cache_ttl=60); thread B of the same
    client reads it, and Placement answers B with the pre-release state before the release
    commits. Another client then re-creates the consumer at generation 1 with other
    allocations (an unshelve): the released state's generation. The client's next update
    must compute from the re-created consumer, never from the released state B was shown."""
    admin = placement_admin
    client = cached_client_via(proxy)
    consumer = new_id()
    claim(client, consumer, {compute_node: {"VCPU": 1}})

    _, read = overlap(
        proxy,
        f"/allocations/{consumer}",
        lambda: client.release(consumer),
        lambda: client.get_allocations(consumer),
        order,
    )

    assert read.generation == 1  # the pre-release state
    assert holds(admin, consumer) == (None, {})
    unshelved: Allocs = {compute_node: {"VCPU": 3}}
    put(admin, consumer, unshelved, None)
    mutate = Recorder(compute_node)
    update(client, consumer, mutate)
    assert mutate.seen == [(1, unshelved)]
    assert holds(admin, consumer) == (2, {compute_node: {"VCPU": 4}})


# -- 3. a DELETE whose answer was lost ------------------------------------------------------------


#: Deletes ``consumer`` (which holds allocations on ``rp``) and loses the DELETE's answer.
LoseDelete = Callable[[rc.PlacementClient, FaultProxy, str, str], None]


def _lose_force_release(
    client: rc.PlacementClient, proxy: FaultProxy, consumer: str, rp: str
) -> None:
    proxy.add_rule("DELETE", f"/allocations/{consumer}", drop_answer())
    client.force_release(consumer)


def _lose_cascade(client: rc.PlacementClient, proxy: FaultProxy, consumer: str, rp: str) -> None:
    proxy.add_rule("DELETE", f"/allocations/{consumer}", drop_answer())
    client.providers.delete_provider(rp, cascade=True)


LOST_DELETES = pytest.mark.parametrize(
    "lose", [_lose_force_release, _lose_cascade], ids=["force_release", "delete_provider-cascade"]
)


@LOST_DELETES
def test_update_after_a_lost_consumer_delete_computes_from_the_recreated_consumer(
    proxy: FaultProxy,
    placement_admin: PlacementAdmin,
    compute_node: str,
    lose: LoseDelete,
) -> None:
    """The client claims a consumer (cache_ttl=60), then deletes it with ``force_release``
    (or as one consumer of ``delete_provider(cascade=True)``): the DELETE lands, its answer is
    lost. Another client re-creates the consumer at generation 1 with other allocations. The
    client's next update must compute from the re-created consumer: a DELETE that may have
    landed leaves nothing cached to trust."""
    admin = placement_admin
    doomed = admin.create_provider(inventory={"VCPU": 8})
    client = cached_client_via(proxy)
    consumer = new_id()
    claim(client, consumer, {doomed: {"VCPU": 1}})

    with pytest.raises(rc.PlacementUnavailable) as caught:
        lose(client, proxy, consumer, doomed)

    assert caught.value.outcome_unknown is True
    assert holds(admin, consumer) == (None, {})  # the DELETE landed
    trusted_after_loss = client.cached(consumer, trusted=True)
    unshelved: Allocs = {compute_node: {"VCPU": 3}}
    put(admin, consumer, unshelved, None)
    mutate = Recorder(compute_node)

    update(client, consumer, mutate)

    assert mutate.seen == [(1, unshelved)]
    assert holds(admin, consumer) == (2, {compute_node: {"VCPU": 4}})
    assert trusted_after_loss is None


def test_inventory_write_after_a_lost_provider_delete_keeps_the_recreated_providers_inventory(
    proxy: FaultProxy, placement_admin: PlacementAdmin
) -> None:
    """The client sets VCPU 8 on a provider (generation 0 -> 1, cached with cache_ttl=60),
    then deletes it; the DELETE lands, its answer is lost. Another client re-creates the
    provider under the same uuid with VCPU 4, which brings it to generation 1 again: the
    cached one. The client's next inventory write of another class must keep VCPU 4."""
    admin = placement_admin
    name = f"cn-{new_id()}"
    rp = admin.create_provider(name)
    client = cached_client_via(proxy)
    assert client.providers.set_inventory(rp, "VCPU", 8).generation == 1
    proxy.add_rule("DELETE", f"/resource_providers/{rp}", drop_answer())

    with pytest.raises(rc.PlacementUnavailable) as caught:
        client.providers.delete_provider(rp)

    assert caught.value.outcome_unknown is True
    assert admin.request("GET", f"/resource_providers/{rp}").status_code == 404
    admin.create_provider(name, uuid=rp, inventory={"VCPU": {"total": 4}})
    assert admin.provider(rp)["generation"] == 1

    client.providers.set_inventory(rp, "MEMORY_MB", 1024)

    inventory = admin.inventory(rp)
    assert (inventory["VCPU"]["total"], inventory["MEMORY_MB"]["total"]) == (4, 1024)


# -- 4. raw writes through client.request ---------------------------------------------------------


def test_update_after_a_raw_put_reads_what_the_raw_write_left(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    """After a typed claim (cached, cache_ttl=60) the caller writes the consumer with a raw
    ``client.request("PUT", ...)``. Nothing typed knows what that write made, so the cache
    must not be trusted any more, and the next update reads first: ``mutate`` sees exactly
    what the raw write left, never the claim's state."""
    admin = placement_admin
    client = cached_client_via(proxy)
    consumer = new_id()
    claim(client, consumer, {compute_node: {"VCPU": 1}})
    raw: Allocs = {compute_node: {"VCPU": 2}}

    answer = client.request("PUT", f"/allocations/{consumer}", json=raw_body(raw, 1))

    assert answer.status == 204
    trusted_after_raw = client.cached(consumer, trusted=True)
    assert holds(admin, consumer) == (2, raw)
    mutate = Recorder(compute_node)
    update(client, consumer, mutate)
    assert mutate.seen == [(2, raw)]
    assert holds(admin, consumer) == (3, {compute_node: {"VCPU": 3}})
    assert trusted_after_raw is None


def test_update_after_a_raw_delete_is_consumer_gone_without_calling_mutate(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    """As above with a raw ``client.request("DELETE", ...)``: the next update reads first,
    finds the consumer gone and raises ConsumerGone; ``mutate`` is never shown the claim's
    state, which Placement no longer holds."""
    admin = placement_admin
    client = cached_client_via(proxy)
    consumer = new_id()
    claim(client, consumer, {compute_node: {"VCPU": 1}})

    answer = client.request("DELETE", f"/allocations/{consumer}")

    assert answer.status == 204
    trusted_after_raw = client.cached(consumer, trusted=True)
    mutate = Recorder(compute_node)
    with pytest.raises(rc.ConsumerGone):
        update(client, consumer, mutate)
    assert mutate.seen == []
    assert holds(admin, consumer) == (None, {})
    assert trusted_after_raw is None


# -- 5. a conflict's "expected N" outliving the read it was meant for ---------------------------


class DeleteAfterConflict:
    """Lets the client's next PUT of ``consumer`` conflict, then deletes the consumer (as
    another client) before the client sees the 409: its re-read finds the consumer gone."""

    def __init__(self, proxy: FaultProxy, admin: PlacementAdmin, consumer: str) -> None:
        relay = threading.Event()
        self.rule: RuleHandle = proxy.add_rule(
            "PUT", f"/allocations/{consumer}", gate_answer(relay)
        )

        def act() -> None:
            try:
                assert self.rule.forwarded.wait(WAIT), "the PUT never reached Placement"
                delete(admin, consumer)
            finally:
                relay.set()

        self._deleter = Background(act, "deleter")

    def done(self) -> None:
        """Join the deleter; the PUT it answered was a conflict."""
        self._deleter.result()
        assert self.rule.upstream_status == 409


def _stale_cached_consumer(
    proxy: FaultProxy, admin: PlacementAdmin, compute_node: str, **kwargs: Any
) -> tuple[rc.PlacementClient, str, list[Seen]]:
    """A consumer the client claimed (cached, cache_ttl=60) and another client then wrote.

    Returns the client, the consumer and every state a GET showed of it so far.
    """
    client = cached_client_via(proxy, **kwargs)
    consumer = new_id()
    claim(client, consumer, {compute_node: {"VCPU": 2}})
    shown = [holds(admin, consumer)]
    put(admin, consumer, {compute_node: {"VCPU": 3}}, 1)
    shown.append(holds(admin, consumer))
    return client, consumer, shown


def test_subtract_after_a_conflict_then_a_delete_is_consumer_gone(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    """The update's write from the stale cache conflicts ("expected 2"); the consumer is then
    deleted before the client's re-read, which shows it missing. A consumer that does not
    exist is ConsumerGone; the conflict's "expected 2" is no evidence that it still exists,
    so ``subtract_allocations`` is never applied to an empty state (AllocationsNotHeld)."""
    client, consumer, _ = _stale_cached_consumer(proxy, placement_admin, compute_node)
    deleter = DeleteAfterConflict(proxy, placement_admin, consumer)

    with pytest.raises(rc.PlacementError) as caught:
        update(client, consumer, rc.subtract_allocations({compute_node: {"VCPU": 1}}))

    deleter.done()
    assert isinstance(caught.value, rc.ConsumerGone), repr(caught.value)
    assert holds(placement_admin, consumer) == (None, {})


def test_mutate_after_a_conflict_then_a_delete_only_sees_states_placement_returned(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    """As above with a plain ``mutate``: every state it is shown is one a GET of Placement
    showed for the consumer; none is made up from a missing consumer and the conflict's
    "expected 2". The update ends in ConsumerGone and creates nothing."""
    client, consumer, shown = _stale_cached_consumer(proxy, placement_admin, compute_node)
    deleter = DeleteAfterConflict(proxy, placement_admin, consumer)
    mutate = Recorder(compute_node)

    with pytest.raises(rc.ConsumerGone):
        update(client, consumer, mutate)

    deleter.done()
    shown.append(holds(placement_admin, consumer))
    assert shown[-1] == (None, {})
    made_up = [state for state in mutate.seen if state not in shown]
    assert made_up == [], f"mutate saw {mutate.seen}; Placement showed {shown}"


def test_claim_after_a_conflict_then_a_delete_does_not_back_off_as_if_contended(
    proxy: FaultProxy, placement_admin: PlacementAdmin, compute_node: str
) -> None:
    """The same history under a claim: the claim's write from the stale cache conflicts, the
    consumer is deleted, the re-read shows it missing (the shelve race), and the claim
    creates it. Its writes collided only with a stale hint, never with a contending writer,
    so the policy never waits (an injected ``sleep=`` records no positive delay)."""
    client, consumer, _ = _stale_cached_consumer(proxy, placement_admin, compute_node)
    deleter = DeleteAfterConflict(proxy, placement_admin, consumer)
    sleeps: list[float] = []
    policy = rc.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    wanted: Allocs = {compute_node: {"VCPU": 4}}

    state = claim(client, consumer, wanted, retry=policy)

    deleter.done()
    assert [s for s in sleeps if s > 0] == [], f"contended waits after a stale hint: {sleeps}"
    assert state.generation == 1
    assert holds(placement_admin, consumer) == (1, wanted)


# -- 6. a caller's retry_error_callback and a write that may still land --------------------------


def _returns_none(_state: tenacity.RetryCallState) -> None:
    return None


class CallerGaveUp(ValueError):
    """What the caller's ``retry_error_callback`` raises."""


def _raises(_state: tenacity.RetryCallState) -> None:
    raise CallerGaveUp("the caller's policy gave up")


@pytest.mark.parametrize("attempts", [1, 2])
@pytest.mark.parametrize(
    "callback", [_returns_none, _raises], ids=["callback-returns-None", "callback-raises"]
)
def test_retry_error_callback_cannot_hide_a_write_that_may_still_land(
    proxy: FaultProxy,
    placement_admin: PlacementAdmin,
    compute_node: str,
    attempts: int,
    callback: Callable[[tenacity.RetryCallState], None],
) -> None:
    """Each PUT of the update is kept by the proxy past the client's read timeout; the
    re-read shows the consumer as it was, so each write is still pending when the caller's
    policy (``stop_after_attempt``) gives up and its ``retry_error_callback`` runs. Whatever
    the callback returns or raises, the caller hears OutcomeUnknown, chained from the last
    lost answer, or from the callback's own error. The kept PUT then lands."""
    admin = placement_admin
    consumer = new_id()
    put(admin, consumer, {compute_node: {"VCPU": 1}}, None)
    path = f"/allocations/{consumer}"
    kept = proxy.add_rule("PUT", path, hold(), times=attempts)
    client = client_via(proxy, timeout=IMPATIENT)
    sleeps: list[float] = []
    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        retry_error_callback=callback,
        sleep=sleeps.append,
    )

    try:
        with pytest.raises(rc.OutcomeUnknown) as caught:
            update(client, consumer, rc.add_allocations({compute_node: {"VCPU": 1}}), retry=policy)
    finally:
        kept.forward()

    cause = caught.value.__cause__
    if callback is _raises:
        assert isinstance(cause, CallerGaveUp), repr(cause)
    else:
        assert isinstance(cause, rc.PlacementUnavailable), repr(cause)
        assert (cause.method, cause.url, cause.outcome_unknown) == ("PUT", path, True)
    # The write the caller was warned of lands (once: a second carries the same generation).
    proxy.wait_for(lambda r: r.action == "hold" and r.upstream_status == 204, WAIT)
    if attempts == 2:
        proxy.wait_for(lambda r: r.action == "hold" and r.upstream_status == 409, WAIT)
    assert holds(admin, consumer) == (2, {compute_node: {"VCPU": 2}})
    assert len(sleeps) == attempts - 1
