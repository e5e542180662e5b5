"""The real Placement for the differential run: one per session, emptied per sequence."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("placement", reason="the differential run needs openstack-placement")
pytest.importorskip("hypothesis", reason="the differential run needs hypothesis")


@pytest.fixture(scope="session")
def real_side() -> Iterator[Any]:
    """The embedded real Placement, shared by every sequence of the session."""
    from tests.fuzz._backends import RealSide

    side = RealSide()
    yield side
    side.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.fuzz._run import COVERAGE

    if COVERAGE.sequences:
        terminalreporter.write_sep("=", "differential run: the fake against Placement")
        terminalreporter.write_line(COVERAGE.summary())
