"""The drop-in built from neutron's ``[placement]`` options, as neutron-lib builds its Session.

Keystone and Placement are requests-mock: construction must send nothing
(no token, no discovery, no version negotiation), and the first call must
authenticate with the group's auth options, pick the endpoint by
``region_name`` and ``endpoint_type`` from the catalog, and send with the
group's session options (``timeout``, ``insecure``) at neutron's version.
neutron-lib's ``auth_type = noauth`` sends no token to ``auth_section``.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests_mock
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_config import fixture as cfg_fixture

import reportclient
from reportclient.neutron import PlacementAPIClient
from tests.support.neutron import GROUP

KEYSTONE = "http://keystone.test/v3"
TOKEN_ID = "t0ken-from-keystone"
#: A catalog with a Placement endpoint per region and interface.
ENDPOINTS = {
    (region, interface): f"http://placement-{interface}.{region.lower()}.test"
    for region in ("RegionOne", "RegionTwo")
    for interface in ("public", "internal", "admin")
}


@pytest.fixture
def keystone_conf(conf: cfg_fixture.Config) -> cfg_fixture.Config:
    """``[placement]`` with keystone password auth, as a neutron.conf sets it."""
    conf.register_opts(ks_loading.get_auth_plugin_conf_options("v3password"), group=GROUP)
    conf.config(
        group=GROUP,
        auth_type="v3password",
        auth_url=KEYSTONE,
        username="neutron",
        password="secret-password",
        user_domain_name="Default",
        project_name="service",
        project_domain_name="Default",
    )
    return conf


def keystone(wire: requests_mock.Mocker) -> None:
    token = ks_fixture.V3Token()
    service = token.add_service("placement")
    for (region, interface), url in ENDPOINTS.items():
        service.add_endpoint(interface, url, region=region)
    wire.post(f"{KEYSTONE}/auth/tokens", json=token, headers={"X-Subject-Token": TOKEN_ID})


def traits_at(wire: requests_mock.Mocker, endpoint: str) -> None:
    wire.get(f"{endpoint}/traits", json={"traits": ["CUSTOM_A"]})


def test_construction_reads_no_option_and_sends_nothing(keystone_conf: cfg_fixture.Config) -> None:
    with requests_mock.Mocker() as wire:  # no route: any request would fail the test
        client = PlacementAPIClient(keystone_conf.conf, "placement 1.37")
        shown = repr(client)

    assert wire.call_count == 0
    assert "secret-password" not in shown


def test_the_first_call_authenticates_and_picks_the_region_and_interface(
    keystone_conf: cfg_fixture.Config,
) -> None:
    keystone_conf.config(group=GROUP, region_name="RegionTwo", endpoint_type="internal")
    with requests_mock.Mocker() as wire:
        keystone(wire)
        traits_at(wire, ENDPOINTS[("RegionTwo", "internal")])
        client = PlacementAPIClient(keystone_conf.conf, "placement 1.37")

        assert client.list_traits() == {"traits": ["CUSTOM_A"]}

    token, placement = wire.request_history
    assert token.url == f"{KEYSTONE}/auth/tokens"
    assert placement.url == ENDPOINTS[("RegionTwo", "internal")] + "/traits"
    assert placement.headers["X-Auth-Token"] == TOKEN_ID
    assert placement.headers["OpenStack-API-Version"] == "placement 1.37"


def test_the_default_interface_is_public_as_neutron_registers_it(
    keystone_conf: cfg_fixture.Config,
) -> None:
    keystone_conf.config(group=GROUP, region_name="RegionOne")
    with requests_mock.Mocker() as wire:
        keystone(wire)
        traits_at(wire, ENDPOINTS[("RegionOne", "public")])
        PlacementAPIClient(keystone_conf.conf).list_traits()

    assert wire.request_history[-1].url == ENDPOINTS[("RegionOne", "public")] + "/traits"


def test_the_session_options_of_the_group_are_neutrons(
    keystone_conf: cfg_fixture.Config,
) -> None:
    keystone_conf.config(group=GROUP, region_name="RegionOne", timeout=7, insecure=True)
    with requests_mock.Mocker() as wire:
        keystone(wire)
        traits_at(wire, ENDPOINTS[("RegionOne", "public")])
        PlacementAPIClient(keystone_conf.conf).list_traits()

    placement = wire.request_history[-1]
    assert placement.timeout == (7.0, 7.0)
    assert placement.verify is False


def test_noauth_sends_no_token_to_the_endpoint_in_auth_section(conf: cfg_fixture.Config) -> None:
    conf.config(group=GROUP, auth_type="noauth", auth_section="http://placement.noauth.test")
    with requests_mock.Mocker() as wire:
        client = PlacementAPIClient(conf.conf, "placement 1.1")
        assert wire.call_count == 0
        traits_at(wire, "http://placement.noauth.test")

        client.list_traits()

    [placement] = wire.request_history
    assert "X-Auth-Token" not in placement.headers
    assert placement.headers["OpenStack-API-Version"] == "placement 1.1"
    assert placement.timeout == (5.0, 5.0)  # neutron-lib's NoAuthClient's


def test_noauth_without_an_endpoint_is_refused_at_the_first_call_before_any_request(
    conf: cfg_fixture.Config,
) -> None:
    conf.config(group=GROUP, auth_type="noauth")
    with requests_mock.Mocker() as wire:
        client = PlacementAPIClient(conf.conf)
        with pytest.raises(reportclient.InvalidInput, match="auth_section"):
            client.list_traits()

    assert wire.call_count == 0


def test_a_configuration_without_the_placement_group_is_refused_at_the_first_call() -> None:
    bare = cfg.ConfigOpts()
    client = PlacementAPIClient(bare)

    with pytest.raises(reportclient.InvalidInput, match=r"\[placement\]"):
        client.list_traits()


@pytest.mark.parametrize("version", ["1.37", "placement", "placement one.two", None])
def test_a_version_neutron_lib_could_not_read_is_refused_at_construction(version: Any) -> None:
    with pytest.raises(reportclient.InvalidInput, match=r"placement X\.Y"):
        PlacementAPIClient(cfg.ConfigOpts(), version)


def test_a_session_or_a_policy_with_a_client_is_refused(conf: cfg_fixture.Config) -> None:
    placement = reportclient.PlacementClient.from_endpoint("http://x.test", "t")

    with pytest.raises(reportclient.InvalidInput, match="used as it is"):
        PlacementAPIClient(conf.conf, client=placement, retry=reportclient.NO_RETRY)
