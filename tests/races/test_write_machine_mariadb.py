"""The one write machine (tests/machines/write_machine.py) on Placement's production shape: MariaDB.

A smaller run than the functional one, on the session's 4-worker gunicorn cluster over
MariaDB (``placement_cluster_mariadb``), where every read-back and the other writer may land
on another worker than the client's request. Skips without a MariaDB server (fails instead
under REPORTCLIENT_REQUIRE_DATABASES=1).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from hypothesis.stateful import run_state_machine_as_test

from reportclient.testing import PlacementAdmin, PlacementCluster
from tests.machines.write_machine import Table, WriteMachine, machine_settings
from tests.support.write_http_backend import HttpBackend

pytestmark = pytest.mark.functional


@pytest.fixture
def admin(placement_cluster_mariadb: PlacementCluster) -> Iterator[PlacementAdmin]:
    cluster = placement_cluster_mariadb
    with PlacementAdmin(cluster.url, cluster.token, timeout=60.0) as other:
        yield other


def test_every_write_on_mariadb(
    placement_cluster_mariadb: PlacementCluster, admin: PlacementAdmin
) -> None:
    stats = Table("write machine on Placement over MariaDB (4 workers)")
    logger = logging.getLogger("reportclient")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    port = int(placement_cluster_mariadb.url.rsplit(":", 1)[1])
    try:
        run_state_machine_as_test(
            lambda: WriteMachine(HttpBackend(port, admin), 0.0, stats, "mariadb"),  # type: ignore[arg-type]
            settings=machine_settings(3, 10),
        )
    finally:
        logger.setLevel(level)
        print(stats.report())
    violations = {k: v for k, v in stats.violations().items() if v}
    assert not violations, violations
