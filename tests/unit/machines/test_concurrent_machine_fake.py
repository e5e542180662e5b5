"""The concurrent machine (tests/machines/concurrent_machine.py) on the fake Placement.

Several threads of one shared client, another client, raw writes and lost answers, on the
fake (``reportclient.fixture``): the fake serves in the requesting thread, so the shared
client's lost answer is armed as its own write arrives (:class:`ThreadFaultFake`), never
taken by the other client. Nothing sleeps; holds are bounded event waits.

Today's code has known cache bugs (issue 35); this test prints the table and asserts every
violation column is 0, so it fails until they are fixed. The checker's own honesty is proven
in ``tests/unit/machines/test_concurrent_checker.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import pytest
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

import reportclient as rc
from reportclient.fixture import FakePlacement
from tests.machines.concurrent_machine import ACTOR, AMPLE, TTL, HoldingAdapter, Machine, Table
from tests.machines.concurrent_model import MISSING, State
from tests.machines.write_model import freeze

SEEDS = range(8)
STEPS = 30
WRITES = ("PUT", "DELETE", "POST")


class ThreadFaultFake(FakePlacement):
    """The fake, losing the answer of the shared client's next write of one consumer."""

    def __init__(self) -> None:
        super().__init__()
        self.lose_for: str | None = None
        self.fired = False

    def serve(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None,
              **kwargs: Any) -> Any:  # fmt: skip
        path = urlsplit(url).path
        with self._lock:  # the state's RLock: arm and serve as one, no other write between
            if (
                self.lose_for is not None
                and getattr(ACTOR, "shared", False)
                and method.upper() in WRITES
                and path.endswith(f"/allocations/{self.lose_for}")
            ):
                self.lose_next_response(self.lose_for, how="reset")
                self.lose_for, self.fired = None, True
            return super().serve(method, url, headers, body, **kwargs)


class FakeBackend:
    def __init__(self) -> None:
        self.fake = ThreadFaultFake()
        self.machine: Machine | None = None

    def client(self, *, shared: bool, **kwargs: Any) -> rc.PlacementClient:
        session = ks_session.Session(auth=token_endpoint.Token(self.fake.url, self.fake.token))
        session.session.trust_env = False
        inner = self.fake.transport_adapter()
        mounted = HoldingAdapter(inner, self._after) if shared else inner
        session.session.mount(self.fake.url + "/", mounted)
        adapter = ks_adapter.Adapter(
            session, service_type="placement", endpoint_override=self.fake.url
        )
        return rc.PlacementClient(adapter, microversion="1.39", **kwargs)

    def _after(self, request: Any) -> None:
        if self.machine is not None:
            self.machine.after_answer(request)

    def read(self, consumer: str) -> State:
        generation = self.fake.consumer_generation(consumer)
        if generation is None:
            return MISSING
        return generation, freeze(self.fake.allocations(consumer))

    def make_providers(self) -> tuple[str, str]:
        return (self.fake.create_provider(inventory=AMPLE),
                self.fake.create_provider(inventory=AMPLE))  # fmt: skip

    def arm_loss(self, consumer: str) -> None:
        self.fake.lose_for, self.fake.fired = consumer, False

    def disarm(self) -> bool:
        with self.fake._lock:
            fired = self.fake.fired
            self.fake.lose_for, self.fake.fired = None, False
            self.fake.clear_faults()
        return fired

    def close(self) -> None:
        self.fake.clear_faults()

    def orphaned(self) -> dict[str, dict[str, int]]:
        return {}  # the fake keeps no allocation without its consumer


@pytest.fixture(scope="module")
def tables() -> Iterator[list[tuple[str, Table]]]:
    collected: list[tuple[str, Table]] = []
    logger = logging.getLogger("reportclient")
    level = logger.level
    logger.setLevel(logging.CRITICAL)  # expected retry warnings and give-ups
    yield collected
    logger.setLevel(level)
    if collected:
        print(collected[0][1].render(collected))


@pytest.mark.parametrize("ttl", [0.0, TTL], ids=["cache_ttl=0", "cache_ttl=60"])
def test_one_shared_client_on_the_fake(tables: list[tuple[str, Table]], ttl: float) -> None:
    total = Table(f"fake, cache_ttl={ttl:g}")
    for seed in SEEDS:
        backend = FakeBackend()
        machine = Machine(backend, seed, ttl, steps=STEPS)
        backend.machine = machine
        try:
            total.add(machine.run())
        finally:
            backend.close()
    tables.append((total.title, total))
    print(total.report())
    violations = {k: v for k, v in total.violations().items() if v}
    assert not violations, violations
