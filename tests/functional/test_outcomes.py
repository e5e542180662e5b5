"""Unknown outcomes against the real Placement (a separate process) through the FaultProxy.

The client under test talks to ``proxy.url``; "another writer" and every read-back talk to the
server directly. Each test asserts that Placement holds exactly one application of every
mutation the client reported as successful, and that every other outcome is a typed error:
``TALLY.record`` classifies each, and the module prints a per-fault table at teardown (``-s``).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
import requests
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from requests.adapters import HTTPAdapter
from urllib3 import Retry

from reportclient import (
    InvalidInput,
    Inventory,
    OutcomeUnknown,
    PlacementClient,
    PlacementError,
    add_allocations,
)
from reportclient.testing import PlacementAdmin, PlacementServer
from tests.functional._helpers import LATEST, claim, holds, new_id, update, wire
from tests.functional._outcome_helpers import (
    FaultTally,
    client_for,
    no_sleep_retry,
    other_writer_puts,
    vcpu,
)
from tests.support.faultproxy import (
    FaultProxy,
    Match,
    RuleHandle,
    answer,
    answer_after_forwarding,
    delay,
    drop_answer,
    hold,
)

pytestmark = pytest.mark.functional

WAIT = 30.0
#: A read timeout short enough for a held write to time out, long enough for a loaded box.
IMPATIENT = (2.0, 1.0)
PUT_PATH = "/allocations/"
#: The first GET of an update passes; only the re-read after the lost answer meets the fault.
PASS = delay(0)


#: Every test's fault and what the client reported, printed per fault at module teardown.
TALLY = FaultTally()


@pytest.fixture(scope="module", autouse=True)
def fault_table() -> Iterator[None]:
    yield
    print("\n\nunknown outcomes on the real Placement, per fault")
    print(TALLY.table())


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[PlacementServer]:
    """One Placement process for the module (killed and restarted by the crash tests)."""
    with PlacementServer() as placement:
        yield placement


@pytest.fixture
def admin(server: PlacementServer) -> Iterator[PlacementAdmin]:
    with PlacementAdmin(server.url, server.token) as other:
        yield other


@pytest.fixture
def worker() -> Iterator[ThreadPoolExecutor]:
    """One thread for a client call the test interleaves with; joined after the proxy closed."""
    with ThreadPoolExecutor(1, thread_name_prefix="client-under-test") as pool:
        yield pool


@pytest.fixture
def proxy(server: PlacementServer, worker: ThreadPoolExecutor) -> Iterator[FaultProxy]:
    # Closed before ``worker`` is joined: a client still held by a rule is let go.
    with FaultProxy("127.0.0.1", server.port, timeout=WAIT) as faults:
        yield faults


@pytest.fixture
def crashable(server: PlacementServer) -> Iterator[PlacementServer]:
    """The module's server, running again after the test whatever happened to it."""
    yield server
    if not server.running:
        server.restart()


@pytest.fixture
def rp(admin: PlacementAdmin) -> str:
    """A provider with room for exactly one application of the claims below (8 VCPU)."""
    return admin.create_provider(inventory={"VCPU": {"total": 8, "max_unit": 8}})


def existing(admin: PlacementAdmin, rp: str) -> str:
    """A consumer another writer created holding 1 VCPU on ``rp`` (generation 1)."""
    consumer = new_id()
    other_writer_puts(admin, consumer, {rp: {"VCPU": 1}}, None)
    return consumer


def add_one(client: PlacementClient, consumer: str, rp: str) -> Callable[[], Any]:
    mutate = add_allocations({rp: {"VCPU": 1}})
    return lambda: update(client, consumer, mutate)


def claim_all(client: PlacementClient, consumer: str, rp: str) -> Callable[[], Any]:
    return lambda: claim(client, consumer, {rp: {"VCPU": 8}})


def added(admin: PlacementAdmin, consumer: str, rp: str, base: int = 1) -> Callable[[], int]:
    """How many +1s of the client's Placement holds (``base`` was there before)."""
    return lambda: vcpu(admin, consumer, rp) - base


def claimed(admin: PlacementAdmin, rp: str) -> Callable[[], int]:
    """How many 8-VCPU claims Placement holds on ``rp`` (usage, not just one consumer)."""
    return lambda: admin.usages(rp)["VCPU"] // 8


