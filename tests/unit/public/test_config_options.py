"""reportclient.config beside nova's, cyborg's and neutron's [placement], and its own options."""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any

import pytest
import requests_mock

import reportclient
from reportclient import config
from reportclient.fixture import FakePlacement
from tests.support.answers import MISSING, consumer_conflict
from tests.support.neighbours import NEIGHBOURS, conf_after
from tests.support.wire import URL
from tests.unit.public.test_config import (
    CONSUMER,
    INTERNAL,
    PASSWORD_CONF,
    PUBLIC,
    keystone,
    make_conf,
    placement_requests,
)

oslo_cfg = pytest.importorskip("oslo_config.cfg")

ADMIN_TOKEN_CONF = f"auth_type = admin_token\nendpoint = {URL}\ntoken = admin\n"
RP = "a" * 8 + "-1111-4111-8111-" + "1" * 12


def conf_file(tmp_path: Path, body: str) -> str:
    path = tmp_path / "service.conf"
    path.write_text(f"[placement]\n{body}\n")
    return str(path)


# -- beside the neighbours ----------------------------------------------------------------------


@pytest.mark.parametrize("service", sorted(NEIGHBOURS))
def test_registering_after_a_service_that_registered_its_placement_options_is_harmless(
    service, tmp_path
):
    conf = conf_after(service, conf_file(tmp_path, "region_name = RegionOne"))

    config.register_opts(conf)
    config.register_opts(conf)

    assert conf.placement.region_name == "RegionOne"
    assert conf.placement.cache_ttl == reportclient.DEFAULT_CACHE_TTL


@pytest.mark.parametrize("service", sorted(NEIGHBOURS))
def test_a_client_from_a_services_placement_section_uses_its_internal_endpoint(
    service, wire, tmp_path
):
    keystone(wire)
    conf = conf_after(service, conf_file(tmp_path, PASSWORD_CONF + "region_name = RegionOne"))

    config.client_from_conf(conf, microversion="1.39").get_allocations(CONSUMER)

    assert placement_requests(wire) == [("GET", INTERNAL, f"/allocations/{CONSUMER}")]


def test_the_neighbours_own_options_keep_their_values(tmp_path):
    conf = conf_after(
        "nova", conf_file(tmp_path, ADMIN_TOKEN_CONF + "randomize_allocation_candidates = true")
    )

    config.client_from_conf(conf)

    assert conf.placement.randomize_allocation_candidates is True
    assert conf.placement.valid_interfaces == ["internal", "public"]


@pytest.mark.parametrize(
    ("section", "endpoint"),
    [
        ("endpoint_type = internal", INTERNAL),
        ("endpoint_type = public", PUBLIC),
        ("endpoint_type = public\nvalid_interfaces = internal", INTERNAL),
        ("", INTERNAL),  # neutron's default (public) is not a choice the operator made
    ],
)
def test_neutrons_endpoint_type_stands_for_valid_interfaces(section, endpoint, wire, tmp_path):
    keystone(wire)
    body = PASSWORD_CONF + "region_name = RegionOne\n" + section
    conf = conf_after("neutron", conf_file(tmp_path, body))

    config.client_from_conf(conf, microversion="1.39").get_allocations(CONSUMER)

    assert placement_requests(wire) == [("GET", endpoint, f"/allocations/{CONSUMER}")]


def test_an_option_another_project_defined_with_another_type_is_left_alone(tmp_path, caplog):
    conf = oslo_cfg.ConfigOpts()
    conf.register_opt(oslo_cfg.StrOpt("cache_ttl", help="theirs"), group="placement")
    conf(
        [],
        project="svc",
        default_config_files=[conf_file(tmp_path, ADMIN_TOKEN_CONF + "cache_ttl = forever")],
    )

    config.register_opts(conf)
    with caplog.at_level(logging.WARNING, logger="reportclient.config"):
        config.client_from_conf(conf)

    assert conf.placement.cache_ttl == "forever"
    [record] = caplog.records
    assert record.name == "reportclient.config"
    assert "cache_ttl belongs to another project" in record.getMessage()


# -- reportclient's own options -----------------------------------------------------------------


def test_own_options_shape_the_client(tmp_path, wire):
    conf = make_conf(
        tmp_path,
        ADMIN_TOKEN_CONF
        + "microversion = 1.30\ncache_size = 7\nconnect_timeout = 2\nread_timeout = 9\n"
        "pool_size = 3\nretry_attempts = 2\nretry_backoff_base = 0\n",
    )
    wire.get(f"{URL}/allocations/{CONSUMER}", **MISSING)
    wire.put(f"{URL}/allocations/{CONSUMER}", [consumer_conflict("1", "None")] * 3)

    client = config.client_from_conf(conf)
    with pytest.raises(reportclient.GenerationConflict) as conflict:
        client.claim(CONSUMER, {RP: {"VCPU": 1}}, project_id="p", user_id="u")

    assert client.microversion == "1.30"
    assert client.cache_stats().maxsize == 7
    session = client._core.transport._adapter.session.session
    assert {prefix: a._pool_maxsize for prefix, a in session.adapters.items()} == {
        "http://": 3,
        "https://": 3,
    }
    assert conflict.value.attempts == 2
    assert {r.timeout for r in wire.request_history} == {(2.0, 9.0)}


