"""The races neutron-lib loses, on the real Placement: each test fails with neutron-lib's class.

Run by ``tox -e neutron`` (neutron and neutron-lib installed); the scenarios
are tests/neutron/scenarios.py's, driven through neutron's own plugins.
"""

from __future__ import annotations

import pytest

from tests.neutron import scenarios
from tests.neutron.run import run_one
from tests.neutron.world import configure

configure()


@pytest.fixture(scope="module")
def qos() -> dict[str, scenarios.Outcome]:
    return {
        kind: run_one("QoS allocation change", kind) for kind in ("neutron-lib", "reportclient")
    }


@pytest.fixture(scope="module")
def segments() -> dict[str, scenarios.Outcome]:
    return {kind: run_one("segments at 1.1", kind) for kind in ("neutron-lib", "reportclient")}


RACED = "2000 -> 3000 through 10 nova writes"


def test_qos_change_converges_through_ten_nova_writes_keeping_novas(
    qos: dict[str, scenarios.Outcome],
) -> None:
    ours = qos["reportclient"]
    held = ours.state["allocations"][scenarios.VM]
    assert ours.conclusions[RACED]["raised"] is None
    assert held[scenarios.DEVICE]["resources"]["NET_BW_EGR_KILOBIT_PER_SEC"] == 3000
    assert held[scenarios.CN]["resources"]["VCPU"] == 12  # nova's tenth write kept


def test_neutron_lib_gives_up_on_the_same_race(qos: dict[str, scenarios.Outcome]) -> None:
    lib = qos["neutron-lib"]
    assert lib.conclusions[RACED]["raised"] == "PlacementAllocationGenerationConflict"
    held = lib.state["allocations"][scenarios.VM]
    assert held[scenarios.DEVICE]["resources"]["NET_BW_EGR_KILOBIT_PER_SEC"] == 2000


def test_an_instance_deleted_mid_change_stays_deleted(qos: dict[str, scenarios.Outcome]) -> None:
    ours = qos["reportclient"]
    assert ours.conclusions["instance deleted mid-change"]["raised"] == "PlacementAllocationRemoved"
    assert scenarios.fixed("instance-2") not in ours.state["allocations"]


def test_two_servers_growing_one_segment_at_1_1_keep_both_pools(
    segments: dict[str, scenarios.Outcome],
) -> None:
    name = f"Neutron segment id {scenarios.SEGMENT}"
    ours, lib = segments["reportclient"], segments["neutron-lib"]
    assert ours.conclusions["two servers grow it at once"]["raised"] is None
    assert ours.state["providers"][name]["inventories"]["IPV4_ADDRESS"]["total"] == 50
    # neutron-lib: the second write replays its stale total (or KeyErrors on the 409).
    assert lib.state["providers"][name]["inventories"]["IPV4_ADDRESS"]["total"] != 50