def assert_unknown_yet_added_once(
    error: object,
    proxy: FaultProxy,
    actions: list[str],
    server: PlacementServer,
    admin: PlacementAdmin,
    consumer: str,
    rp: str,
) -> None:
    """The client reported OutcomeUnknown after the proxy took ``actions``, yet Placement saw
    one successful PUT and holds the add of VCPU 1 exactly once (generation 2, VCPU 2)."""
    assert isinstance(error, OutcomeUnknown)
    assert [r.action for r in proxy.log] == actions
    assert puts_seen(server, consumer) == [204]
    assert holds(admin, consumer) == (2, {rp: {"VCPU": 2}})


def puts_seen(server: PlacementServer, consumer: str) -> list[int]:
    return [s for m, p, s in wire(server) if m == "PUT" and p == f"/allocations/{consumer}"]


# -- 1. the answer is lost and another writer changes the consumer before the re-read -------


def test_lost_add_then_another_writer_before_the_reread_is_outcome_unknown_applied_once(
    proxy: FaultProxy, admin: PlacementAdmin, rp: str, worker: ThreadPoolExecutor
) -> None:
    other_rp = admin.create_provider(inventory={"VCPU": 8})
    consumer = existing(admin, rp)
    proxy.add_rule("GET", PUT_PATH, PASS)
    proxy.add_rule("PUT", PUT_PATH, drop_answer())
    reread = proxy.add_rule("GET", PUT_PATH, hold())
    client = client_for(proxy.url)

    running: Future[Any] = worker.submit(add_one(client, consumer, rp))
    assert reread.applied.wait(WAIT), "the client never re-read after the lost answer"
    generation, theirs = holds(admin, consumer)
    assert (generation, theirs) == (2, {rp: {"VCPU": 2}})  # the lost write had landed
    other_writer_puts(admin, consumer, {**theirs, other_rp: {"VCPU": 1}}, 2)
    reread.forward()

    fault = "answer lost + other writer before re-read"
    error = TALLY.record(fault, lambda: running.result(WAIT), added(admin, consumer, rp))

    assert isinstance(error, OutcomeUnknown)
    assert (error.sent.consumer_generation, error.sent.allocations) == (1, {rp: {"VCPU": 2}})
    assert error.state is not None and error.state.generation == 3
    assert holds(admin, consumer) == (3, {rp: {"VCPU": 2}, other_rp: {"VCPU": 1}})


# -- 2. the answer is lost and the immediate re-read fails too ------------------------------


def test_lost_add_whose_reread_fails_is_outcome_unknown_and_not_resent(
    server: PlacementServer, proxy: FaultProxy, admin: PlacementAdmin, rp: str
) -> None:
    consumer = existing(admin, rp)
    proxy.add_rule("GET", PUT_PATH, PASS)
    proxy.add_rule("PUT", PUT_PATH, drop_answer())
    proxy.add_rule("GET", PUT_PATH, answer(503))
    server.clear_requests_seen()

    fault = "answer lost + re-read 503"
    error = TALLY.record(
        fault, add_one(client_for(proxy.url), consumer, rp), added(admin, consumer, rp)
    )

    assert_unknown_yet_added_once(
        error, proxy, ["delay", "drop_answer", "answer", "pass"], server, admin, consumer, rp
    )


def test_lost_claim_whose_reread_fails_is_success_not_capacity_exceeded(
    server: PlacementServer, proxy: FaultProxy, admin: PlacementAdmin, rp: str
) -> None:
    consumer = new_id()
    proxy.add_rule("PUT", PUT_PATH, drop_answer())
    proxy.add_rule("GET", PUT_PATH, answer(503))
    server.clear_requests_seen()

    fault = "answer lost + re-read 503"
    state = TALLY.record(fault, claim_all(client_for(proxy.url), consumer, rp), claimed(admin, rp))

    assert not isinstance(state, PlacementError), state
    assert state.generation == 1
    assert [r.action for r in proxy.log] == ["drop_answer", "answer", "pass"]
    assert puts_seen(server, consumer) == [204]
    assert holds(admin, consumer) == (1, {rp: {"VCPU": 8}})


# -- 3. the slow write: it commits after the client's re-read showed the old generation -----


def slow_write(proxy: FaultProxy) -> RuleHandle:
    return proxy.add_rule("PUT", PUT_PATH, hold(forward_after=Match("GET", PUT_PATH)))


def test_slow_add_committing_after_the_reread_is_outcome_unknown_applied_once(
    server: PlacementServer, proxy: FaultProxy, admin: PlacementAdmin, rp: str
) -> None:
    consumer = existing(admin, rp)
    slow_write(proxy)
    client = client_for(proxy.url, timeout=IMPATIENT)
    server.clear_requests_seen()

    fault = "slow write committed after re-read"
    error = TALLY.record(fault, add_one(client, consumer, rp), added(admin, consumer, rp))

    assert isinstance(error, OutcomeUnknown)
    # the late write landed; the client's second write, carrying the same generation, cannot
    assert puts_seen(server, consumer) == [204, 409]
    assert holds(admin, consumer) == (2, {rp: {"VCPU": 2}})


