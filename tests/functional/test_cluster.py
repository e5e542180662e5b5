"""The production shape: the real Placement behind 4 gunicorn workers on MariaDB and PostgreSQL."""

from __future__ import annotations

import socket
from typing import Any

import pytest
import requests
import sqlalchemy
from sqlalchemy.engine import make_url

from reportclient.testing import (
    ClusterUnavailable,
    PlacementAdmin,
    PlacementCluster,
    PlacementStartError,
)
from reportclient.testing import pytest_plugin as plugin
from tests.functional._helpers import LATEST, held, new_id, raw_body, run_together

pytestmark = pytest.mark.functional

DATABASES = ["mariadb", "postgresql"]
ENV = {"mariadb": "REPORTCLIENT_MARIADB_URL", "postgresql": "REPORTCLIENT_POSTGRESQL_URL"}
UNREACHABLE = {
    "mariadb": "mysql+pymysql://root:@127.0.0.1:{port}",
    "postgresql": "postgresql+psycopg2://postgres@127.0.0.1:{port}",
}


# ``cluster`` and its ``cluster_admin``: tests/functional/conftest.py.


def put_allocations(
    cluster: PlacementCluster, consumer: str, body: dict[str, Any], timeout: Any = 30
) -> requests.Response:
    """One raw PUT on its own connection, so threads never share a session."""
    return requests.put(
        f"{cluster.url}/allocations/{consumer}",
        json=body,
        headers={"X-Auth-Token": cluster.token, "OpenStack-API-Version": f"placement {LATEST}"},
        timeout=timeout,
    )


def databases_on_server(database: str, server_url: str) -> set[str]:
    """Database names the server lists, read from its own catalogue."""
    url = make_url(server_url)
    if database == "postgresql":
        url, sql = url.set(database="postgres"), "SELECT datname FROM pg_database"
    else:
        sql = "SELECT schema_name FROM information_schema.schemata"
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            return set(conn.execute(sqlalchemy.text(sql)).scalars())
    finally:
        engine.dispose()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_cluster_serves_placement_from_four_worker_processes(
    cluster: PlacementCluster, cluster_admin: PlacementAdmin
) -> None:
    assert len(cluster.worker_pids()) == 4
    assert cluster.master_pid not in cluster.worker_pids()
    root = cluster_admin.request("GET", "/", microversion=None)
    assert root.json()["versions"][0]["max_version"] == LATEST


def test_forty_concurrent_allocation_writes_from_eight_threads_all_succeed(
    cluster: PlacementCluster, cluster_admin: PlacementAdmin
) -> None:
    providers = [cluster_admin.create_provider(inventory={"VCPU": 64}) for _ in range(8)]
    consumers = [new_id() for _ in range(40)]
    # The first write creates the shared project, user and consumer type rows.
    assert put_allocations(cluster, new_id(), raw_body({providers[0]: {"VCPU": 1}}, None)).ok

    def writer(thread: int) -> list[tuple[int, str]]:
        mine = consumers[thread::8]
        bodies = [raw_body({providers[thread]: {"VCPU": 1}}, None) for _ in mine]
        responses = [put_allocations(cluster, c, b) for c, b in zip(mine, bodies, strict=True)]
        return [(r.status_code, r.text) for r in responses]

    outcomes = run_together([lambda t=t: writer(t) for t in range(8)])

    answers = [answer for kind, result in outcomes if kind == "ok" for answer in result]
    assert [kind for kind, _ in outcomes] == ["ok"] * 8, outcomes
    assert [status for status, _ in answers] == [204] * 40, [a for a in answers if a[0] != 204]
    assert [cluster_admin.usages(rp)["VCPU"] for rp in providers] == [6] + [5] * 7


def test_killed_worker_is_replaced_and_requests_keep_succeeding(
    cluster: PlacementCluster, cluster_admin: PlacementAdmin
) -> None:
    rp = cluster_admin.create_provider(inventory={"VCPU": 64})

    victim = cluster.kill_worker()
    workers = cluster.wait_for_workers(4)

    assert victim not in workers
    assert len(workers) == 4
    statuses = [
        put_allocations(cluster, new_id(), raw_body({rp: {"VCPU": 1}}, None)).status_code
        for _ in range(8)
    ]
    assert statuses == [204] * 8


def test_cluster_database_exists_while_running_and_is_dropped_after_stop(
    cluster: PlacementCluster,
) -> None:
    with PlacementCluster(cluster.database, workers=1) as own:
        assert own.database_name in databases_on_server(own.database, own.server_url)

    assert own.database_name not in databases_on_server(own.database, own.server_url)


def test_cluster_database_is_dropped_when_start_up_fails(cluster: PlacementCluster) -> None:
    own = PlacementCluster(cluster.database, workers=1, startup_timeout=0)

    with pytest.raises(PlacementStartError):
        own.start()

    assert own.database_name not in databases_on_server(own.database, own.server_url)


def test_held_consumer_lock_parks_a_put_until_release_then_it_commits(
    cluster: PlacementCluster, cluster_admin: PlacementAdmin
) -> None:
    rp = cluster_admin.create_provider(inventory={"VCPU": 8})
    consumer = new_id()
    assert put_allocations(cluster, consumer, raw_body({rp: {"VCPU": 1}}, None)).status_code == 204

    with cluster.hold_consumer_lock(consumer) as lock:
        assert lock.generation == 1
        with pytest.raises(requests.ReadTimeout):
            put_allocations(cluster, consumer, raw_body({rp: {"VCPU": 2}}, 1), timeout=(2, 0.5))
        lock.wait_for_blocked(1)  # the write waits on our row lock, not anywhere else

    cluster.wait_for_consumer_generation(consumer, 2)
    raw = cluster_admin.get_allocations(consumer)
    assert raw["consumer_generation"] == 2
    assert held(raw) == {rp: {"VCPU": 2}}


def test_hold_consumer_lock_refuses_a_consumer_without_a_row(cluster: PlacementCluster) -> None:
    with pytest.raises(LookupError), cluster.hold_consumer_lock(new_id()):
        pass


@pytest.mark.parametrize("database", DATABASES)
def test_unreachable_server_raises_cluster_unavailable_naming_the_variable(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV[database], UNREACHABLE[database].format(port=closed_port()))

    with pytest.raises(ClusterUnavailable, match=ENV[database]):
        PlacementCluster(database).start()


@pytest.mark.parametrize(
    ("required", "outcome"), [(None, pytest.skip.Exception), ("1", pytest.fail.Exception)]
)
def test_cluster_fixture_skips_without_a_server_unless_databases_are_required(
    required: str | None, outcome: type[BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV["mariadb"], UNREACHABLE["mariadb"].format(port=closed_port()))
    if required is None:
        monkeypatch.delenv("REPORTCLIENT_REQUIRE_DATABASES", raising=False)
    else:
        monkeypatch.setenv("REPORTCLIENT_REQUIRE_DATABASES", required)

    with pytest.raises(outcome, match="REPORTCLIENT_MARIADB_URL"):
        next(plugin._placement_cluster("mariadb"))
