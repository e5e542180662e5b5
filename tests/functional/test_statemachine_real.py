"""The Jepsen-style state machine (tests/statemachine.py) against the real Placement.

The real openstack-placement runs in its own process (``PlacementServer``, single-threaded
wsgiref on 127.0.0.1); the client under test reaches it through the loopback ``FaultProxy``,
which makes the faults: ``drop_answer`` (a lost answer after the commit), ``hold`` forwarded
as soon as the client's read timed out (a timeout after the commit) or right after the client's
re-read (the slow write), ``answer(503)`` before and ``answer_after_forwarding(500)`` after the
commit, and ``answer(503)`` on the re-read after a dropped answer. The other writer writes
straight to the server with raw HTTP, between operations and, through a hook in the client's
requests transport, between two requests of an operation. Waits are bounded events, never
sleeps; the only timer is the client's read timeout on a held write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

import reportclient
from reportclient.testing import PlacementAdmin, PlacementServer
from tests.statemachine import (
    EMPTY,
    INVENTORY,
    PROJECT,
    TTL,
    USER,
    PlacementMachine,
    State,
    Stats,
    freeze,
    thaw,
)
from tests.support.faultproxy import (
    FaultProxy,
    Match,
    RuleHandle,
    answer,
    answer_after_forwarding,
    drop_answer,
    hold,
)

pytestmark = pytest.mark.functional

#: ~25 examples x 15 steps in all, most of them without a trusted cache (the fake covers
#: cache_ttl=60 in depth); a real request costs ~15 ms and a held write the read timeout.
EXAMPLES = {0.0: 15, TTL: 10}
#: The client's read timeout: how long a held write keeps it waiting.
READ_TIMEOUT = 0.4
#: Bound on every wait for the proxy (a hang fails the test instead of the run).
WAIT = 10.0


class HookedAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter, calling ``after(method, path, status or None)`` after each request.

    It runs in the client's thread before the client sees the answer: between two requests.
    """

    def __init__(self, after: Callable[[str, str, int | None], None]) -> None:
        super().__init__()
        self.after = after

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        method, path = request.method or "GET", urlsplit(request.url or "").path
        try:
            response = super().send(request, *args, **kwargs)
        except requests.exceptions.RequestException:
            self.after(method, path, None)
            raise
        self.after(method, path, response.status_code)
        return response