def test_slow_claim_committing_after_the_reread_is_outcome_unknown_applied_once(
    server: PlacementServer, proxy: FaultProxy, admin: PlacementAdmin, rp: str
) -> None:
    """A new consumer still missing after the timeout proves nothing: no second write."""
    consumer = new_id()
    held = slow_write(proxy)
    client = client_for(proxy.url, timeout=IMPATIENT)
    server.clear_requests_seen()

    fault = "slow write committed after re-read"

    def claim_then_let_it_land() -> Any:
        try:
            return claim_all(client, consumer, rp)()
        finally:
            # The client gives up on it at once; the proxy forwards the held PUT
            # right after relaying the client's re-read, on its own thread.
            assert held.forwarded.wait(30)

    state = TALLY.record(fault, claim_then_let_it_land, claimed(admin, rp))

    assert isinstance(state, OutcomeUnknown), state
    assert puts_seen(server, consumer) == [204]
    assert holds(admin, consumer) == (1, {rp: {"VCPU": 8}})


# -- 4. a 5xx after the commit ---------------------------------------------------------------

STATUSES = pytest.mark.parametrize("status", [500, 507])


@STATUSES
def test_add_answered_5xx_after_commit_is_outcome_unknown_applied_once(
    proxy: FaultProxy, admin: PlacementAdmin, rp: str, status: int
) -> None:
    consumer = existing(admin, rp)
    proxy.add_rule("PUT", PUT_PATH, answer_after_forwarding(status))

    fault = f"{status} after commit"
    error = TALLY.record(
        fault, add_one(client_for(proxy.url), consumer, rp), added(admin, consumer, rp)
    )

    assert isinstance(error, OutcomeUnknown)
    assert holds(admin, consumer) == (2, {rp: {"VCPU": 2}})


@STATUSES
def test_claim_answered_5xx_after_commit_is_success(
    proxy: FaultProxy, admin: PlacementAdmin, rp: str, status: int
) -> None:
    consumer = new_id()
    proxy.add_rule("PUT", PUT_PATH, answer_after_forwarding(status))

    fault = f"{status} after commit"
    state = TALLY.record(fault, claim_all(client_for(proxy.url), consumer, rp), claimed(admin, rp))

    assert not isinstance(state, PlacementError), state
    assert holds(admin, consumer) == (1, {rp: {"VCPU": 8}})


# -- 5. the server is killed after the commit, and restarted before the next read -----------


def crash_after_commit(
    server: PlacementServer, proxy: FaultProxy, worker: ThreadPoolExecutor, make_call: Any
) -> Future[Any]:
    """Lose the write's answer; kill the server while the re-read is held (so the re-read
    fails); restart it when the client's retry policy sleeps. Returns the running call."""
    proxy.add_rule("PUT", PUT_PATH, drop_answer())
    reread = proxy.add_rule("GET", PUT_PATH, hold())
    restarted = threading.Event()

    def restart_instead_of_sleeping(seconds: float) -> None:
        if not restarted.is_set():
            server.restart()
            restarted.set()

    client = client_for(proxy.url, retry=no_sleep_retry(sleep=restart_instead_of_sleeping))
    running: Future[Any] = worker.submit(make_call(client))
    assert reread.applied.wait(WAIT), "the client never re-read after the lost answer"
    server.kill()
    reread.forward()
    return running


def reread_died(proxy: FaultProxy) -> bool:
    """The held re-read went to the killed server: no upstream answer, none to the client."""
    return [(r.upstream_status, r.client_status) for r in proxy.log if r.action == "hold"] == [
        (None, None)
    ]


def test_add_whose_server_crashed_after_commit_is_outcome_unknown_applied_once(
    crashable: PlacementServer,
    proxy: FaultProxy,
    admin: PlacementAdmin,
    rp: str,
    worker: ThreadPoolExecutor,
) -> None:
    consumer = existing(admin, rp)
    proxy.add_rule("GET", PUT_PATH, PASS)
    running = crash_after_commit(crashable, proxy, worker, lambda c: add_one(c, consumer, rp))

    fault = "server killed after commit"
    error = TALLY.record(fault, lambda: running.result(WAIT * 2), added(admin, consumer, rp))

    assert isinstance(error, OutcomeUnknown)
    assert reread_died(proxy)
    assert holds(admin, consumer) == (2, {rp: {"VCPU": 2}})


