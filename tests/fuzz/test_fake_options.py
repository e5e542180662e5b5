"""The fake's public knobs: candidate order, policy mode, and Location when served as WSGI."""

from __future__ import annotations

import json
from typing import Any

import pytest
import webob

from reportclient.fixture import FakePlacement

_QUERY = "/allocation_candidates?resources=VCPU:1"


def _fake_with_providers(n: int = 6, **options: Any) -> FakePlacement:
    fake = FakePlacement(**options)
    for i in range(n):
        fake.create_provider(name=f"rp-{i}", inventory={"VCPU": 4})
    return fake


def _get(fake: FakePlacement, path: str, **headers: str) -> webob.Response:
    send = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39", **headers}
    return webob.Request.blank(path, headers=send).get_response(fake.wsgi_app())


def _order(fake: FakePlacement, query: str = _QUERY) -> list[str]:
    doc = json.loads(_get(fake, query).body)
    return [next(iter(areq["allocations"])) for areq in doc["allocation_requests"]]


def test_shuffled_candidates_change_order_between_requests() -> None:
    fake = _fake_with_providers()
    orders = {tuple(_order(fake)) for _ in range(10)}
    assert len(orders) > 1
    assert all(sorted(order) == sorted(next(iter(orders))) for order in orders)


def test_the_same_seed_replays_the_same_orders() -> None:
    first = _fake_with_providers(seed=7)
    again = FakePlacement(seed=7)
    # Same providers (same uuids), so the same seed must give the same sequence.
    for rp in first._state.provider_uuids():
        again.create_provider(name=f"x-{rp}", uuid=rp, inventory={"VCPU": 4})
    assert [_order(first) for _ in range(3)] == [_order(again) for _ in range(3)]


def test_a_drawn_seed_is_reported() -> None:
    assert isinstance(FakePlacement().seed, int)


def test_limit_keeps_different_candidates_when_shuffled() -> None:
    fake = _fake_with_providers()
    kept = {tuple(_order(fake, _QUERY + "&limit=2")) for _ in range(10)}
    assert all(len(k) == 2 for k in kept)
    assert len({rp for k in kept for rp in k}) > 2


def test_stable_order_is_the_same_every_time() -> None:
    fake = _fake_with_providers(candidate_order="stable")
    assert len({tuple(_order(fake)) for _ in range(5)}) == 1


@pytest.mark.parametrize(("policy", "status"), [("new-defaults", 403), ("legacy", 400)])
def test_policy_mode_decides_whether_admin_may_reshape(policy: str, status: int) -> None:
    fake = FakePlacement(policy=policy)
    request = webob.Request.blank(
        "/reshaper",
        method="POST",
        headers={"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"},
        content_type="application/json",
        body=b"{}",
    )
    assert request.get_response(fake.wsgi_app()).status_int == status


def test_open_policy_lets_any_user_in() -> None:
    fake = FakePlacement(policy="open")
    assert _get(fake, "/resource_providers", **{"X-Auth-Token": "alice"}).status_int == 200
    assert (
        _get(FakePlacement(), "/resource_providers", **{"X-Auth-Token": "alice"}).status_int == 403
    )


def test_unknown_modes_are_refused() -> None:
    with pytest.raises(ValueError, match="policy"):
        FakePlacement(policy="closed")
    with pytest.raises(ValueError, match="candidate_order"):
        FakePlacement(candidate_order="sorted")


def test_location_served_as_wsgi_names_the_request_host() -> None:
    fake = FakePlacement(base_url="http://configured.example/placement")
    request = webob.Request.blank(
        "/resource_classes/CUSTOM_X",
        method="PUT",
        headers={"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"},
        environ={"HTTP_HOST": "api.example:8778", "SCRIPT_NAME": "/placement"},
    )
    response = request.get_response(fake.wsgi_app())
    assert response.status_int == 201
    assert (
        response.headers["location"]
        == "http://api.example:8778/placement/resource_classes/CUSTOM_X"
    )
