"""Backends for the contract suite: the in-memory fake and the real Placement.

Every scenario runs once per backend and asserts literal expectations, so a
passing run proves the fake answers exactly as Placement 16.0.0 does for
what the library and its users rely on.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from reportclient.fixture import FakePlacement
from reportclient.testing import EmbeddedPlacement, PlacementAdmin

from . import LATEST, Backend


def _session(token: str | None) -> requests.Session:
    session = requests.Session()
    if token is not None:
        session.headers["X-Auth-Token"] = token
    return session


@pytest.fixture(params=["fake", "real"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """A backend: a fresh fake per test, or the shared real service (fresh uuids per test)."""
    if request.param == "fake":
        fake = FakePlacement()
        session = _session("admin")
        session.mount(fake.url, fake.transport_adapter())
        yield Backend("fake", fake.url, session, fake=fake)
    else:
        server: EmbeddedPlacement = request.getfixturevalue("real_placement")
        admin = PlacementAdmin(server.url, token=server.token, microversion=LATEST)
        yield Backend("real", server.url, _session(server.token), admin=admin)
        admin.close()


@pytest.fixture
def anonymous(backend: Backend) -> Backend:
    """The same backend reached by a session that sends no token."""
    session = _session(None)
    if backend.fake is not None:
        session.mount(backend.url, backend.fake.transport_adapter())
    return Backend(backend.name, backend.url, session, backend.admin, backend.fake)


@pytest.fixture
def member(backend: Backend) -> Backend:
    """The same backend reached with a non-admin token."""
    session = _session("alice")
    if backend.fake is not None:
        session.mount(backend.url, backend.fake.transport_adapter())
    return Backend(backend.name, backend.url, session, backend.admin, backend.fake)
