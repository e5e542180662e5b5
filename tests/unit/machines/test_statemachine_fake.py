"""The Jepsen-style state machine (tests/statemachine.py) against the fake Placement.

Faults come from the fake's own injection, each aimed at the operation's first PUT:
``lose_next_response`` (reset, timeout); ``fail_next`` before or after the commit, armed as
that PUT arrives; ``delay_next_write(...).apply_after`` the client's re-read (the slow write);
and a failing re-read (``fail_next`` armed by a ``between_requests`` hook after the lost
write). The other writer acts through ``between_requests`` during an operation and through
``put_allocations``/``delete_allocations`` between operations. Nothing sleeps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

import reportclient
from reportclient.fixture import FakePlacement, RequestRecord
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

SETTINGS = settings(
    max_examples=150,
    stateful_step_count=25,
    deadline=None,
    derandomize=True,
    database=None,
)
#: Labels of a request record whose answer an injected fault shaped.
FIRED = {"lost", "lost-timeout", "fail", "fail-after-commit", "delayed"}
#: fail_next(status, applied) armed as the client's PUT arrives.
PAGES = {"5xx-before-commit": (503, False), "5xx-after-commit": (500, True)}

Hook = Callable[[FakePlacement, RequestRecord], None]


class PageOnPut(FakePlacement):
    """The fake, arming ``fail_next`` as the next PUT to ``put_path`` arrives (not a GET)."""

    page: tuple[int, bool] | None = None
    put_path = ""

    def serve(self, method: str, url: str, headers: Any, body: bytes | None) -> Any:
        if self.page and method == "PUT" and url.endswith(self.put_path):
            self.fail_next(1, self.page[0], applied=self.page[1])
            self.page = None
        return super().serve(method, url, headers, body)


class FakeBackend:
    """A fresh fake Placement with two providers; faults and the other writer on it."""

    full_check_every = 1  # reading the fake costs nothing

    def __init__(self) -> None:
        self.fake = PageOnPut()
        rps = [self.fake.create_provider(inventory=INVENTORY) for _ in range(2)]
        self.providers = (rps[0], rps[1])

    def client(self, **kwargs: Any) -> reportclient.PlacementClient:
        """As ``make_client``, without looking proxies up in os.environ for every request."""
        session = ks_session.Session(auth=token_endpoint.Token(self.fake.url, self.fake.token))
        session.session.trust_env = False
        session.session.mount(self.fake.url + "/", self.fake.transport_adapter())
        url = self.fake.url
        adapter = ks_adapter.Adapter(session, service_type="placement", endpoint_override=url)
        return reportclient.PlacementClient(adapter, microversion="1.39", **kwargs)

    def read(self, consumer: str) -> tuple[int | None, State]:
        return self.fake.consumer_generation(consumer), freeze(self.fake.allocations(consumer))

    def write(self, consumer: str, state: State) -> None:
        if state == EMPTY:
            assert self.fake.delete_allocations(consumer)
        else:
            self.fake.put_allocations(consumer, thaw(state), project_id=PROJECT, user_id=USER)

    def arm(self, consumer: str, fault: str, after: int, action: Callable[[], None]) -> None:
        self.fake.reset_requests()
        path = self.fake.put_path = f"/allocations/{consumer}"
        if fault in ("lost-reset", "failing-reread"):
            self.fake.lose_next_response(consumer, how="reset")
        elif fault == "lost-timeout":
            self.fake.lose_next_response(consumer, how="timeout")
        elif fault == "slow-write":
            handle = self.fake.delay_next_write(consumer)
            handle.apply_after(lambda r: (r.method, r.path) == ("GET", path))
        self.fake.page = PAGES.get(fault)
        if fault == "failing-reread":
            self.fake.between_requests(
                _once(lambda r: r.fault == "lost", lambda: self.fake.fail_next(1, 503))
            )
        if after:
            self.fake.between_requests(_after_request(after, action))

    def disarm(self) -> tuple[bool, bool]:
        fired = any(r.fault in FIRED for r in self.fake.requests)
        self.fake.clear_faults()  # hooks and unfired faults (a held write would be dropped)
        self.fake.page = None
        return fired, fired

    def close(self) -> None:
        self.fake.clear_faults()


def _once(matches: Callable[[RequestRecord], bool], action: Callable[[], None]) -> Hook:
    """A between_requests hook running ``action`` after the first record ``matches``."""
    done: list[bool] = []

    def hook(fake: FakePlacement, record: RequestRecord) -> None:
        if not done and matches(record):
            done.append(True)
            action()

    return hook


def _after_request(k: int, action: Callable[[], None]) -> Hook:
    """A between_requests hook running ``action`` after the client's ``k``-th request."""
    seen: list[RequestRecord] = []

    def counts(record: RequestRecord) -> bool:
        if record.fault != "delayed-applied":  # the held write landing is not a request
            seen.append(record)
        return len(seen) == k

    return _once(counts, action)


@pytest.fixture(scope="module")
def stats() -> Iterator[Stats]:
    collected = Stats("state machine on the fake Placement")
    logger = logging.getLogger("reportclient")
    level = logger.level
    logger.setLevel(logging.ERROR)  # thousands of expected retry warnings
    yield collected
    logger.setLevel(level)
    print(collected.render())
    violations = collected.violations()
    assert violations == {"applied twice": 0, "lost": 0, "other violation": 0}, violations


@pytest.mark.parametrize("ttl", [0.0, TTL], ids=["cache_ttl=0", "cache_ttl=60"])
def test_state_machine_on_the_fake(stats: Stats, ttl: float) -> None:
    variant = f"cache_ttl={ttl:g}"
    run_state_machine_as_test(
        lambda: PlacementMachine(FakeBackend(), ttl, stats, variant), settings=SETTINGS
    )