def test_cache_ttl_lets_an_update_write_without_reading_first(tmp_path):
    fake = FakePlacement()
    rp = fake.create_provider(inventory={"VCPU": 8})
    conf = make_conf(
        tmp_path, f"auth_type = admin_token\nendpoint = {fake.url}\ntoken = admin\ncache_ttl = 60"
    )
    with fake.intercept():
        client = config.client_from_conf(conf, microversion="1.39")
        client.claim(CONSUMER, {rp: {"VCPU": 1}}, project_id="p", user_id="u")
        fake.reset_requests()
        client.update_allocations(
            CONSUMER, reportclient.add_allocations({rp: {"VCPU": 1}}), project_id="p", user_id="u"
        )

    assert [r.method for r in fake.requests] == ["PUT"]


def test_keyword_arguments_win_over_options(tmp_path, wire):
    conf = make_conf(tmp_path, ADMIN_TOKEN_CONF + "microversion = 1.30\ncache_size = 7")

    client = config.client_from_conf(conf, microversion="1.39", cache_size=5)

    assert client.microversion == "1.39"
    assert client.cache_stats().maxsize == 5


def test_a_misspelt_keyword_is_a_type_error(tmp_path):
    conf = make_conf(tmp_path, ADMIN_TOKEN_CONF)

    with pytest.raises(TypeError, match="cache_tll"):
        config.client_from_conf(conf, cache_tll=60)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "builder", [config.client_from_conf, config.client_from_cloud, config.client_from_env]
)
def test_builders_take_the_typed_settings_and_nothing_else(builder, tmp_path):
    """The shared keywords are declared once (ClientSettings), typed, and checked at run time."""
    params = inspect.signature(builder).parameters.values()
    var = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    args = (make_conf(tmp_path, ADMIN_TOKEN_CONF),) if builder is config.client_from_conf else ()

    assert len(var) == 1
    assert str(var[0].annotation) == "Unpack[ClientSettings]"
    with pytest.raises(TypeError, match="cache_tll"):
        builder(*args, cache_tll=60)


def test_list_opts_documents_reportclients_own_options_with_help():
    [(_, opts)] = config.list_opts()
    own = {opt.dest: opt for opt in opts}

    for name in (
        "cache_ttl",
        "cache_size",
        "retry_attempts",
        "retry_deadline",
        "retry_backoff_base",
        "retry_backoff_cap",
        "microversion",
        "pool_size",
        "connect_timeout",
        "read_timeout",
    ):
        assert own[name].help, name
    assert own["retry_attempts"].default == 12


def test_the_sample_config_holds_the_own_options(sample_conf):
    sample = sample_conf
    assert "#cache_ttl = 0.0" in sample
    assert "#retry_attempts = 12" in sample
    assert "#read_timeout = <None>" in sample


# -- configuration errors: typed, and raised before any request ---------------------------------


def refused_before_any_request(wire: requests_mock.Mocker, conf: Any) -> Exception:
    with pytest.raises(reportclient.PlacementError) as caught:
        config.client_from_conf(conf)
    assert wire.call_count == 0
    return caught.value


def test_an_empty_section_is_an_auth_error_naming_auth_type(wire, tmp_path):
    error = refused_before_any_request(wire, make_conf(tmp_path, ""))

    assert isinstance(error, reportclient.PlacementAuthError)
    assert str(error).startswith("[placement] configures no authentication (auth_type is not set)")
    assert "auth_url" in str(error)


def test_an_auth_section_without_auth_names_that_section(wire, tmp_path):
    path = tmp_path / "service.conf"
    path.write_text("[placement]\nauth_section = keystone_authtoken\n[keystone_authtoken]\n")
    conf = oslo_cfg.ConfigOpts()
    conf([], project="svc", default_config_files=[str(path)])
    oslo_cfg.ConfigOpts.register_group(conf, oslo_cfg.OptGroup("keystone_authtoken"))
    config.register_opts(conf)
    from keystoneauth1 import loading

    loading.register_auth_conf_options(conf, "keystone_authtoken")

    error = refused_before_any_request(wire, conf)

    assert isinstance(error, reportclient.PlacementAuthError)
    assert "[keystone_authtoken] configures no authentication" in str(error)


def test_a_password_plugin_without_auth_url_is_an_auth_error(wire, tmp_path):
    error = refused_before_any_request(
        wire, make_conf(tmp_path, "auth_type = password\nusername = nova")
    )

    assert isinstance(error, reportclient.PlacementAuthError)
    assert "auth_url" in str(error)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("valid_interfaces = bogus", "'bogus' is not an interface"),
        ("valid_interfaces = internal,bogus", "'bogus' is not an interface"),
        ("cache_ttl = -1", "cache_ttl"),
        ("retry_attempts = 0", "retry_attempts"),
        ("pool_size = 0", "pool_size"),
        ("microversion = 1.99", "1.99"),
        ("read_timeout = 0", "timeout"),
        ("version = 1\nmin_version = 1", "mutually exclusive"),
    ],
)
def test_an_unusable_value_is_invalid_input_naming_it(body, named, wire, tmp_path):
    error = refused_before_any_request(wire, make_conf(tmp_path, ADMIN_TOKEN_CONF + body))

    assert isinstance(error, reportclient.InvalidInput)
    assert named in str(error)
    assert str(error).startswith("Refused locally, before any request: ")


def test_neutrons_endpoint_type_is_checked_by_neutrons_own_choices(wire, tmp_path):
    conf = conf_after("neutron", conf_file(tmp_path, ADMIN_TOKEN_CONF + "endpoint_type = bogus"))

    error = refused_before_any_request(wire, conf)

    assert isinstance(error, reportclient.InvalidInput)
    assert "endpoint_type" in str(error)