class RealBackend:
    """A FaultProxy in front of the shared PlacementServer; the other writer goes around it."""

    full_check_every = 4  # a GET costs ~15 ms: untouched consumers are re-read every 4 rules

    def __init__(self, server: PlacementServer, admin: PlacementAdmin, rps: tuple[str, str]):
        self.admin, self.providers = admin, rps
        self.proxy = FaultProxy("127.0.0.1", server.port, timeout=WAIT)
        self._rules: list[RuleHandle] = []
        self._fault, self._path, self._count, self._after = "none", "", 0, 0
        self._action: Callable[[], None] = lambda: None
        self._disturbed = False

    def client(self, **kwargs: Any) -> reportclient.PlacementClient:
        transport = requests.Session()
        transport.trust_env = False  # loopback only: no proxy from the environment
        transport.mount("http://", HookedAdapter(self._answered))
        auth = token_endpoint.Token(self.proxy.url, "admin")
        session = ks_session.Session(auth=auth, session=transport)
        url = self.proxy.url
        adapter = ks_adapter.Adapter(session, service_type="placement", endpoint_override=url)
        return reportclient.PlacementClient(
            adapter, microversion="1.39", timeout=(WAIT, READ_TIMEOUT), **kwargs
        )

    def read(self, consumer: str) -> tuple[int | None, State]:
        raw = self.admin.get_allocations(consumer)
        held = {rp: entry["resources"] for rp, entry in raw["allocations"].items()}
        return raw.get("consumer_generation"), freeze(held)

    def write(self, consumer: str, state: State) -> None:
        if state == EMPTY:
            response = self.admin.delete_allocations(consumer)
        else:
            body = {
                "allocations": {rp: {"resources": res} for rp, res in thaw(state).items()},
                "consumer_generation": self.read(consumer)[0],
                "project_id": PROJECT,
                "user_id": USER,
                "consumer_type": "INSTANCE",
            }
            response = self.admin.put_allocations(consumer, body)
        assert response.status_code == 204, response.text

    def arm(self, consumer: str, fault: str, after: int, action: Callable[[], None]) -> None:
        self._fault, self._path, self._count = fault, f"/allocations/{consumer}", 0
        self._after, self._action, self._disturbed = after, action, False
        make = {
            "lost-reset": drop_answer,
            "failing-reread": drop_answer,
            "lost-timeout": hold,
            "slow-write": lambda: hold(forward_after=Match("GET", self._path)),
            "5xx-before-commit": lambda: answer(503),
            "5xx-after-commit": lambda: answer_after_forwarding(500),
        }.get(fault)
        self._rules = [] if make is None else [self.proxy.add_rule("PUT", self._path, make())]

    def _answered(self, method: str, path: str, status: int | None) -> None:
        """After each of the client's requests (in its thread, before it sees the answer)."""
        self._disturbed |= status is None or status >= 500
        put = self._rules[0] if self._rules else None
        if put is not None and path == self._path:
            if method == "PUT" and status is None and self._fault == "lost-timeout":
                assert put.applied.wait(WAIT)
                put.forward()  # commits now: after the timeout, before the re-read
                assert put.forwarded.wait(WAIT)
            if method == "PUT" and status is None and self._fault == "failing-reread":
                if len(self._rules) == 1:
                    self._rules.append(self.proxy.add_rule("GET", self._path, answer(503)))
            if method == "GET" and self._fault == "slow-write" and put.applied.is_set():
                assert put.forwarded.wait(WAIT)  # released by this re-read; let it commit
        self._count += 1
        if self._count == self._after:
            self._action()

    def disarm(self) -> tuple[bool, bool]:
        fired = bool(self._rules) and self._rules[0].applied.is_set()
        for rule in self._rules:
            held = rule.action.name == "hold" and rule.applied.is_set()
            assert not held or rule.forwarded.is_set(), "a held write outlived its operation"
            rule.remaining = 0  # an unused rule must not fire in a later operation
        self._rules, self._after = [], 0
        return fired, fired or self._disturbed

    def close(self) -> None:
        self.proxy.close()


@pytest.fixture(scope="module")
def server() -> Iterator[PlacementServer]:
    with PlacementServer() as running:
        yield running


@pytest.fixture(scope="module")
def admin(server: PlacementServer) -> Iterator[PlacementAdmin]:
    with PlacementAdmin(server.url, server.token) as placement_admin:
        yield placement_admin


@pytest.fixture(scope="module")
def providers(admin: PlacementAdmin) -> tuple[str, str]:
    return (
        admin.create_provider(inventory=INVENTORY),
        admin.create_provider(inventory=INVENTORY),
    )


@pytest.fixture(scope="module")
def stats() -> Iterator[Stats]:
    collected = Stats("state machine on the real Placement behind the fault proxy")
    logger = logging.getLogger("reportclient")
    level = logger.level
    logger.setLevel(logging.ERROR)  # thousands of expected retry warnings
    yield collected
    logger.setLevel(level)
    print(collected.render())
    violations = collected.violations()
    assert violations == {"applied twice": 0, "lost": 0, "other violation": 0}, violations


@pytest.mark.parametrize("ttl", [0.0, TTL], ids=["cache_ttl=0", "cache_ttl=60"])
def test_state_machine_on_the_real_placement(
    server: PlacementServer,
    admin: PlacementAdmin,
    providers: tuple[str, str],
    stats: Stats,
    ttl: float,
) -> None:
    variant = f"cache_ttl={ttl:g}"
    run_state_machine_as_test(
        lambda: PlacementMachine(RealBackend(server, admin, providers), ttl, stats, variant),
        settings=settings(
            max_examples=EXAMPLES[ttl],
            stateful_step_count=15,
            deadline=None,
            derandomize=True,
            database=None,
        ),
    )
