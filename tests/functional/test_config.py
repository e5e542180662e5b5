"""Clients built from a service's [placement] section, a clouds.yaml and OS_* variables.

Each talks to the real Placement. The password paths authenticate against a
small Keystone stand-in on 127.0.0.1 (``tests/functional/_identity.py``)
whose catalog points at that Placement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from keystoneauth1 import exceptions as ks_exc

from reportclient import PlacementAuthError, PlacementClient, PlacementEndpointError
from reportclient.config import client_from_cloud, client_from_conf, client_from_env
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import Real, claim, held, new_id, wire
from tests.functional._identity import PASSWORD, IdentityStub

cfg = pytest.importorskip("oslo_config.cfg")


def load_conf(tmp_path: Path, section: str) -> Any:
    """A ConfigOpts read from a placement.conf holding ``[placement]`` and ``section``."""
    path = tmp_path / "placement.conf"
    path.write_text(f"[placement]\n{section}")
    conf = cfg.ConfigOpts()
    conf([], project="svc", default_config_files=[str(path)])
    return conf


def password_section(keystone: IdentityStub, password: str = PASSWORD) -> str:
    return f"""
auth_type = password
auth_url = {keystone.url}
username = admin
password = {password}
project_name = admin
user_domain_name = Default
project_domain_name = Default
region_name = RegionOne
"""


def claim_and_check(client: PlacementClient, real: Real) -> tuple[str, list[tuple[str, str, int]]]:
    """Claim a new consumer, read it back raw; return it and what the client sent."""
    consumer = new_id()
    state = claim(client, consumer, {real.node: {"VCPU": 1}})
    sent = real.wire()
    assert state.generation == 1
    assert held(real.admin.get_allocations(consumer)) == {real.node: {"VCPU": 1}}
    return consumer, sent


# -- oslo.config [placement] ----------------------------------------------------------------------


def test_conf_with_password_auth_claims_on_the_real_placement_through_the_catalog(
    real: Real,
    keystone: IdentityStub,
    tmp_path: Path,
) -> None:
    client = client_from_conf(load_conf(tmp_path, password_section(keystone)))
    real.placement.clear_requests_seen()

    consumer, sent = claim_and_check(client, real)

    assert ("POST", "/v3/auth/tokens") in keystone.seen
    [auth] = keystone.auth_bodies
    assert auth["auth"]["identity"]["password"]["user"]["name"] == "admin"
    # keystoneauth's discovery negotiated the version: one GET /, then the write.
    assert sent == [("GET", "/", 200), ("PUT", f"/allocations/{consumer}", 204)]
    assert client.microversion == "1.39"


def test_conf_with_admin_token_and_no_keystone_claims_on_the_real_placement(
    real: Real,
    tmp_path: Path,
) -> None:
    section = f"auth_type = admin_token\nendpoint = {real.placement.url}\ntoken = admin\n"
    client = client_from_conf(load_conf(tmp_path, section))

    claim_and_check(client, real)


def test_conf_with_a_wrong_password_is_an_auth_error_and_placement_sees_nothing(
    real_placement: EmbeddedPlacement, compute_node: str, keystone: IdentityStub, tmp_path: Path
) -> None:
    wrong = "not-the-password"
    client = client_from_conf(load_conf(tmp_path, password_section(keystone, wrong)))
    real_placement.clear_requests_seen()

    with pytest.raises(PlacementAuthError) as caught:
        claim(client, new_id(), {compute_node: {"VCPU": 1}})

    assert isinstance(caught.value.__cause__, ks_exc.Unauthorized)
    assert wrong not in str(caught.value) and wrong not in repr(caught.value.__cause__)
    assert wire(real_placement) == []


def test_conf_naming_a_region_the_catalog_lacks_is_an_endpoint_error(
    real_placement: EmbeddedPlacement, keystone: IdentityStub, tmp_path: Path
) -> None:
    section = password_section(keystone).replace("RegionOne", "RegionTwo")
    client = client_from_conf(load_conf(tmp_path, section))
    real_placement.clear_requests_seen()

    with pytest.raises(PlacementEndpointError) as caught:
        client.get_allocations(new_id())

    assert isinstance(caught.value.__cause__, ks_exc.EndpointNotFound)
    assert wire(real_placement) == []


# -- clouds.yaml through openstacksdk ---------------------------------------------------------


@pytest.fixture
def clouds_yaml(
    real_placement: EmbeddedPlacement,
    keystone: IdentityStub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    pytest.importorskip("openstack")
    path = tmp_path / "clouds.yaml"
    path.write_text(
        f"""clouds:
  with-keystone:
    auth_type: password
    auth:
      auth_url: {keystone.url}
      username: admin
      password: "{PASSWORD}"
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    api_timeout: 30
  without-keystone:
    auth_type: admin_token
    auth:
      endpoint: {real_placement.url}
      token: admin
"""
    )
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    return path


def test_clouds_yaml_with_password_auth_claims_on_the_real_placement(
    real: Real,
    keystone: IdentityStub,
    clouds_yaml: Path,
) -> None:
    real.placement.clear_requests_seen()
    client = client_from_cloud("with-keystone")

    consumer, sent = claim_and_check(client, real)

    assert ("POST", "/v3/auth/tokens") in keystone.seen
    # With api_timeout set, the client reuses the discovery openstacksdk ran.
    assert sent == [("GET", "/", 200), ("PUT", f"/allocations/{consumer}", 204)]


def test_clouds_yaml_with_admin_token_claims_on_the_real_placement(
    real: Real,
    clouds_yaml: Path,
) -> None:
    client = client_from_cloud("without-keystone")

    claim_and_check(client, real)


def test_an_openstacksdk_connection_can_be_passed_in(
    real: Real,
    clouds_yaml: Path,
) -> None:
    import openstack

    connection = openstack.connect(cloud="with-keystone")

    claim_and_check(client_from_cloud(connection=connection), real)


# -- OS_* variables -----------------------------------------------------------------------------


def test_os_environment_with_password_auth_claims_on_the_real_placement(
    real: Real,
    keystone: IdentityStub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    for name in [name for name in os.environ if name.startswith("OS_")]:
        monkeypatch.delenv(name)
    for name, value in {
        "OS_AUTH_URL": keystone.url,
        "OS_USERNAME": "admin",
        "OS_PASSWORD": PASSWORD,
        "OS_PROJECT_NAME": "admin",
        "OS_USER_DOMAIN_NAME": "Default",
        "OS_PROJECT_DOMAIN_NAME": "Default",
        "OS_REGION_NAME": "RegionOne",
    }.items():
        monkeypatch.setenv(name, value)

    claim_and_check(client_from_env(), real)
