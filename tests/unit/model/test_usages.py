"""Usages: a provider's, and a project's or user's, typed per microversion."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

import reportclient
from reportclient.fixture import FakePlacement, make_client
from tests.support.wire import PROJECT, URL, USER, calls, new_uuid


def test_provider_usages_parse_generation_and_amounts(wire, client, rp):
    wire.get(
        f"{URL}/resource_providers/{rp}/usages",
        json={"resource_provider_generation": 4, "usages": {"VCPU": 3, "DISK_GB": 0}},
    )

    usages = client.get_provider_usages(rp)

    assert usages == reportclient.ProviderUsages(rp, 4, {"VCPU": 3, "DISK_GB": 0})


def test_project_usages_at_1_38_are_grouped_by_type_and_totalled(wire, client):
    wire.get(
        f"{URL}/usages",
        json={
            "usages": {
                "INSTANCE": {"VCPU": 4, "MEMORY_MB": 1024, "consumer_count": 2},
                "MIGRATION": {"VCPU": 1, "consumer_count": 1},
            }
        },
    )

    usages = client.get_usages(PROJECT, user_id=USER)

    assert parse_qs(urlsplit(wire.request_history[-1].url).query) == {
        "project_id": [PROJECT],
        "user_id": [USER],
    }
    assert usages.usages == {"VCPU": 5, "MEMORY_MB": 1024}
    assert usages.by_consumer_type["MIGRATION"] == reportclient.ConsumerTypeUsages(
        "MIGRATION", 1, {"VCPU": 1}
    )
    assert usages.consumer_count == 3


def test_project_usages_below_1_38_are_a_flat_total(wire):
    old = reportclient.PlacementClient.from_endpoint(URL, token="admin", microversion="1.30")
    wire.get(f"{URL}/usages", json={"usages": {"VCPU": 2}})

    usages = old.get_usages(PROJECT)

    assert usages.usages == {"VCPU": 2}
    assert usages.by_consumer_type == {} and usages.consumer_count is None


def test_consumer_type_filter_is_sent_and_checked_before_the_wire(wire, client):
    wire.get(f"{URL}/usages", json={"usages": {"all": {"VCPU": 1, "consumer_count": 1}}})

    assert client.get_usages(PROJECT, consumer_type="all").usages == {"VCPU": 1}
    assert parse_qs(urlsplit(wire.request_history[-1].url).query)["consumer_type"] == ["all"]
    with pytest.raises(reportclient.InvalidInput):
        client.get_usages(PROJECT, consumer_type="instance")
    with pytest.raises(reportclient.InvalidInput):
        client.get_usages("")
    assert len(calls(wire)) == 1


def test_consumer_type_filter_needs_1_38(wire):
    old = reportclient.PlacementClient.from_endpoint(URL, token="admin", microversion="1.37")
    with pytest.raises(reportclient.InvalidInput):
        old.get_usages(PROJECT, consumer_type="INSTANCE")
    assert calls(wire) == []


def test_fake_sums_a_projects_consumers_by_type_and_user():
    fake = FakePlacement()
    rp = fake.create_provider(inventory={"VCPU": 16})
    client = make_client(fake, microversion="1.39")
    fake.put_allocations(new_uuid(), {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    fake.put_allocations(new_uuid(), {rp: {"VCPU": 3}}, project_id=PROJECT, user_id="other")
    fake.put_allocations(
        new_uuid(), {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER, consumer_type="MIGRATION"
    )
    fake.put_allocations(new_uuid(), {rp: {"VCPU": 5}}, project_id="elsewhere", user_id=USER)

    everyone = client.get_usages(PROJECT)
    mine = client.get_usages(PROJECT, user_id=USER)
    migrations = client.get_usages(PROJECT, consumer_type="MIGRATION")

    assert everyone.usages == {"VCPU": 6}
    assert everyone.by_consumer_type["INSTANCE"].consumer_count == 2
    assert mine.usages == {"VCPU": 3}
    assert set(migrations.by_consumer_type) == {"MIGRATION"}
    assert client.get_provider_usages(rp).usages == {"VCPU": 11}


def test_fake_unknown_provider_usages_is_a_404(fake_placement):
    client = make_client(fake_placement, microversion="1.39")
    with pytest.raises(reportclient.PlacementError) as caught:
        client.get_provider_usages(new_uuid())
    assert caught.value.status == 404
