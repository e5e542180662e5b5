"""Usages against the real Placement: a provider's, and a project's by user and type."""

from __future__ import annotations

import reportclient
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import USER, Real, make_client, new_id, raw_body


def test_provider_usages_count_every_consumer(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    rp = placement_admin.create_provider(inventory={"VCPU": {"total": 8}, "DISK_GB": {"total": 10}})
    placement_admin.put_allocations(new_id(), raw_body({rp: {"VCPU": 2}}, None))
    placement_admin.put_allocations(new_id(), raw_body({rp: {"VCPU": 1}}, None))
    client = make_client(real_placement)

    usages = client.get_provider_usages(rp)

    assert usages.usages == {"VCPU": 3, "DISK_GB": 0}
    assert usages.generation == placement_admin.provider(rp)["generation"]


def test_project_usages_by_user_and_consumer_type(real: Real) -> None:
    project = f"project-{new_id()}"
    for amounts, user, ctype in (
        ({"VCPU": 2}, USER, "INSTANCE"),
        ({"VCPU": 3}, "someone-else", "INSTANCE"),
        ({"VCPU": 1}, USER, "MIGRATION"),
    ):
        body = raw_body({real.node: amounts}, None, project_id=project, user_id=user)
        body["consumer_type"] = ctype
        assert real.admin.put_allocations(new_id(), body).status_code == 204
    client = real.client()

    everyone = client.get_usages(project)
    mine = client.get_usages(project, user_id=USER)
    migrations = client.get_usages(project, consumer_type="MIGRATION")
    together = client.get_usages(project, consumer_type="all")

    assert everyone.usages == {"VCPU": 6}
    assert everyone.by_consumer_type["INSTANCE"] == reportclient.ConsumerTypeUsages(
        "INSTANCE", 2, {"VCPU": 5}
    )
    assert mine.usages == {"VCPU": 3}
    assert set(migrations.by_consumer_type) == {"MIGRATION"}
    assert together.by_consumer_type["all"].consumer_count == 3


def test_project_usages_below_1_38_are_one_total(real: Real) -> None:
    project = f"project-{new_id()}"
    body = raw_body({real.node: {"VCPU": 2}}, None, project_id=project)
    assert real.admin.put_allocations(new_id(), body).status_code == 204
    client = real.client(microversion="1.37")

    usages = client.get_usages(project)

    assert usages == reportclient.ProjectUsages(project, None, {"VCPU": 2})
