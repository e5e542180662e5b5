"""Shared arrangements for unit tests: a scripted Placement on requests-mock.

Fixtures only; the constants and helpers tests import live in tests/support (``wire``: the
client's side, ``answers``: Placement's), as pytest advises against importing conftest.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests_mock

import reportclient
from reportclient.fixture import FakeClock, FakePlacement
from tests.support.answers import root_document
from tests.support.wire import CACHE_TTL, TOKEN, URL, new_uuid


@pytest.fixture
def wire() -> Iterator[requests_mock.Mocker]:
    """requests-mock standing in for Placement; unmatched URLs fail loudly."""
    with requests_mock.Mocker() as mocker:
        mocker.get(URL + "/", json=root_document())
        yield mocker


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(
    wire: requests_mock.Mocker, sleeps: list[float], clock: FakeClock
) -> reportclient.PlacementClient:
    """A client pinned to 1.39 (no negotiation request) that never really sleeps.

    Default ``cache_ttl`` (0): every update, release and claim of a consumer it
    has seen reads first. Its clock stands still unless a test moves it, so
    every write's cycle measures 0 s and the engine's contention windows start
    at their floor: the sleeps tests pin do not depend on the machine's speed.
    """
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    return reportclient.PlacementClient.from_endpoint(
        URL, token=TOKEN, retry=policy, microversion="1.39", clock=clock
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def cached_client(
    wire: requests_mock.Mocker, sleeps: list[float], clock: FakeClock
) -> reportclient.PlacementClient:
    """Like ``client``, but trusting a cached state for ``CACHE_TTL`` seconds of ``clock``."""
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    return reportclient.PlacementClient.from_endpoint(
        URL, token=TOKEN, retry=policy, microversion="1.39", cache_ttl=CACHE_TTL, clock=clock
    )


@pytest.fixture
def rp() -> str:
    return new_uuid()


@pytest.fixture
def consumer() -> str:
    return new_uuid()


@pytest.fixture
def fake() -> FakePlacement:
    """A fresh fake Placement (a file wanting other options defines its own)."""
    return FakePlacement()


@pytest.fixture
def tree(fake: FakePlacement) -> tuple[str, str, str]:
    """A root holding VGPU (one unit allocated to a consumer) and an empty child: a reshape's."""
    root = fake.create_provider(inventory={"VCPU": 8, "VGPU": 4})
    child = fake.create_provider(parent=root)
    consumer = new_uuid()
    fake.put_allocations(consumer, {root: {"VCPU": 2, "VGPU": 1}})
    fake.reset_requests()
    return root, child, consumer
