"""Fixtures of the Galera suite: one Galera + Placement + HAProxy cluster and one spawn pool.

The cluster is started once for the session (about 20 s) and shared by every cell of the
matrix; HAProxy is restarted in the mode a test asks for, and every cell uses fresh providers
and consumers. Without MariaDB's server, Galera, rsync or HAProxy the suite skips, and fails
instead under ``REPORTCLIENT_REQUIRE_DATABASES=1`` (``.ci/run`` sets it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from reportclient.testing import ClusterUnavailable, GaleraPlacement, PlacementAdmin
from reportclient.testing._cluster import REQUIRE_DATABASES_ENV
from tests.races.conftest import pool  # noqa: F401 - the races suite's spawn pool fixture
from tests.races.runner import new_id
from tests.races.workers import raw_body


@pytest.fixture(scope="session")
def galera() -> Iterator[GaleraPlacement]:
    """Three Galera nodes, a 2-worker Placement host per node, HAProxy in front."""
    try:
        # Every request logged with its global request id: a failing cell's evidence.
        cluster = GaleraPlacement(workers=2, log_requests=True).start()
    except ClusterUnavailable as exc:
        if os.environ.get(REQUIRE_DATABASES_ENV) == "1":
            pytest.fail(f"{exc} ({REQUIRE_DATABASES_ENV}=1: not skipping)", pytrace=False)
        pytest.skip(str(exc))
    try:
        with PlacementAdmin(cluster.url, cluster.token) as admin:
            # The project and user rows, created once so workloads race on allocations only.
            rp = admin.create_provider(inventory={"VCPU": 1})
            consumer = new_id()
            assert admin.put_allocations(consumer, raw_body({rp: {"VCPU": 1}}, None)).ok
            assert admin.put_allocations(consumer, raw_body({}, 1)).status_code == 204
        yield cluster
    finally:
        cluster.stop()
