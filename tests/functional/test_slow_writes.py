"""The unknown-outcomes issue's slow write, on gunicorn + MariaDB and PostgreSQL.

A PUT parks on the consumer's row lock (``hold_consumer_lock``) until the client's read timeout
(0.5 s) fires. The client re-reads and sees the old generation N; a ``requests`` response hook
on that re-read releases the lock and waits until the parked write has committed (N+1), so the
commit lands exactly between the client's re-read and its next write, which, carrying N too,
conflicts with the client's own write. Every read-back goes straight to Placement.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from functools import partial
from typing import Any

import pytest
import requests
import sqlalchemy
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from sqlalchemy.pool import NullPool

from reportclient import (
    DEFAULT_POOL_SIZE,
    Mutation,
    OutcomeUnknown,
    PlacementClient,
    PlacementError,
    add_allocations,
    default_retry,
    remove_providers,
)
from reportclient.testing import ConsumerLock, PlacementAdmin, PlacementCluster
from tests.functional._helpers import LATEST, PROJECT, USER, holds, new_id, raw_body

pytestmark = pytest.mark.functional

DATABASES = ["mariadb", "postgresql"]
WAIT = 30.0
PROBE = 0.02
BASE = 2
#: The generation every arranged consumer is at when the client starts.
N = 2
Allocs = dict[str, dict[str, int]]
# Sessions of this cluster's database waiting for any lock (the harness's
# ConsumerLock.blocked_sessions counts only those waiting for the held lock itself).
WAITING = {
    "mariadb": "SELECT COUNT(*) FROM information_schema.INNODB_TRX t "
    "JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id "
    "WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()",
    "postgresql": "SELECT COUNT(*) FROM pg_stat_activity "
    "WHERE datname = current_database() AND wait_event_type = 'Lock'",
}

# -- the tally, per database -----------------------------------------------------------------

COLUMNS = ("database", "injected", "recovered", "typed error", "applied twice", "lost")
TALLY: dict[str, list[int]] = {}


@pytest.fixture(scope="module", autouse=True)
def slow_write_table() -> Iterator[None]:
    yield
    print("\n\nslow writes (committed between the client's re-read and retry), per database")
    width = max([len(COLUMNS[0]), *map(len, TALLY)])
    print("  ".join([COLUMNS[0].ljust(width), *COLUMNS[1:]]))
    for database, counts in TALLY.items():
        cells = [str(n).rjust(len(c)) for n, c in zip(counts, COLUMNS[1:], strict=True)]
        print("  ".join([database.ljust(width), *cells]))


def record(database: str, call: Callable[[], Any], applied: Callable[[], int]) -> Any:
    """Run ``call``; tally what it reported against how often Placement applied it."""
    try:
        outcome: Any = call()
    except PlacementError as exc:
        outcome = exc
    count, typed = applied(), isinstance(outcome, PlacementError)
    row = (1, not typed and count == 1, typed and count == 1, count >= 2, count == 0)
    TALLY[database] = [a + b for a, b in zip(TALLY.get(database, [0] * 5), row, strict=True)]
    return outcome


# -- the fault: a write parked on the row lock, released from the client's re-read -----------


class CommitBetweenRereadAndRetry:
    """A response hook on the client's session, and the consumer row lock it releases.

    While ``with`` holds the lock, the first answer to ``GET /allocations/{c}`` that comes while
    a write waits on the lock is the client's re-read after that write's timed-out PUT (the
    client sends one request at a time). It shows generation N. With ``release``, the hook then
    releases the lock and returns only once the parked write has committed (N+1).
    """

    def __init__(self, cluster: PlacementCluster, consumer: str, *, release: bool = True) -> None:
        self.cluster = cluster
        self.consumer = consumer
        self.release = release
        self.reread = threading.Event()
        self.committed = threading.Event()
        #: Statuses of the answers the client got to its PUTs (a timed-out one has none).
        self.puts: list[int] = []
        self.lock: ConsumerLock | None = None
        self._stack = ExitStack()

    def __enter__(self) -> CommitBetweenRereadAndRetry:
        self.lock = self._stack.enter_context(self.cluster.hold_consumer_lock(self.consumer))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    def __call__(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        request = response.request
        if request.path_url != f"/allocations/{self.consumer}":
            return
        if request.method == "PUT":
            self.puts.append(response.status_code)
        if request.method != "GET" or self.lock is None or self.reread.is_set():
            return
        if self.lock.blocked_sessions() == 0:
            return  # the operation's first read: no write sent yet
        assert response.content  # what Placement answered before the commit: generation N
        self.reread.set()
        if self.release:
            self._stack.close()
            self.cluster.wait_for_consumer_generation(self.consumer, self.lock.generation + 1)
            self.committed.set()


def wait_for_waiting_writes(cluster: PlacementCluster, count: int, running: Future[Any]) -> bool:
    """Wait until ``count`` sessions of the cluster's database wait for a lock (True), or
    the operation has ended first (False).

    On MariaDB the client's re-reads can themselves time out while writes are parked (seen in
    CI: every GET after the second parked PUT timed out), so the operation may end, with a
    typed error, before its retry queues; the invariant is checked the same either way.
    """
    done = threading.Event()
    running.add_done_callback(lambda _: done.set())
    engine = sqlalchemy.create_engine(cluster.database_url, poolclass=NullPool)
    deadline = time.monotonic() + WAIT
    try:
        with engine.connect() as conn:
            sql = sqlalchemy.text(WAITING[cluster.database])
            while conn.execute(sql).scalar_one() < count:
                conn.rollback()  # a fresh snapshot for the next probe
                if done.wait(PROBE):
                    return False
                assert time.monotonic() < deadline, f"{count} writes never waited together"
    finally:
        engine.dispose()
    return True


# -- fixtures and helpers --------------------------------------------------------------------


# ``cluster`` and its ``cluster_admin``: tests/functional/conftest.py.


@pytest.fixture
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


def new_rp(admin: PlacementAdmin) -> str:
    return admin.create_provider(inventory={"VCPU": {"total": 16, "max_unit": 16}})


def client_under_test(
    cluster: PlacementCluster, http: requests.Session, consumer: str, *, release: bool = True
) -> tuple[CommitBetweenRereadAndRetry, PlacementClient]:
    """The hook on ``http``, and the client under test on it: 1.39, read timeout 0.5 s, the
    default policy with its sleeps recorded, not slept."""
    slow = CommitBetweenRereadAndRetry(cluster, consumer, release=release)
    sleeps: list[float] = []
    http.hooks["response"].append(slow)
    session = ks_session.Session(auth=token_endpoint.Token(cluster.url, "admin"), session=http)
    client = PlacementClient.from_session(
        session,
        endpoint_override=cluster.url,
        microversion=LATEST,
        timeout=(5, 0.5),
        retry=default_retry(sleep=sleeps.append, rand=lambda: 0.5),
        pool_size=DEFAULT_POOL_SIZE,
    )
    return slow, client


def existing(admin: PlacementAdmin, allocations: Allocs) -> str:
    """A consumer another writer created, then rewrote to ``allocations`` (generation N)."""
    consumer = new_id()
    for body in (raw_body({next(iter(allocations)): {"VCPU": 1}}, None), raw_body(allocations, 1)):
        assert admin.put_allocations(consumer, body).status_code == 204
    return consumer


def writes_of(admin: PlacementAdmin, consumer: str, want: Allocs) -> Callable[[], int]:
    """How many writes landed after generation N, if Placement holds ``want`` (else 0)."""

    def count() -> int:
        generation, allocations = holds(admin, consumer)
        return (generation or N) - N if allocations == want else 0

    return count


def added(admin: PlacementAdmin, consumer: str, rp: str) -> Callable[[], int]:
    """How many +1s Placement holds on top of ``BASE``."""
    return lambda: holds(admin, consumer)[1].get(rp, {}).get("VCPU", 0) - BASE


def update(client: PlacementClient, consumer: str, mutate: Mutation) -> Callable[[], Any]:
    return partial(client.update_allocations, consumer, mutate, project_id=PROJECT, user_id=USER)


# -- the tests -------------------------------------------------------------------------------


def test_slow_add_committing_between_reread_and_retry_is_outcome_unknown_applied_once(
    cluster: PlacementCluster, cluster_admin: PlacementAdmin, http: requests.Session
) -> None:
    rp = new_rp(cluster_admin)
    consumer = existing(cluster_admin, {rp: {"VCPU": BASE}})
    slow, client = client_under_test(cluster, http, consumer)

    with slow:
        add = update(client, consumer, add_allocations({rp: {"VCPU": 1}}))
        error = record(cluster.database, add, added(cluster_admin, consumer, rp))

    assert slow.committed.is_set(), "the parked write was never released from a re-read"
    assert slow.puts == [409]  # the retry carried N and met the client's own late write
    assert isinstance(error, OutcomeUnknown), error
    assert error.sent.consumer_generation == N
    assert error.sent.allocations == {rp: {"VCPU": BASE + 1}}
    assert error.state is not None
    assert (error.state.generation, error.state.allocations) == (N + 1, {rp: {"VCPU": BASE + 1}})
    assert holds(cluster_admin, consumer) == (N + 1, {rp: {"VCPU": BASE + 1}})


def test_slow_claim_committing_between_reread_and_retry_is_success_written_once(
    cluster: PlacementCluster, cluster_admin: PlacementAdmin, http: requests.Session
) -> None:
    rp = new_rp(cluster_admin)
    consumer = existing(cluster_admin, {rp: {"VCPU": BASE}})
    slow, client = client_under_test(cluster, http, consumer)
    client.get_allocations(consumer)  # the client knows the consumer: its claim reads first
    want = {rp: {"VCPU": 3}}

    with slow:
        claim = partial(client.claim, consumer, want, project_id=PROJECT, user_id=USER)
        state = record(cluster.database, claim, writes_of(cluster_admin, consumer, want))

    assert slow.committed.is_set(), "the parked write was never released from a re-read"
    assert slow.puts == [409]
    assert not isinstance(state, PlacementError), state
    assert (state.generation, state.allocations) == (N + 1, want)
    assert holds(cluster_admin, consumer) == (N + 1, want)


def test_slow_remove_providers_committing_between_reread_and_retry_is_success_written_once(
    cluster: PlacementCluster, cluster_admin: PlacementAdmin, http: requests.Session
) -> None:
    rp, rp2 = new_rp(cluster_admin), new_rp(cluster_admin)
    consumer = existing(cluster_admin, {rp: {"VCPU": BASE}, rp2: {"VCPU": BASE}})
    slow, client = client_under_test(cluster, http, consumer)
    want = {rp: {"VCPU": BASE}}

    with slow:
        remove = update(client, consumer, remove_providers([rp2]))
        state = record(cluster.database, remove, writes_of(cluster_admin, consumer, want))

    assert slow.committed.is_set(), "the parked write was never released from a re-read"
    assert slow.puts == [409]
    assert not isinstance(state, PlacementError), state
    assert (state.generation, state.allocations) == (N + 1, want)
    assert holds(cluster_admin, consumer) == (N + 1, want)


def test_slow_add_whose_retry_queues_behind_it_is_applied_once(
    cluster: PlacementCluster, cluster_admin: PlacementAdmin, http: requests.Session
) -> None:
    rp = new_rp(cluster_admin)
    consumer = existing(cluster_admin, {rp: {"VCPU": BASE}})
    slow, client = client_under_test(cluster, http, consumer, release=False)

    with ThreadPoolExecutor(1, thread_name_prefix="client-under-test") as pool:
        with slow:
            running = pool.submit(update(client, consumer, add_allocations({rp: {"VCPU": 1}})))
            assert slow.reread.wait(WAIT), "no re-read while the first write waited on the lock"
            # The retry, carrying N too, waits behind the first write: two parked writes.
            queued = wait_for_waiting_writes(cluster, 2, running)
        outcome = record(
            cluster.database, partial(running.result, WAIT), added(cluster_admin, consumer, rp)
        )

    assert holds(cluster_admin, consumer) == (N + 1, {rp: {"VCPU": BASE + 1}})
    if not queued:  # it ended while its writes were parked: it cannot have known the outcome
        assert isinstance(outcome, OutcomeUnknown), outcome
    if isinstance(outcome, PlacementError):
        assert isinstance(outcome, OutcomeUnknown), outcome
        assert outcome.sent.consumer_generation == N
    else:
        assert (outcome.generation, outcome.allocations) == (N + 1, {rp: {"VCPU": BASE + 1}})
