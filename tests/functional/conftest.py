"""Functional tests run against the real Placement service.

Their fixtures (``real_placement``, ``placement_admin``, ``compute_node``,
``placement_process``) come from ``reportclient.testing.pytest_plugin``,
which pyproject.toml's ``addopts`` loads for every run, so the functional
and contract suites share one embedded Placement per session. Defined here: ``real`` (those
three as one), the database clusters' ``cluster`` and ``cluster_admin``, and the Keystone stand-in
the configuration tests build clients through.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reportclient.testing import EmbeddedPlacement, PlacementAdmin, PlacementCluster
from tests.functional._helpers import Real
from tests.functional._identity import IdentityStub, identity_stub


@pytest.fixture
def real(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, compute_node: str
) -> Real:
    """The real Placement, an admin on it and a fresh compute node, in one argument."""
    return Real(real_placement, placement_admin, compute_node)


@pytest.fixture
def keystone(real_placement: EmbeddedPlacement) -> Iterator[IdentityStub]:
    """A Keystone stand-in on 127.0.0.1 whose catalog points at the embedded Placement."""
    with identity_stub(real_placement.url) as stub:
        yield stub


@pytest.fixture(params=["mariadb", "postgresql"])
def cluster(request: pytest.FixtureRequest) -> PlacementCluster:
    """The session's 4-worker cluster on each database (skipped where none is reachable)."""
    found: PlacementCluster = request.getfixturevalue(f"placement_cluster_{request.param}")
    return found


@pytest.fixture
def cluster_admin(cluster: PlacementCluster) -> Iterator[PlacementAdmin]:
    """A raw admin helper on ``cluster`` (test_cluster, test_slow_writes).

    Not named ``admin``: modules with a Placement of their own (test_outcomes,
    test_write_machine_real) define an ``admin`` on it, and a test there that
    forgot to would get this one, on the wrong server, without an error.
    """
    with PlacementAdmin(cluster.url, cluster.token) as helper:
        yield helper
