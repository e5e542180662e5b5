"""The one write machine (tests/machines/write_machine.py) against the real Placement.

The real openstack-placement runs in its own process (``PlacementServer``, single-threaded
wsgiref on 127.0.0.1) behind the loopback fault proxy (``tests/support/write_http_backend.py``).
Bounded: a request costs ~10 ms, a snapshot of a provider three of them, and a held write
the client's read timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from reportclient.testing import PlacementAdmin, PlacementServer
from tests.machines.write_machine import TTL, Table, WriteMachine
from tests.support.write_http_backend import HttpBackend

pytestmark = pytest.mark.functional

EXAMPLES = {0.0: 4, TTL: 2}


@pytest.fixture(scope="module")
def server() -> Iterator[PlacementServer]:
    with PlacementServer() as running:
        yield running


@pytest.fixture(scope="module")
def admin(server: PlacementServer) -> Iterator[PlacementAdmin]:
    with PlacementAdmin(server.url, server.token) as placement_admin:
        yield placement_admin


@pytest.fixture(scope="module")
def stats() -> Iterator[Table]:
    collected = Table("write machine on the real Placement behind the fault proxy")
    logger = logging.getLogger("reportclient")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield collected
    logger.setLevel(level)
    print(collected.report())


@pytest.mark.parametrize("ttl", [0.0, TTL], ids=["cache_ttl=0", "cache_ttl=60"])
def test_every_write_on_the_real_placement(
    server: PlacementServer, admin: PlacementAdmin, stats: Table, ttl: float
) -> None:
    run_state_machine_as_test(
        lambda: WriteMachine(HttpBackend(server.port, admin), ttl, stats, f"ttl={ttl:g}"),  # type: ignore[arg-type]
        settings=settings(
            max_examples=EXAMPLES[ttl],
            stateful_step_count=12,
            deadline=None,
            derandomize=True,
            database=None,
        ),
    )
    violations = {k: v for k, v in stats.violations().items() if v}
    assert not violations, violations
