"""Placement's single-precision FLOAT columns on MariaDB, and what they do to lost answers.

MariaDB stores an inventory's ``allocation_ratio`` in a FLOAT column: 16/3 is written as
5.333333333333333 and reads back as 5.33333. A client that settles a lost answer, or decides
whether a field needs writing, by comparing what it sent with what it reads back must compare
those numbers as Placement keeps them, or every such comparison says "something else is
there": a lost non-idempotent change is then applied twice, and a reconcile rewrites the same
inventory on every run. Only MariaDB shows it (SQLite and PostgreSQL keep doubles); the
cluster fixture skips without a MariaDB server, and fails instead under
REPORTCLIENT_REQUIRE_DATABASES=1. Every read-back is raw HTTP straight to Placement.
"""

from __future__ import annotations

import dataclasses

import pytest

import reportclient as rc
from reportclient.testing import PlacementAdmin, PlacementCluster
from tests.functional._helpers import new_id
from tests.functional._lost_answers import CommitThenAct, client_over

# The races suite's ``cluster`` fixture (tests/races/conftest.py), on MariaDB alone: only
# MariaDB has the FLOAT columns. Its ``admin`` reads that cluster back.
pytestmark = [
    pytest.mark.functional,
    pytest.mark.parametrize("cluster", ["mariadb"], indirect=True),
]

RATIO = 16 / 3
#: What MariaDB's FLOAT gives back for RATIO (Placement's JSON shows it as 5.33333).
STORED = 5.33333


def test_mariadb_stores_the_allocation_ratio_in_single_precision(
    admin: PlacementAdmin,
) -> None:
    """The premise of this module: 16/3 does not read back as the double that was sent."""
    rp = admin.create_provider(inventory={"VCPU": {"total": 8, "allocation_ratio": RATIO}})

    stored = admin.inventory(rp)["VCPU"]["allocation_ratio"]

    assert stored != RATIO
    assert stored == pytest.approx(STORED, abs=1e-5)


def test_lost_inventory_add_with_a_float_ratio_is_applied_exactly_once(
    cluster: PlacementCluster, admin: PlacementAdmin
) -> None:
    """+4 VCPU, sent with the configured allocation_ratio 16/3, lands (generation 1 -> 2) and
    its answer is lost. The re-read holds generation 2 with total 12 and ratio 5.33333: exactly
    what was written, as MariaDB keeps it. Taking the ratio's rounding for another writer's
    change ("generation N+1 holding other content: the lost write can never land") would add 4
    again (total 16)."""
    rp = admin.create_provider(inventory={"VCPU": {"total": 8, "allocation_ratio": RATIO}})
    assert admin.provider(rp)["generation"] == 1
    adapter = CommitThenAct("PUT", f"/resource_providers/{rp}/inventories")
    client = client_over(cluster.url, adapter)

    def add_four(current: dict[str, rc.Inventory]) -> dict[str, rc.Inventory]:
        # As nova does: the ratio is the configured 16/3, whatever Placement shows now.
        vcpu = current["VCPU"]
        current["VCPU"] = dataclasses.replace(vcpu, total=vcpu.total + 4, allocation_ratio=RATIO)
        return current

    try:
        client.providers.update_inventories(rp, add_four)
    except rc.OutcomeUnknown:
        pass  # the client may not know; Placement must still hold the change exactly once

    assert [status for _, _, status in adapter.lost] == [200]
    inventory = admin.inventory(rp)["VCPU"]
    assert inventory["total"] == 12
    assert inventory["allocation_ratio"] == pytest.approx(STORED, abs=1e-5)
    assert admin.provider(rp)["generation"] == 2


def test_reconcile_of_a_float_ratio_twice_writes_nothing_the_second_time(
    cluster: PlacementCluster, admin: PlacementAdmin
) -> None:
    """The first reconcile creates the provider with VCPU at ratio 16/3; the second finds
    5.33333 stored, which is what Placement makes of 16/3: nothing differs, nothing is
    written, and the provider's generation stays where the first run left it."""
    client = client_over(cluster.url)
    uuid = new_id()
    spec = rc.ProviderSpec(
        uuid,
        f"cn-{uuid}",
        inventories={"VCPU": {"total": 16, "allocation_ratio": RATIO}, "MEMORY_MB": 4096},
    )

    first = client.providers.reconcile([spec])
    generation = admin.provider(uuid)["generation"]
    second = client.providers.reconcile([spec])

    assert first.written == ((uuid, "inventories"),)
    assert second.written == ()
    assert admin.provider(uuid)["generation"] == generation
    assert admin.inventory(uuid)["VCPU"]["allocation_ratio"] == pytest.approx(STORED, abs=1e-5)
