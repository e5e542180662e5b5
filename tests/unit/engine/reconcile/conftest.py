"""Reconcile's unit tests share one never-sleeping provider client of the fake."""

from __future__ import annotations

import pytest

from reportclient._clients.providers import ProviderClient
from reportclient.fixture import FakePlacement
from tests.support.clients import providers_on


@pytest.fixture
def providers(fake: FakePlacement) -> ProviderClient:
    return providers_on(fake)  # type: ignore[no-any-return]
