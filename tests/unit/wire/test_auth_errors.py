"""keystoneauth1's auth, catalog and discovery failures become typed reportclient errors."""

from __future__ import annotations

from typing import Any

import pytest
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from keystoneauth1.identity import v3

import reportclient
from tests.support.answers import MISSING
from tests.support.wire import PROJECT, URL, USER

AUTH_URL = "http://keystone.test/v3"
PASSWORD = "never-print-this-password"  # asserted absent from what is raised
CONSUMER = "6f1c1a3e-5b7d-4c2e-9a4f-0d2b8e1c7a55"
RP = "a95cd08a-5b57-4cbb-8d04-7db42f41d4fb"


def password_client(**adapter_kwargs: Any) -> reportclient.PlacementClient:
    auth = v3.Password(
        auth_url=AUTH_URL,
        username="nova",
        password=PASSWORD,
        project_name="service",
        user_domain_name="Default",
        project_domain_name="Default",
    )
    session = ks_session.Session(auth=auth, timeout=10)
    return reportclient.PlacementClient.from_session(session, **adapter_kwargs)


def catalog(wire: Any, region: str = "RegionOne") -> None:
    token = ks_fixture.V3Token()
    token.add_service("placement").add_standard_endpoints(public=URL, region=region)
    wire.post(AUTH_URL + "/auth/tokens", json=token, headers={"X-Subject-Token": "tok"})


def everything_reachable(exc: BaseException) -> list[Any]:
    """The exception, its chain, and the attributes of each."""
    found: list[Any] = []
    item: BaseException | None = exc
    while item is not None:
        found.extend([item, *vars(item).values()])
        item = item.__cause__ or item.__context__
    return found


def assert_no_password(exc: BaseException) -> None:
    for item in everything_reachable(exc):
        assert PASSWORD not in str(item) and PASSWORD not in repr(item), item


def test_credentials_refused_by_keystone_are_an_auth_error_caused_by_unauthorized(wire):
    wire.post(
        AUTH_URL + "/auth/tokens",
        status_code=401,
        json={"error": {"code": 401, "title": "Unauthorized", "message": "bad credentials"}},
        headers={"x-openstack-request-id": "req-keystone"},
    )
    client = password_client(microversion="1.39")

    with pytest.raises(reportclient.PlacementAuthError) as err:
        client.get_allocations(CONSUMER)

    cause = err.value.__cause__
    assert isinstance(cause, ks_exc.Unauthorized)
    assert cause.http_status == 401
    assert cause.request_id == "req-keystone"
    assert not hasattr(cause, "response")  # it held the request with the password
    assert "authentication failed: Unauthorized" in str(err.value)
    assert_no_password(err.value)
    assert [r.netloc for r in wire.request_history] == ["keystone.test"]


@pytest.mark.parametrize("status", [403, 404])
def test_any_other_refusal_of_the_token_request_is_an_auth_error(wire, status):
    # A 4xx to the token request is a configuration problem (scope, auth_url).
    wire.post(AUTH_URL + "/auth/tokens", status_code=status, json={"error": {"code": status}})
    client = password_client(microversion="1.39")

    with pytest.raises(reportclient.PlacementAuthError) as err:
        client.get_allocations(CONSUMER)

    assert err.value.__cause__.http_status == status
    assert_no_password(err.value)


def test_credentials_refused_while_negotiating_are_an_auth_error_too(wire):
    wire.post(AUTH_URL + "/auth/tokens", status_code=401, json={"error": {"code": 401}})
    client = password_client()

    with pytest.raises(reportclient.PlacementAuthError) as err:
        _ = client.microversion

    assert isinstance(err.value.__cause__, ks_exc.Unauthorized)
    assert (err.value.method, err.value.url) == ("GET", "/")
    assert_no_password(err.value)


def test_placement_missing_from_the_catalog_is_an_endpoint_error(wire):
    catalog(wire, region="RegionOne")
    client = password_client(region_name="RegionTwo", microversion="1.39")

    with pytest.raises(reportclient.PlacementEndpointError) as err:
        client.get_allocations(CONSUMER)

    assert isinstance(err.value.__cause__, ks_exc.EndpointNotFound)
    assert "no Placement endpoint: EndpointNotFound" in str(err.value)
    assert all(r.netloc == "keystone.test" for r in wire.request_history)


def test_endpoint_in_another_region_found_while_negotiating_is_an_endpoint_error(wire):
    catalog(wire, region="RegionOne")
    client = password_client(region_name="RegionTwo")

    with pytest.raises(reportclient.PlacementEndpointError) as err:
        _ = client.microversion

    assert isinstance(err.value.__cause__, ks_exc.EndpointNotFound)


def test_no_auth_plugin_and_no_endpoint_is_an_auth_error_caused_by_missing_auth_plugin(wire):
    client = reportclient.PlacementClient.from_session(
        ks_session.Session(timeout=10), microversion="1.39"
    )

    with pytest.raises(reportclient.PlacementAuthError) as err:
        client.get_allocations(CONSUMER)

    assert isinstance(err.value.__cause__, ks_exc.MissingAuthPlugin)
    assert wire.request_history == []


class UndiscoverableEndpoint(token_endpoint.Token):
    """An auth plugin whose endpoint lookup fails in version discovery."""

    def get_endpoint(self, session: Any, **kwargs: Any) -> str | None:
        raise ks_exc.DiscoveryFailure("no version of placement between 2.0 and 2.latest")


def test_discovery_failure_finding_the_endpoint_is_an_endpoint_error(wire):
    session = ks_session.Session(auth=UndiscoverableEndpoint(URL, "t"), timeout=10)
    client = reportclient.PlacementClient(
        ks_adapter.Adapter(session, service_type="placement"), microversion="1.39"
    )

    with pytest.raises(reportclient.PlacementEndpointError) as err:
        client.get_allocations(CONSUMER)

    assert isinstance(err.value.__cause__, ks_exc.DiscoveryFailure)
    assert "between 2.0 and 2.latest" in str(err.value)


def test_a_401_from_placement_is_an_auth_error_with_placements_words(wire):
    wire.get(
        f"{URL}/allocations/{CONSUMER}",
        status_code=401,
        json={"title": "Unauthorized", "message": "This server could not verify that you are"},
    )
    client = reportclient.PlacementClient.from_endpoint(URL, "t", microversion="1.39")

    with pytest.raises(reportclient.PlacementAuthError) as err:
        client.get_allocations(CONSUMER)

    assert err.value.status == 401
    assert err.value.__cause__ is None


def test_auth_and_endpoint_errors_are_placement_errors_but_not_unavailability():
    for cls in (reportclient.PlacementAuthError, reportclient.PlacementEndpointError):
        assert issubclass(cls, reportclient.PlacementError)
        assert not issubclass(cls, reportclient.PlacementUnavailable)


def test_an_auth_error_is_not_retried(wire, sleeps):
    wire.post(AUTH_URL + "/auth/tokens", status_code=401, json={"error": {"code": 401}})
    client = password_client(microversion="1.39")

    with pytest.raises(reportclient.PlacementAuthError):
        client.claim(CONSUMER, {RP: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    assert len(wire.request_history) == 1


def test_password_works_once_keystone_accepts_it(wire):
    catalog(wire)
    wire.get(f"{URL}/allocations/{CONSUMER}", **MISSING)

    state = password_client(microversion="1.39").get_allocations(CONSUMER)

    assert state.exists is False
    assert wire.request_history[-1].headers["X-Auth-Token"] == "tok"
