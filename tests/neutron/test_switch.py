"""doc/source/migrate_neutron.rst's one-line switch, run as written, then neutron's own plugins.

The page's ``code-block`` is executed as a deployment would run it; neutron
29's placement report plugin is then constructed by its own ``__init__``
and the segments plugin's client as its ``_get_clients`` spells it: both
must hold the drop-in, at their versions, with nothing sent.
"""

from __future__ import annotations

import pathlib
import re
import textwrap
from collections.abc import Iterator
from unittest import mock

import pytest
import requests_mock
from neutron_lib.placement import client as placement_client
from oslo_config import cfg

import reportclient.neutron
from tests.neutron.world import configure

configure()

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "doc" / "source" / "migrate_neutron.rst"


def the_switch() -> str:
    """The page's one ``code-block``, dedented."""
    text = GUIDE.read_text()
    [block] = re.findall(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", text)
    return textwrap.dedent(block)


@pytest.fixture
def switched() -> Iterator[None]:
    original = placement_client.PlacementAPIClient
    try:
        exec(compile(the_switch(), str(GUIDE), "exec"), {})
        yield
    finally:
        placement_client.PlacementAPIClient = original


def test_the_switch_is_one_assignment() -> None:
    statements = [line for line in the_switch().splitlines() if line and "import" not in line]
    assert statements == [
        "neutron_lib.placement.client.PlacementAPIClient = reportclient.neutron.PlacementAPIClient"
    ]


def test_after_the_switch_neutrons_plugins_build_the_drop_in_and_send_nothing(
    switched: None,
) -> None:
    from neutron.services.placement_report import plugin as report

    with requests_mock.Mocker() as wire, mock.patch.object(report.directory, "get_plugin"):
        reporter = report.PlacementReportPlugin()
        segments = placement_client.PlacementAPIClient(
            cfg.CONF, openstack_api_version="placement 1.1"
        )

    assert isinstance(reporter._placement_client, reportclient.neutron.PlacementAPIClient)
    assert repr(reporter._placement_client).endswith("'placement 1.37'>")
    assert isinstance(segments, reportclient.neutron.PlacementAPIClient)
    assert repr(segments).endswith("'placement 1.1'>")
    assert wire.call_count == 0
