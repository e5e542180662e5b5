"""The neutron adapter's unit tests share neutron's ``[placement]`` configuration."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from oslo_config import fixture as cfg_fixture

from tests.support.neutron import neutron_conf


@pytest.fixture
def conf() -> Iterator[cfg_fixture.Config]:
    """neutron's options registered on a fresh ``cfg.ConfigOpts``, cleaned up after the test."""
    fixture = neutron_conf()
    yield fixture
    fixture.cleanUp()
