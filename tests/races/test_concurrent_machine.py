"""The concurrent machine (tests/machines/concurrent_machine.py) on Placement's production shape.

Threads of one shared client against the session's 4-worker gunicorn clusters over MariaDB
and PostgreSQL (``cluster`` in ``tests/races/conftest.py``), so overlapping requests of one
client really are served by different workers at once. The shared client goes through a
loopback :class:`FaultProxy`, which loses the answer of its next write of one consumer
(``drop_answer``: forwarded, committed, then the connection closed); the other client and
the checker's reads go straight to Placement. Held answers are bounded event waits in the
shared client's transport adapter; nothing sleeps.

Today's code has known cache bugs (issue 35): this test prints the table and asserts every
violation column is 0, so it fails until they are fixed.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import requests
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

import reportclient as rc
from reportclient.testing import PlacementAdmin, PlacementCluster
from tests.machines.concurrent_machine import AMPLE, TTL, HoldingAdapter, Machine, Table
from tests.machines.concurrent_model import MISSING, State
from tests.machines.write_model import freeze
from tests.support.faultproxy import FaultProxy, RuleHandle, drop_answer

pytestmark = pytest.mark.functional

SEEDS = range(4)
STEPS = 30
#: Bound on every request and every proxy exchange.
WAIT = 30.0


class ClusterBackend:
    """The shared client through a FaultProxy; the other client and reads around it."""

    def __init__(self, cluster: PlacementCluster, admin: PlacementAdmin) -> None:
        self.cluster, self.admin = cluster, admin
        port = int(cluster.url.rsplit(":", 1)[1])
        self.proxy = FaultProxy("127.0.0.1", port, timeout=WAIT)
        self.rules: list[RuleHandle] = []
        self.machine: Machine | None = None

    def client(self, *, shared: bool, **kwargs: Any) -> rc.PlacementClient:
        url = self.proxy.url if shared else self.cluster.url
        transport = requests.Session()
        transport.trust_env = False  # loopback only: no proxy from the environment
        inner = requests.adapters.HTTPAdapter(pool_maxsize=16)
        transport.mount("http://", HoldingAdapter(inner, self._after) if shared else inner)
        session = ks_session.Session(
            auth=token_endpoint.Token(url, self.cluster.token), session=transport
        )
        adapter = ks_adapter.Adapter(session, service_type="placement", endpoint_override=url)
        return rc.PlacementClient(adapter, microversion="1.39", timeout=(WAIT, WAIT), **kwargs)

    def _after(self, request: Any) -> None:
        if self.machine is not None:
            self.machine.after_answer(request)

    def read(self, consumer: str) -> State:
        body = self.admin.get_allocations(consumer)
        generation = body.get("consumer_generation")
        if generation is None:
            return MISSING
        return generation, freeze({rp: e["resources"] for rp, e in body["allocations"].items()})

    def make_providers(self) -> tuple[str, str]:
        inventory = {k: {"total": v, "max_unit": v} for k, v in AMPLE.items()}
        return (self.admin.create_provider(inventory=inventory),
                self.admin.create_provider(inventory=inventory))  # fmt: skip

    def arm_loss(self, consumer: str) -> None:
        path = f"/allocations/{consumer}"
        self.rules = [self.proxy.add_rule(m, path, drop_answer()) for m in ("PUT", "DELETE")]

    def disarm(self) -> bool:
        fired = any(rule.applied.is_set() for rule in self.rules)
        for rule in self.rules:
            rule.remaining = 0  # an unused rule must not fire in a later step
        self.rules = []
        return fired

    def close(self) -> None:
        self.proxy.close()

    def orphaned(self) -> dict[str, dict[str, int]]:
        found: dict[str, dict[str, int]] = {}
        for rp, rows in self.cluster.orphaned_allocations().items():
            for consumer, used in rows.items():
                found.setdefault(consumer, {})[rp] = used
        return found


@pytest.mark.parametrize("ttl", [0.0, TTL], ids=["cache_ttl=0", "cache_ttl=60"])
def test_one_shared_client_on_the_cluster(
    cluster: PlacementCluster, admin: PlacementAdmin, ttl: float
) -> None:
    total = Table(f"{cluster.database}, cache_ttl={ttl:g}")
    logger = logging.getLogger("reportclient")
    level = logger.level
    logger.setLevel(logging.CRITICAL)  # expected retry warnings and give-ups
    providers: tuple[str, str] | None = None
    try:
        for seed in SEEDS:
            backend = ClusterBackend(cluster, admin)
            providers = providers or backend.make_providers()
            machine = Machine(backend, seed, ttl, steps=STEPS, providers=providers)
            backend.machine = machine
            try:
                total.add(machine.run())
            finally:
                backend.close()
    finally:
        logger.setLevel(level)
    print(total.report())
    violations = {k: v for k, v in total.violations().items() if v}
    assert not violations, violations
