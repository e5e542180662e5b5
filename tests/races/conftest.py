"""Fixtures of the race suite: both clusters and one spawn pool of worker processes.

Every test runs on the session's 4-worker clusters (``placement_cluster_mariadb`` and
``placement_cluster_postgresql`` from ``reportclient.testing.pytest_plugin``) with fresh
providers and consumers, so tests never see each other's state. Worker processes are spawned
once per session (a spawned interpreter takes a second or two to import the client); each task
builds its own ``PlacementClient`` inside its process.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import pytest

from reportclient.testing import PlacementAdmin, PlacementCluster
from tests.races.runner import PROCESSES, new_id
from tests.races.workers import raw_body

DATABASES = ["mariadb", "postgresql"]


def _hold(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


@pytest.fixture(scope="session")
def pool() -> Iterator[ProcessPoolExecutor]:
    """Worker processes made with the "spawn" context, started once for the session."""
    executor = ProcessPoolExecutor(PROCESSES, mp_context=multiprocessing.get_context("spawn"))
    try:
        # Pay for the spawns (and the imports) here, not inside a workload: the pool spawns a
        # process only when no idle one is free, so every warm-up task holds its process.
        pids = set(executor.map(_hold, [1.0] * PROCESSES))
        assert len(pids) == PROCESSES, pids
        yield executor
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module", params=DATABASES)
def cluster(request: pytest.FixtureRequest) -> PlacementCluster:
    """The session's 4-worker cluster on each database (fails without one when required)."""
    found: PlacementCluster = request.getfixturevalue(f"placement_cluster_{request.param}")
    with PlacementAdmin(found.url, found.token) as admin:
        # The first write of a project and user creates their rows; done here, once, so that
        # workloads race on allocations rather than on that insert.
        rp = admin.create_provider(inventory={"VCPU": 1})
        consumer = new_id()
        assert admin.put_allocations(consumer, raw_body({rp: {"VCPU": 1}}, None)).ok
        assert admin.put_allocations(consumer, raw_body({}, 1)).status_code == 204
    return found


@pytest.fixture
def admin(cluster: PlacementCluster) -> Iterator[PlacementAdmin]:
    """Raw admin access to the cluster, for arranging state and reading it back."""
    with PlacementAdmin(cluster.url, cluster.token, timeout=60.0) as helper:
        yield helper
