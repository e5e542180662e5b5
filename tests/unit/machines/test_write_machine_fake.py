"""The one write machine (tests/machines/write_machine.py) on the fake Placement.

Faults come from the fake's own injection, armed *as the client's first write arrives* (a
``serve`` override), so the machine's reads and the other writer (raw HTTP to the same fake,
marked as the harness's) can never take a fault meant for the client: ``lose_next_response``
(reset, timeout); ``fail_next`` before or after the commit; ``delay_next_write`` applied right
after the client's next read (the slow write); and ``fail_next`` on the client's first read
after a lost write (a failing re-read). Nothing sleeps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
import requests
from hypothesis.stateful import run_state_machine_as_test
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

import reportclient
from reportclient.fixture import FakePlacement, RequestRecord
from tests.machines.write_machine import SERVICE, TTL, Table, WriteMachine, machine_settings

SETTINGS = machine_settings(20, 20)
FIRED = {"lost", "lost-timeout", "fail", "fail-after-commit", "delayed"}
WRITES = ("PUT", "POST", "DELETE")


class FaultyFake(FakePlacement):
    """The fake, arming the machine's fault as the client's first write (or re-read) arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.harness = 0  # > 0 while the machine itself is talking to the fake
        self.fault = "none"
        self.reread_fails = False

    def serve(self, method: str, url: str, headers: Any, body: bytes | None) -> Any:
        if not self.harness:
            method = method.upper()
            if self.fault != "none" and method in WRITES:
                self._arm(self.fault)
                self.fault = "none"
            elif self.reread_fails and method == "GET":
                self.reread_fails = False
                self.fail_next(1, 503)
        return super().serve(method, url, headers, body)

    def _arm(self, fault: str) -> None:
        if fault in ("lost-reset", "failing-reread"):
            self.lose_next_response(how="reset")
        elif fault == "lost-timeout":
            self.lose_next_response(how="timeout")
        elif fault == "slow-write":
            self.delay_next_write().apply_after(lambda r: r.method == "GET" and not self.harness)
        elif fault == "5xx-before-commit":
            self.fail_next(1, 503)
        elif fault == "5xx-after-commit":
            self.fail_next(1, 500, applied=True)


class FakeAdmin:
    """Raw HTTP to the fake, marked as the harness's (no fault, no hook)."""

    def __init__(self, fake: FaultyFake) -> None:
        self.fake = fake
        self.session = requests.Session()
        self.session.trust_env = False
        self.session.mount(fake.url + "/", fake.transport_adapter())

    def request(
        self, method: str, path: str, json: Any = None, headers: Mapping[str, str] | None = None
    ) -> requests.Response:
        send = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
        send.update(headers or {})
        self.fake.harness += 1
        try:
            return self.session.request(method, self.fake.url + path, json=json, headers=send)
        finally:
            self.fake.harness -= 1


class FakeBackend:
    def __init__(self) -> None:
        self.fake = FaultyFake()
        self.admin = FakeAdmin(self.fake)
        self.fired = self.disturbed = False

    def client(self, **kwargs: Any) -> reportclient.PlacementClient:
        session = ks_session.Session(auth=token_endpoint.Token(self.fake.url, self.fake.token))
        session.session.trust_env = False
        session.session.mount(self.fake.url + "/", self.fake.transport_adapter())
        url = self.fake.url
        adapter = ks_adapter.Adapter(
            session, service_type="placement", endpoint_override=url, additional_headers=SERVICE
        )
        return reportclient.PlacementClient(adapter, microversion="1.39", **kwargs)

    def arm(self, fault: str, on_request: Callable[[str], None]) -> None:
        self.fake.fault, self.fired, self.disturbed = fault, False, False

        def hook(fake: FakePlacement, record: RequestRecord) -> None:
            if self.fake.harness:
                return
            self.fired |= record.fault in FIRED
            self.disturbed |= record.fault in FIRED or record.status >= 500
            if record.fault == "lost" and fault == "failing-reread":
                self.fake.reread_fails = True
            if record.fault == "delayed-applied":
                return  # folded into the read after which it landed
            on_request(f"{record.method} {record.path}")

        self.fake.between_requests(hook)

    def disarm(self) -> tuple[bool, bool]:
        self.fake.clear_faults()  # hooks and unfired faults (a held write is dropped: never lands)
        self.fake.fault, self.fake.reread_fails = "none", False
        return self.fired, self.disturbed

    def close(self) -> None:
        self.fake.clear_faults()


@pytest.fixture(scope="module")
def stats() -> Iterator[Table]:
    collected = Table("write machine on the fake Placement")
    logger = logging.getLogger("reportclient")
    level = logger.level
    logger.setLevel(logging.CRITICAL)  # thousands of expected retry warnings and give-ups
    yield collected
    logger.setLevel(level)
    print(collected.report())


@pytest.mark.parametrize("ttl", [0.0, TTL], ids=["cache_ttl=0", "cache_ttl=60"])
def test_every_write_on_the_fake(stats: Table, ttl: float) -> None:
    variant = f"cache_ttl={ttl:g}"
    run_state_machine_as_test(
        lambda: WriteMachine(FakeBackend(), ttl, stats, variant),  # type: ignore[arg-type]
        settings=SETTINGS,
    )
    violations = {k: v for k, v in stats.violations().items() if v}
    assert not violations, violations
