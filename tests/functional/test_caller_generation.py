"""A caller's own provider generation on the real Placement: one write, its conflict raised."""

from __future__ import annotations

import pytest

import reportclient
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import make_client, new_id


def test_a_stale_caller_generation_is_placements_conflict_and_nothing_changes(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    providers = make_client(real_placement).providers
    rp = providers.create_provider(new_id()).uuid
    read = providers.get_traits(rp).generation
    agg = new_id()
    providers.add_aggregates(rp, [agg])  # another writer moves the generation on
    with pytest.raises(reportclient.GenerationConflict) as caught:
        providers.set_traits(rp, ["HW_CPU_X86_AVX2"], generation=read)
    assert caught.value.code == "placement.concurrent_update"
    assert caught.value.attempts == 1
    assert placement_admin.request("GET", f"/resource_providers/{rp}/traits").json()["traits"] == []
    with pytest.raises(reportclient.GenerationConflict):
        providers.set_inventories(rp, {"VCPU": 4}, generation=read)
    with pytest.raises(reportclient.GenerationConflict):
        providers.set_aggregates(rp, [], generation=read)
    assert providers.get_aggregates(rp).aggregates == {agg}


def test_the_current_generation_writes_each_field_once(real_placement: EmbeddedPlacement) -> None:
    providers = make_client(real_placement).providers
    rp = providers.create_provider(new_id()).uuid
    inventories = providers.set_inventories(rp, {"VCPU": 4}, generation=0)
    traits = providers.set_traits(rp, ["HW_CPU_X86_AVX2"], generation=inventories.generation)
    aggregates = providers.set_aggregates(rp, [new_id()], generation=traits.generation)
    assert (inventories.generation, traits.generation, aggregates.generation) == (1, 2, 3)
