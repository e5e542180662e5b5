"""Building a client from oslo.config, clouds.yaml and OS_* variables (reportclient.config)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import requests_mock
from keystoneauth1 import fixture as ks_fixture

import reportclient
from reportclient import config
from tests.support.answers import MISSING, root_document
from tests.support.wire import URL

oslo_cfg = pytest.importorskip("oslo_config.cfg")

AUTH_URL = "http://keystone.test/v3"
INTERNAL = "http://placement-internal.test"
PUBLIC = "http://placement-public.test"
OTHER_REGION = "http://placement-region-two.test"
PASSWORD = "pa55-word-in-conf"  # asserted absent from what is raised
CONSUMER = "6f1c1a3e-5b7d-4c2e-9a4f-0d2b8e1c7a55"


def make_conf(tmp_path: Path, body: str, group: str = "placement") -> Any:
    """A ConfigOpts loaded from a file holding ``[group]`` and ``body``."""
    path = tmp_path / "service.conf"
    path.write_text(f"[{group}]\n{body}\n")
    conf = oslo_cfg.ConfigOpts()
    conf([], project="svc", default_config_files=[str(path)])
    return conf


def keystone(wire: requests_mock.Mocker) -> ks_fixture.V3Token:
    """A Keystone on requests-mock issuing a token whose catalog has Placement in two regions."""
    token = ks_fixture.V3Token()
    service = token.add_service("placement")
    service.add_standard_endpoints(public=PUBLIC, internal=INTERNAL, region="RegionOne")
    service.add_standard_endpoints(public=OTHER_REGION, region="RegionTwo")
    wire.get(AUTH_URL, json=ks_fixture.V3Discovery(AUTH_URL))
    wire.post(AUTH_URL + "/auth/tokens", json=token, headers={"X-Subject-Token": "tok-1"})
    for url in (INTERNAL, PUBLIC, OTHER_REGION):
        wire.get(url + "/", json=root_document())
        wire.get(f"{url}/allocations/{CONSUMER}", **MISSING)
    return token


PASSWORD_CONF = f"""
auth_type = password
auth_url = {AUTH_URL}
username = nova
password = {PASSWORD}
project_name = service
user_domain_name = Default
project_domain_name = Default
"""


def placement_requests(wire: requests_mock.Mocker) -> list[tuple[str, str, str]]:
    return [
        (r.method, f"{r.scheme}://{r.netloc}", r.path)
        for r in wire.request_history
        if "keystone" not in r.netloc
    ]


# -- oslo.config ------------------------------------------------------------------------------


def test_conf_password_auth_uses_internal_endpoint_of_its_region_by_default(wire, tmp_path):
    keystone(wire)
    conf = make_conf(tmp_path, PASSWORD_CONF + "region_name = RegionOne")

    client = config.client_from_conf(conf)
    client.get_allocations(CONSUMER)

    assert placement_requests(wire) == [
        ("GET", INTERNAL, "/"),
        ("GET", INTERNAL, f"/allocations/{CONSUMER}"),
    ]
    assert wire.request_history[-1].headers["X-Auth-Token"] == "tok-1"


def test_conf_valid_interfaces_and_region_name_choose_the_endpoint(wire, tmp_path):
    keystone(wire)
    conf = make_conf(tmp_path, PASSWORD_CONF + "region_name = RegionTwo\nvalid_interfaces = public")

    config.client_from_conf(conf, microversion="1.39").get_allocations(CONSUMER)

    assert placement_requests(wire) == [("GET", OTHER_REGION, f"/allocations/{CONSUMER}")]


def test_conf_admin_token_talks_to_its_endpoint_without_keystone(wire, tmp_path):
    conf = make_conf(tmp_path, f"auth_type = admin_token\nendpoint = {URL}\ntoken = admin")
    wire.get(f"{URL}/allocations/{CONSUMER}", **MISSING)

    client = config.client_from_conf(conf)
    client.get_allocations(CONSUMER)

    assert client.microversion == "1.39"
    assert [r.path for r in wire.request_history] == ["/", f"/allocations/{CONSUMER}"]
    assert wire.request_history[-1].headers["X-Auth-Token"] == "admin"


def test_conf_sets_the_agent_setting_and_a_keyword_wins(wire, tmp_path):
    conf = make_conf(
        tmp_path,
        f"auth_type = admin_token\nendpoint = {URL}\ntoken = a\nreconcile_max_staleness = 300",
    )
    assert config.client_from_conf(conf).providers._max_staleness == 300.0
    assert config.client_from_conf(conf, reconcile_max_staleness=60).providers._max_staleness == 60
    unset = make_conf(tmp_path, f"auth_type = admin_token\nendpoint = {URL}\ntoken = a")
    assert config.client_from_conf(unset).providers._max_staleness is None


def test_conf_refuses_a_negative_agent_setting(wire, tmp_path):
    conf = make_conf(
        tmp_path,
        f"auth_type = admin_token\nendpoint = {URL}\ntoken = a\nreconcile_max_staleness = -1",
    )
    with pytest.raises(reportclient.InvalidInput, match="reconcile_max_staleness"):
        config.client_from_conf(conf)


def test_conf_timeout_bounds_every_request_and_discovery(wire, tmp_path):
    conf = make_conf(tmp_path, f"auth_type = admin_token\nendpoint = {URL}\ntoken = a\ntimeout = 7")
    wire.get(f"{URL}/allocations/{CONSUMER}", **MISSING)

    config.client_from_conf(conf).get_allocations(CONSUMER)

    assert [r.timeout for r in wire.request_history] == [7.0, (7.0, 7.0)]


def test_conf_without_timeout_uses_the_client_default(wire, tmp_path):
    conf = make_conf(tmp_path, f"auth_type = admin_token\nendpoint = {URL}\ntoken = a")
    wire.get(f"{URL}/allocations/{CONSUMER}", **MISSING)

    config.client_from_conf(conf).get_allocations(CONSUMER)

    assert [r.timeout for r in wire.request_history] == [30.0, reportclient.DEFAULT_TIMEOUT]


def test_conf_status_code_retries_apply_to_reads_and_never_to_writes(wire, tmp_path):
    conf = make_conf(
        tmp_path,
        f"auth_type = admin_token\nendpoint = {URL}\ntoken = a\n"
        "status_code_retries = 2\nstatus_code_retry_delay = 0.001",
    )
    busy = {"status_code": 503, "text": "busy"}
    path = f"/allocations/{CONSUMER}"
    wire.get(URL + path, [busy, MISSING])
    wire.put(URL + path, [busy])
    client = config.client_from_conf(conf, microversion="1.39", retry=reportclient.NO_RETRY)

    client.get_allocations(CONSUMER)
    with pytest.raises(reportclient.PlacementUnavailable):
        client.claim(
            CONSUMER,
            {"a" * 8 + "-1111-4111-8111-" + "1" * 12: {"VCPU": 1}},
            project_id="p",
            user_id="u",
        )

    methods = [r.method for r in wire.request_history if r.path == path]
    assert methods[:3] == ["GET", "GET", "PUT"]
    assert methods.count("PUT") == 1


def test_conf_with_an_unknown_auth_type_is_an_auth_error(tmp_path):
    conf = make_conf(tmp_path, "auth_type = no-such-plugin")

    with pytest.raises(reportclient.PlacementAuthError, match="no-such-plugin"):
        config.client_from_conf(conf)


def test_conf_in_another_group(wire, tmp_path):
    conf = make_conf(tmp_path, f"auth_type = admin_token\nendpoint = {URL}\ntoken = a", "report")
    wire.get(f"{URL}/allocations/{CONSUMER}", **MISSING)

    config.client_from_conf(conf, "report", microversion="1.39").get_allocations(CONSUMER)

    assert wire.call_count == 1


def test_register_opts_twice_is_harmless(tmp_path):
    conf = make_conf(tmp_path, "region_name = RegionOne")
    config.register_opts(conf)
    config.register_opts(conf)

    assert conf.placement.region_name == "RegionOne"
    assert conf.placement.service_type == "placement"
    assert conf.placement.valid_interfaces == ["internal", "public"]


def test_register_opts_alongside_a_service_that_registered_keystoneauths_options(tmp_path):
    from keystoneauth1 import loading

    conf = make_conf(tmp_path, "region_name = RegionOne")
    loading.register_session_conf_options(conf, "placement")
    loading.register_auth_conf_options(conf, "placement")
    loading.register_adapter_conf_options(conf, "placement", include_deprecated=False)

    config.register_opts(conf)

    assert conf.placement.region_name == "RegionOne"


def test_list_opts_documents_session_auth_and_adapter_options_once_each():
    [(group, opts)] = config.list_opts()
    names = [opt.name for opt in opts]

    assert group == "placement"
    assert len(names) == len(set(names))
    for name in (
        "auth-type",
        "auth-url",
        "password",
        "region-name",
        "valid-interfaces",
        "timeout",
        "connect-retries",
        "status-code-retries",
        "endpoint-override",
    ):
        assert name in [n.replace("_", "-") for n in names], name
    defaults = {opt.name.replace("_", "-"): opt.default for opt in opts}
    assert defaults["service-type"] == "placement"
    assert defaults["valid-interfaces"] == ["internal", "public"]


def test_oslo_config_generator_finds_the_reportclient_namespace(sample_conf):
    sample = sample_conf
    assert "[placement]" in sample
    assert "#valid_interfaces = internal,public" in sample
    assert "#status_code_retries" in sample


def test_missing_oslo_config_is_a_missing_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "oslo_config.cfg", None)

    with pytest.raises(config.MissingExtra, match=r"reportclient\[oslo\]") as err:
        config.list_opts()

    assert err.value.extra == "oslo"
    assert isinstance(err.value, ImportError)


def test_missing_oslo_config_names_the_function_that_needs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "oslo_config.cfg", None)

    with pytest.raises(config.MissingExtra, match="client_from_conf needs oslo_config"):
        config.client_from_conf(object())


# -- openstacksdk / clouds.yaml ---------------------------------------------------------------


class FakeConnection:
    """What client_from_cloud uses of an openstacksdk Connection: its placement Adapter."""

    def __init__(self, placement: Any) -> None:
        self.placement = placement


def test_cloud_client_is_built_on_the_connections_placement_adapter(wire):
    from keystoneauth1 import adapter, session, token_endpoint

    placement = adapter.Adapter(
        session.Session(auth=token_endpoint.Token(URL, "t")), endpoint_override=URL
    )
    wire.get(f"{URL}/allocations/{CONSUMER}", **MISSING)

    client = config.client_from_cloud(connection=FakeConnection(placement), microversion="1.39")
    client.get_allocations(CONSUMER)

    assert wire.request_history[0].headers["X-Auth-Token"] == "t"


def test_cloud_from_clouds_yaml(wire, tmp_path, monkeypatch):
    pytest.importorskip("openstack")
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        "clouds:\n  test:\n    auth_type: admin_token\n"
        f"    auth:\n      endpoint: {URL}\n      token: from-yaml\n"
    )
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    wire.get(f"{URL}/allocations/{CONSUMER}", **MISSING)

    client = config.client_from_cloud("test", microversion="1.39")
    client.get_allocations(CONSUMER)

    assert wire.request_history[-1].headers["X-Auth-Token"] == "from-yaml"


def test_missing_openstacksdk_is_a_missing_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openstack", None)

    with pytest.raises(config.MissingExtra, match=r"reportclient\[sdk\]"):
        config.client_from_cloud("any")


# -- OS_* environment variables ---------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch):
    """No OS_* variable from the machine running the tests."""
    import os

    for name in [name for name in os.environ if name.startswith("OS_")]:
        monkeypatch.delenv(name)
    return monkeypatch


def test_env_password_auth_with_region_and_interface(wire, clean_env):
    keystone(wire)
    for name, value in {
        "OS_AUTH_URL": AUTH_URL,
        "OS_USERNAME": "nova",
        "OS_PASSWORD": PASSWORD,
        "OS_PROJECT_NAME": "service",
        "OS_USER_DOMAIN_NAME": "Default",
        "OS_PROJECT_DOMAIN_NAME": "Default",
        "OS_REGION_NAME": "RegionOne",
        "OS_INTERFACE": "internal",
    }.items():
        clean_env.setenv(name, value)

    config.client_from_env().get_allocations(CONSUMER)

    assert placement_requests(wire) == [
        ("GET", INTERNAL, "/"),
        ("GET", INTERNAL, f"/allocations/{CONSUMER}"),
    ]


def test_env_placement_api_version_pins_the_microversion(wire, clean_env):
    clean_env.setenv("OS_AUTH_TYPE", "admin_token")
    clean_env.setenv("OS_ENDPOINT", URL)
    clean_env.setenv("OS_TOKEN", "env-token")
    clean_env.setenv("OS_PLACEMENT_API_VERSION", "1.30")
    wire.get(f"{URL}/allocations/{CONSUMER}", **MISSING)

    client = config.client_from_env()
    client.get_allocations(CONSUMER)

    assert client.microversion == "1.30"
    [request] = wire.request_history
    assert request.headers["OpenStack-API-Version"] == "placement 1.30"
    assert request.headers["X-Auth-Token"] == "env-token"


def test_env_without_auth_url_is_an_auth_error(clean_env):
    clean_env.setenv("OS_USERNAME", "nova")

    with pytest.raises(reportclient.PlacementAuthError, match="auth"):
        config.client_from_env()
