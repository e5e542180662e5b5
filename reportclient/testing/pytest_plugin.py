"""pytest fixtures that run the real Placement service.

Enable with ``-p reportclient.testing.pytest_plugin``, with
``pytest_plugins = ["reportclient.testing.pytest_plugin"]`` in the rootdir's conftest, or by
importing the fixtures into a conftest.

``real_placement`` is session-scoped: one in-process Placement for the whole run, so tests must
isolate themselves with fresh uuid4 providers and consumers (``compute_node`` does).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from reportclient.testing._admin import Inventory, PlacementAdmin
from reportclient.testing._cluster import (
    REQUIRE_DATABASES_ENV,
    ClusterUnavailable,
    PlacementCluster,
)
from reportclient.testing._server import EmbeddedPlacement, PlacementServer

__all__ = [
    "COMPUTE_NODE_INVENTORY",
    "compute_node",
    "placement_admin",
    "placement_cluster_mariadb",
    "placement_cluster_postgresql",
    "placement_process",
    "real_placement",
]

#: Inventory of the ``compute_node`` fixture's provider.
COMPUTE_NODE_INVENTORY: Inventory = {
    "VCPU": {"total": 8, "max_unit": 8},
    "MEMORY_MB": {"total": 4096, "max_unit": 4096},
    "DISK_GB": {"total": 100},
}


_shared_lock = threading.Lock()
_shared: EmbeddedPlacement | None = None
_shared_users = 0


@contextmanager
def _shared_embedded() -> Iterator[EmbeddedPlacement]:
    """Reference-counted process-wide EmbeddedPlacement.

    Only one EmbeddedPlacement can run per process, yet this fixture may be defined twice in a
    run (plugin loaded with ``-p`` *and* its fixtures imported into a conftest); both
    definitions then share one server instead of the second failing to start.
    """
    global _shared, _shared_users
    with _shared_lock:
        if _shared is None:
            _shared = EmbeddedPlacement().start()
        _shared_users += 1
        placement = _shared
    try:
        yield placement
    finally:
        with _shared_lock:
            _shared_users -= 1
            if _shared_users == 0:
                _shared = None
                placement.stop()


@pytest.fixture(scope="session")
def real_placement() -> Iterator[EmbeddedPlacement]:
    """One real in-process Placement (in-memory SQLite) shared by the whole test session."""
    with _shared_embedded() as placement:
        yield placement


@pytest.fixture
def placement_admin(real_placement: EmbeddedPlacement) -> Iterator[PlacementAdmin]:
    """A raw admin helper on ``real_placement`` for arranging and inspecting state."""
    with PlacementAdmin(real_placement.url, real_placement.token) as admin:
        yield admin


@pytest.fixture
def compute_node(placement_admin: PlacementAdmin) -> str:
    """A fresh provider with VCPU 8, MEMORY_MB 4096 and DISK_GB 100; returns its uuid."""
    return placement_admin.create_provider(inventory=COMPUTE_NODE_INVENTORY)


@pytest.fixture
def placement_process() -> Iterator[PlacementServer]:
    """A real Placement in its own process (SQLite file) for kill/restart tests; slower."""
    with PlacementServer() as server:
        yield server


def _placement_cluster(database: str) -> Iterator[PlacementCluster]:
    """Run a 4-worker cluster; skip (fail under REPORTCLIENT_REQUIRE_DATABASES=1) without a DB."""
    try:
        cluster = PlacementCluster(database=database, workers=4).start()
    except ClusterUnavailable as exc:
        if os.environ.get(REQUIRE_DATABASES_ENV) == "1":
            pytest.fail(f"{exc} ({REQUIRE_DATABASES_ENV}=1: not skipping)", pytrace=False)
        pytest.skip(str(exc))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def placement_cluster_mariadb() -> Iterator[PlacementCluster]:
    """Placement behind 4 gunicorn workers on a fresh MariaDB database (REPORTCLIENT_MARIADB_URL).

    Skips when the server is unreachable, fails instead when REPORTCLIENT_REQUIRE_DATABASES=1.
    """
    yield from _placement_cluster("mariadb")


@pytest.fixture(scope="session")
def placement_cluster_postgresql() -> Iterator[PlacementCluster]:
    """Placement behind 4 gunicorn workers on a fresh PostgreSQL database.

    The server comes from REPORTCLIENT_POSTGRESQL_URL (default: local, user postgres). Skips
    when it is unreachable, fails instead when REPORTCLIENT_REQUIRE_DATABASES=1.
    """
    yield from _placement_cluster("postgresql")
