"""Ready-made mutators compute from the state they are given."""

from __future__ import annotations

import pytest

import reportclient
from tests.support.wire import new_uuid

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


def test_add_is_not_idempotent():
    mutate = reportclient.add_allocations({RP1: {"VCPU": 1}})
    assert mutate.idempotent is False
    assert reportclient.is_idempotent(mutate) is False
    once = mutate(state({}))
    assert mutate(state(once)) != once


def test_replace_is_idempotent():
    mutate = reportclient.replace_allocations({RP1: {"VCPU": 1}})
    assert reportclient.is_idempotent(mutate) is True
    once = mutate(state({RP2: {"VCPU": 5}}))
    assert mutate(state(once)) == once


def test_remove_providers_is_idempotent():
    mutate = reportclient.remove_providers([RP1])
    assert reportclient.is_idempotent(mutate) is True
    once = mutate(state({RP1: {"VCPU": 3}, RP2: {"DISK_GB": 1}}))
    assert mutate(state(once)) == once


def test_an_undeclared_custom_mutate_is_taken_as_not_idempotent():
    def keep(current):
        return current.allocations

    assert reportclient.is_idempotent(keep) is False


def test_idempotent_declares_a_custom_mutate_and_keeps_its_result():
    @reportclient.idempotent
    def only_rp2(current):
        return {rp: res for rp, res in current.allocations.items() if rp == RP2}

    assert isinstance(only_rp2, reportclient.Mutation)
    assert reportclient.is_idempotent(only_rp2) is True
    assert only_rp2(state({RP1: {"VCPU": 3}, RP2: {"DISK_GB": 1}})) == {RP2: {"DISK_GB": 1}}
    assert "only_rp2" in repr(only_rp2)
    assert "(idempotent)" in repr(only_rp2)


def test_is_idempotent_needs_exactly_true():
    class Declared:
        idempotent = True

        def __call__(self, current):
            return {}

    class Truthy(Declared):
        idempotent = "yes"

    assert reportclient.is_idempotent(Declared()) is True
    assert reportclient.is_idempotent(Truthy()) is False


def test_mutators_normalise_provider_uuids_to_lower_case():
    upper = RP1.upper()
    assert reportclient.replace_allocations({upper: {"VCPU": 1}})(state({})) == {RP1: {"VCPU": 1}}
    assert reportclient.remove_providers([upper])(state({RP1: {"VCPU": 1}})) == {}
