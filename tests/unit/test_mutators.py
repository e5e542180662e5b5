"""Ready-made mutators compute from the state they are given."""

from __future__ import annotations

import pytest

import reportclient
from tests.unit.conftest import new_uuid

RP1, RP2 = new_uuid(), new_uuid()


def state(allocations):
    return reportclient.ConsumerAllocations(new_uuid(), allocations, 1, "p", "u")


def test_add_sums_per_resource_class_and_adds_new_providers():
    mutate = reportclient.add_allocations({RP1: {"VCPU": 1}, RP2: {"VCPU": 2}})
    assert mutate(state({RP1: {"VCPU": 3, "MEMORY_MB": 8}})) == {
        RP1: {"VCPU": 4, "MEMORY_MB": 8},
        RP2: {"VCPU": 2},
    }


def test_add_does_not_mutate_the_state_it_reads():
    current = state({RP1: {"VCPU": 3}})
    reportclient.add_allocations({RP1: {"VCPU": 1}})(current)
    assert current.allocations == {RP1: {"VCPU": 3}}


def test_remove_providers_keeps_the_rest():
    mutate = reportclient.remove_providers([RP1])
    assert mutate(state({RP1: {"VCPU": 3}, RP2: {"DISK_GB": 1}})) == {RP2: {"DISK_GB": 1}}


def test_replace_ignores_current():
    mutate = reportclient.replace_allocations({RP2: {"VCPU": 1}})
    assert mutate(state({RP1: {"VCPU": 3}})) == {RP2: {"VCPU": 1}}


def test_mutators_validate_at_once():
    with pytest.raises(reportclient.InvalidInput):
        reportclient.add_allocations({RP1: {"VCPU": 0}})
    with pytest.raises(reportclient.InvalidInput):
        reportclient.remove_providers(["nope"])