def test_claim_whose_server_crashed_after_commit_is_success(
    crashable: PlacementServer,
    proxy: FaultProxy,
    admin: PlacementAdmin,
    rp: str,
    worker: ThreadPoolExecutor,
) -> None:
    consumer = new_id()
    running = crash_after_commit(crashable, proxy, worker, lambda c: claim_all(c, consumer, rp))

    fault = "server killed after commit"
    state = TALLY.record(fault, lambda: running.result(WAIT * 2), claimed(admin, rp))

    assert not isinstance(state, PlacementError), state
    assert reread_died(proxy)
    assert holds(admin, consumer) == (1, {rp: {"VCPU": 8}})


# -- 6. replays below the client -------------------------------------------------------------


def session_retrying(url: str, retry: Retry) -> ks_session.Session:
    http = requests.Session()
    http.mount("http://", HTTPAdapter(max_retries=retry))
    return ks_session.Session(auth=token_endpoint.Token(url, "admin"), session=http)


def over(session: ks_session.Session, url: str) -> PlacementClient:
    return PlacementClient.from_session(
        session, endpoint_override=url, microversion=LATEST, retry=no_sleep_retry()
    )


def test_a_session_whose_adapter_retries_writes_after_reading_is_refused(
    proxy: FaultProxy,
) -> None:
    session = session_retrying(proxy.url, Retry(total=3, read=3))

    with pytest.raises(InvalidInput, match="would resend a PUT"):
        over(session, proxy.url)
    TALLY.add("write replay below the client", "InvalidInput", 0)

    assert proxy.log == []  # refused before anything was sent


def test_a_session_retrying_only_gets_never_replays_a_lost_put(
    server: PlacementServer, proxy: FaultProxy, admin: PlacementAdmin, rp: str
) -> None:
    """Accepted (``other=0``: see the note in the report); urllib3 retries the dropped
    re-read on its own, and the dropped PUT is never sent again."""
    session = session_retrying(proxy.url, Retry(total=3, allowed_methods={"GET"}, other=0))
    client = over(session, proxy.url)
    consumer = existing(admin, rp)
    proxy.add_rule("GET", PUT_PATH, PASS)
    proxy.add_rule("PUT", PUT_PATH, drop_answer())
    proxy.add_rule("GET", PUT_PATH, drop_answer())
    server.clear_requests_seen()

    fault = "answer lost under a GET-only urllib3 Retry"
    error = TALLY.record(fault, add_one(client, consumer, rp), added(admin, consumer, rp))

    assert_unknown_yet_added_once(
        error, proxy, ["delay", "drop_answer", "drop_answer", "pass"], server, admin, consumer, rp
    )


# -- 8. the same arithmetic on a provider generation -----------------------------------------


def test_lost_inventory_change_then_another_writer_is_outcome_unknown_applied_once(
    proxy: FaultProxy, admin: PlacementAdmin, rp: str, worker: ThreadPoolExecutor
) -> None:
    path = f"/resource_providers/{rp}/inventories"
    proxy.add_rule("GET", path, PASS)
    proxy.add_rule("PUT", path, drop_answer())
    reread = proxy.add_rule("GET", path, hold())
    client = client_for(proxy.url)

    def add_two(current: dict[str, Inventory]) -> dict[str, Inventory]:
        vcpu = current["VCPU"]
        return {**current, "VCPU": dataclasses.replace(vcpu, total=vcpu.total + 2)}

    running: Future[Any] = worker.submit(client.providers.update_inventories, rp, add_two)
    assert reread.applied.wait(WAIT), "the client never re-read after the lost answer"
    generation = admin.provider(rp)["generation"]
    assert (generation, admin.inventory(rp)["VCPU"]["total"]) == (2, 10)  # it had landed
    traits = admin.request(
        "PUT",
        f"/resource_providers/{rp}/traits",
        json={"resource_provider_generation": generation, "traits": ["HW_CPU_X86_AVX"]},
    )
    assert traits.status_code == 200, traits.text
    reread.forward()

    fault = "provider: answer lost + other writer before re-read"
    error = TALLY.record(
        fault,
        lambda: running.result(WAIT),
        lambda: (admin.inventory(rp)["VCPU"]["total"] - 8) // 2,
    )

    assert isinstance(error, OutcomeUnknown)
    assert (error.sent.generation, error.state.generation) == (1, 3)
    assert admin.inventory(rp)["VCPU"]["total"] == 10
