"""A [placement] section shared with neutron, cyborg or nova, against the real Placement.

Each service registers its own options first, as it does at startup; the
client is then built from the same ConfigOpts. Every bad configuration is
refused with a typed error before Keystone or Placement sees a request.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from reportclient import InvalidInput, PlacementAuthError, PlacementError, PlacementUnavailable
from reportclient.config import client_from_conf
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import Real, claim, new_id, wire
from tests.functional._identity import IdentityStub, identity_stub
from tests.functional.test_config import claim_and_check, password_section
from tests.support.neighbours import NEIGHBOURS, conf_after

pytest.importorskip("oslo_config.cfg")


def section(tmp_path: Path, body: str) -> str:
    path = tmp_path / "service.conf"
    path.write_text(f"[placement]\n{body}\n")
    return str(path)


def closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("service", sorted(NEIGHBOURS))
def test_a_client_from_a_services_placement_section_claims_through_the_catalog(
    service: str,
    real: Real,
    keystone: IdentityStub,
    tmp_path: Path,
) -> None:
    conf = conf_after(service, section(tmp_path, password_section(keystone) + "cache_ttl = 60"))
    client = client_from_conf(conf)
    real.placement.clear_requests_seen()

    consumer, sent = claim_and_check(client, real)

    assert ("POST", "/v3/auth/tokens") in keystone.seen
    assert sent == [("GET", "/", 200), ("PUT", f"/allocations/{consumer}", 204)]
    assert conf.placement.region_name == "RegionOne"


def test_neutrons_endpoint_type_internal_picks_the_internal_endpoint(
    real: Real,
    keystone: IdentityStub,
    tmp_path: Path,
) -> None:
    body = password_section(keystone) + "endpoint_type = internal"
    client = client_from_conf(conf_after("neutron", section(tmp_path, body)))

    claim_and_check(client, real)

    assert client._core.transport._adapter.interface == ["internal"]


@pytest.mark.parametrize(
    ("body", "error", "named"),
    [
        ("", PlacementAuthError, "auth_type is not set"),
        ("auth_type = password\nusername = admin", PlacementAuthError, "auth_url"),
        ("auth_type = no-such-plugin", PlacementAuthError, "no-such-plugin"),
        ("{password}valid_interfaces = bogus", InvalidInput, "'bogus' is not an interface"),
        ("{password}cache_ttl = -1", InvalidInput, "cache_ttl"),
        ("{password}microversion = 1.7", InvalidInput, "1.7"),
        ("{password}pool_size = 0", InvalidInput, "pool_size"),
    ],
)
@pytest.mark.parametrize("service", sorted(NEIGHBOURS))
def test_each_bad_configuration_is_a_typed_error_before_any_request(
    service: str,
    body: str,
    error: type[PlacementError],
    named: str,
    real_placement: EmbeddedPlacement,
    keystone: IdentityStub,
    tmp_path: Path,
) -> None:
    conf = conf_after(service, section(tmp_path, body.format(password=password_section(keystone))))
    real_placement.clear_requests_seen()

    with pytest.raises(error) as caught:
        client_from_conf(conf)

    assert named in str(caught.value)
    assert "Request" not in str(caught.value)
    assert keystone.seen == []
    assert wire(real_placement) == []


def test_keystone_unreachable_says_keystone_and_that_placement_saw_nothing(
    real_placement: EmbeddedPlacement, compute_node: str, keystone: IdentityStub, tmp_path: Path
) -> None:
    dead = closed_port()
    body = password_section(keystone).replace(keystone.url, dead) + "retry_attempts = 1"
    client = client_from_conf(conf_after("nova", section(tmp_path, body)))
    real_placement.clear_requests_seen()

    with pytest.raises(PlacementUnavailable) as caught:
        claim(client, new_id(), {compute_node: {"VCPU": 1}})

    assert f"could not reach Keystone at {dead}" in str(caught.value)
    assert caught.value.outcome_unknown is False
    assert wire(real_placement) == []


def test_placement_unreachable_says_placement_after_keystone_answered(
    keystone: IdentityStub, compute_node: str, tmp_path: Path
) -> None:
    dead = closed_port()
    with identity_stub(dead) as misdirected:
        body = password_section(misdirected) + "retry_attempts = 1\nmicroversion = 1.39"
        client = client_from_conf(conf_after("nova", section(tmp_path, body)))

        with pytest.raises(PlacementUnavailable) as caught:
            client.get_allocations(new_id())

    assert "could not connect to Placement" in str(caught.value)
    assert "Keystone" not in str(caught.value)
    assert ("POST", "/v3/auth/tokens") in misdirected.seen
