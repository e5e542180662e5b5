"""The races neutron-lib loses, on the real Placement, through neutron's own plugins.

Each improvement test fails with neutron-lib's class (its companion test
shows neutron-lib losing the same race); the instance deleted mid-change is
a regression test: neutron-lib ends the same way, and so must the drop-in.
Races are placed between a client's read and its write by the counting
Session (tests/neutron/world.py), never by timing; the drop-in's retry
policy records its backoff instead of sleeping it, so no test waits.
Run by ``tox -e neutron`` (neutron and neutron-lib installed).
"""

from __future__ import annotations

import pytest
import tenacity

from reportclient import default_retry
from tests.neutron import scenarios
from tests.neutron.run import DELETED, GROWN_AT_ONCE, RACED, SEGMENT_RP, run_one
from tests.neutron.world import configure

configure()

QOS, SEGMENTS = "QoS allocation change", "segments at 1.1"


def never_sleeps(sleeps: list[float]) -> tenacity.Retrying:
    """The production policy's shape, its waits recorded in ``sleeps`` instead of slept."""
    return default_retry(base=0.001, cap=0.01, sleep=sleeps.append)


@pytest.fixture(scope="module")
def qos_sleeps() -> list[float]:
    return []


@pytest.fixture(scope="module")
def qos(qos_sleeps: list[float]) -> dict[str, scenarios.Outcome]:
    return {
        "neutron-lib": run_one(QOS, "neutron-lib"),
        "reportclient": run_one(QOS, "reportclient", never_sleeps(qos_sleeps)),
    }


@pytest.fixture(scope="module")
def segments() -> dict[str, scenarios.Outcome]:
    return {
        "neutron-lib": run_one(SEGMENTS, "neutron-lib"),
        "reportclient": run_one(SEGMENTS, "reportclient", never_sleeps([])),
    }


def test_qos_change_converges_through_ten_nova_writes_keeping_novas(
    qos: dict[str, scenarios.Outcome],
) -> None:
    ours = qos["reportclient"]
    held = ours.state["allocations"][scenarios.VM]
    assert ours.conclusions[RACED]["raised"] is None
    assert held[scenarios.DEVICE]["resources"]["NET_BW_EGR_KILOBIT_PER_SEC"] == 3000
    assert held[scenarios.CN]["resources"]["VCPU"] == 12  # nova's tenth write kept


def test_the_qos_change_backs_off_once_per_conflict_without_sleeping(
    qos: dict[str, scenarios.Outcome], qos_sleeps: list[float]
) -> None:
    # Ten conflicts in the race, one in the deleted instance's change: each
    # retry waited (recorded, not slept) under the policy's backoff.
    assert len(qos_sleeps) == 11
    assert all(delay >= 0 for delay in qos_sleeps)


def test_neutron_lib_gives_up_on_the_same_race(qos: dict[str, scenarios.Outcome]) -> None:
    lib = qos["neutron-lib"]
    assert lib.conclusions[RACED]["raised"] == "PlacementAllocationGenerationConflict"
    held = lib.state["allocations"][scenarios.VM]
    assert held[scenarios.DEVICE]["resources"]["NET_BW_EGR_KILOBIT_PER_SEC"] == 2000


def test_regression_an_instance_deleted_mid_change_stays_deleted_as_with_neutron_lib(
    qos: dict[str, scenarios.Outcome],
) -> None:
    """Not an improvement: neutron-lib gets a 409, re-reads, finds it gone and raises the same."""
    gone = scenarios.fixed("instance-2")
    for side in qos.values():
        assert side.conclusions[DELETED]["raised"] == "PlacementAllocationRemoved"
        assert gone not in side.state["allocations"]
    assert qos["reportclient"].requests[DELETED] == qos["neutron-lib"].requests[DELETED]


def test_every_qos_request_goes_at_the_version_neutron_gave(
    qos: dict[str, scenarios.Outcome],
) -> None:
    for phase, versions in qos["reportclient"].versions.items():
        assert versions == {"placement 1.37"}, phase


def test_two_servers_growing_one_segment_at_1_1_keep_both_pools(
    segments: dict[str, scenarios.Outcome],
) -> None:
    ours = segments["reportclient"]
    assert ours.conclusions[GROWN_AT_ONCE]["raised"] is None
    assert ours.state["providers"][SEGMENT_RP]["inventories"]["IPV4_ADDRESS"]["total"] == 50


def test_neutron_lib_loses_a_pool_in_the_same_segment_race(
    segments: dict[str, scenarios.Outcome],
) -> None:
    lib = segments["neutron-lib"]
    # The 409 at 1.1 has no code: neutron-lib's retry reads errors[0]['code'].
    assert lib.conclusions[GROWN_AT_ONCE]["raised"] == "KeyError"
    assert lib.state["providers"][SEGMENT_RP]["inventories"]["IPV4_ADDRESS"]["total"] == 45


def test_every_segments_request_goes_at_1_1(segments: dict[str, scenarios.Outcome]) -> None:
    for phase, versions in segments["reportclient"].versions.items():
        assert versions == {"placement 1.1"}, phase
