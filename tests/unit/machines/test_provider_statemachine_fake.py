"""The provider-generation state machine (tests/provider_statemachine.py) on the fake Placement.

Faults come from the fake's own injection, each aimed at the operation's first PUT:
``lose_next_response`` (reset, timeout); ``fail_next`` before or after the commit, armed as
that PUT arrives; ``delay_next_write(...).apply_after`` the client's re-read (the slow write);
a failing re-read or an outage from the lost write on (``fail_next`` armed by a
``between_requests`` hook after the lost write); an outage from the first request. The other
writer acts through ``between_requests`` during an operation (and after every read for
``contention``) and through the fake's arrange API (``set_traits``, ``set_aggregates``,
``set_inventory``, ``put_allocations``) between operations. Nothing sleeps.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

import reportclient
from reportclient import Inventory
from reportclient._engine import guarded_write
from reportclient.fixture import FakePlacement, RequestRecord
from tests.provider_model import (
    GPU,
    INITIAL,
    PROVIDERS,
    STANDING,
    TTL,
    Change,
    Held,
    State,
    change,
    freeze_inv,
)
from tests.provider_statemachine import (
    ProviderMachine,
    Stats,
)

SETTINGS = settings(
    max_examples=80,
    stateful_step_count=20,
    deadline=None,
    derandomize=True,
    database=None,
)
#: Labels of a request record whose answer an injected fault shaped.
FIRED = {"lost", "lost-timeout", "fail", "fail-after-commit", "delayed"}
#: fail_next(status, applied) armed as the client's PUT arrives.
PAGES = {"5xx-before-commit": (503, False), "5xx-after-commit": (500, True)}
#: Enough error pages to outlast the retry policy's 12 attempts.
OUTAGE = 100
OWNER = {"project_id": "project-providers", "user_id": "user-providers"}


class PageOnPut(FakePlacement):
    """The fake, arming ``fail_next`` as the next PUT to ``put_path`` arrives (not a GET)."""

    page: tuple[int, bool] | None = None
    put_path = ""

    def serve(self, method: str, url: str, headers: Any, body: bytes | None) -> Any:
        if self.page and method.upper() == "PUT" and url.endswith(self.put_path):
            self.fail_next(1, self.page[0], applied=self.page[1])
            self.page = None
        return super().serve(method, url, headers, body)


class FakeBackend:
    """A fresh fake Placement with two providers; faults and the other writer on it."""

    def __init__(self) -> None:
        self.fake = PageOnPut()
        self.fake.create_resource_class(GPU)
        self.allocator: dict[str, tuple[str, int]] = {}  # the other writer's DISK_GB consumer
        rps = []
        for _ in range(PROVIDERS):
            rp = self.fake.create_provider(inventory={k: v.to_json() for k, v in INITIAL.items()})
            self.fake.put_allocations(str(uuid.uuid4()), {rp: STANDING}, **OWNER)
            self.allocator[rp] = (str(uuid.uuid4()), 0)
            rps.append(rp)
        self.providers = tuple(rps)

    def client(self, **kwargs: Any) -> reportclient.PlacementClient:
        """As ``make_client``, without looking proxies up in os.environ for every request."""
        session = ks_session.Session(auth=token_endpoint.Token(self.fake.url, self.fake.token))
        session.session.trust_env = False
        session.session.mount(self.fake.url + "/", self.fake.transport_adapter())
        url = self.fake.url
        adapter = ks_adapter.Adapter(session, service_type="placement", endpoint_override=url)
        return reportclient.PlacementClient(adapter, microversion="1.39", **kwargs)

    def read(self, rp: str) -> State:
        inv = {k: Inventory.from_json(v.as_dict()) for k, v in self.fake.inventory(rp).items()}
        traits, aggs = frozenset(self.fake.traits(rp)), frozenset(self.fake.aggregates(rp))
        return Held(freeze_inv(inv.items()), traits, aggs), self.fake.provider_generation(rp)

    def change(self, rp: str, changes: Iterable[Change]) -> None:
        for c in changes:
            new = change(self.read(rp)[0], c)
            kind = c[0]
            if kind.startswith("trait") or kind == "rewrite":
                self.fake.set_traits(rp, new.traits)
            elif kind.startswith("aggregate"):
                self.fake.set_aggregates(rp, new.aggregates)
            elif kind == "inventory":
                self.fake.set_inventory(rp, {k: v.to_json() for k, v in new.inventories})
            else:  # allocate: a write naming the provider moves its generation
                consumer, amount = self.allocator[rp]
                self.allocator[rp] = consumer, amount % 3 + 1
                self.fake.put_allocations(consumer, {rp: {"DISK_GB": amount % 3 + 1}}, **OWNER)

    def arm(self, rp: str, route: str, fault: str, observe: Callable[[str], None]) -> None:
        fake = self.fake
        fake.reset_requests()
        path = fake.put_path = f"/resource_providers/{rp}/{route}"
        if fault in ("lost-reset", "failing-reread", "lost-then-outage"):
            fake.lose_next_response(how="reset")
        elif fault == "lost-timeout":
            fake.lose_next_response(how="timeout")
        elif fault == "slow-write":
            handle = fake.delay_next_write()
            handle.apply_after(lambda r: (r.method, r.path) == ("GET", path))
        elif fault == "outage":
            fake.fail_next(OUTAGE, 503)
        fake.page = PAGES.get(fault)
        after_loss = {"failing-reread": 1, "lost-then-outage": OUTAGE}.get(fault, 0)
        armed: list[bool] = []

        def hook(fake: FakePlacement, record: RequestRecord) -> None:
            if after_loss and not armed and record.fault == "lost":
                armed.append(True)
                fake.fail_next(after_loss, 503)
            observe("late" if record.fault == "delayed-applied" else record.method)

        fake.between_requests(hook)

    def disarm(self) -> tuple[bool, bool]:
        requests = self.fake.requests
        fired = any(r.fault in FIRED for r in requests)
        disturbed = fired or any(r.status >= 500 for r in requests)
        self.fake.clear_faults()  # hooks and unfired faults (a held write would be dropped)
        self.fake.page = None
        return fired, disturbed

    def close(self) -> None:
        self.fake.clear_faults()


@pytest.fixture(scope="module")
def stats() -> Iterator[Stats]:
    collected = Stats("provider state machine on the fake Placement")
    logger = logging.getLogger("reportclient")
    level = logger.level
    logger.setLevel(logging.CRITICAL)  # thousands of expected retry warnings and give-ups
    yield collected
    logger.setLevel(level)
    print(collected.render())


@pytest.mark.parametrize("ttl", [0.0, TTL], ids=["cache_ttl=0", "cache_ttl=60"])
def test_provider_state_machine_on_the_fake(
    stats: Stats, ttl: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The contention fault moves the generation after every read, forever: a
    # small budget of untouched retries (pinned in test_untouched_retries.py)
    # keeps each such operation short; the invariants do not depend on it.
    monkeypatch.setattr(guarded_write, "UNTOUCHED_RETRIES", 2)
    variant = f"cache_ttl={ttl:g}"
    run_state_machine_as_test(
        lambda: ProviderMachine(FakeBackend(), ttl, stats, variant),  # type: ignore[arg-type]
        settings=SETTINGS,  # (hypothesis takes any factory; its stub says a class)
    )
    violations = {k: v for k, v in stats.violations(variant).items() if v}
    assert not violations, violations
