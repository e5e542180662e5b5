"""``set_*(generation=...)`` on provider fields: one compare-and-swap, as nova's calls are."""

from __future__ import annotations

import uuid

import pytest

import reportclient
from reportclient import Inventory
from reportclient._clients.providers import ProviderClient
from reportclient.fixture import FakeClock, FakePlacement, make_client


@pytest.fixture
def fake() -> FakePlacement:
    return FakePlacement()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def providers(fake: FakePlacement, sleeps: list[float]) -> ProviderClient:
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    return make_client(fake, microversion="1.39", retry=policy, clock=FakeClock()).providers


@pytest.fixture
def rp(fake: FakePlacement) -> str:
    return fake.create_provider(inventory={"VCPU": 8})


def wire(fake: FakePlacement) -> list[tuple[str, str, int]]:
    return [(r.method, r.path.rsplit("/", 1)[-1], r.status) for r in fake.requests]


def test_set_traits_at_the_current_generation_is_one_put_and_no_read(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    generation = fake.provider_generation(rp)
    result = providers.set_traits(rp, ["HW_CPU_X86_AVX2"], generation=generation)
    assert result.traits == {"HW_CPU_X86_AVX2"}
    assert result.generation == generation + 1
    assert wire(fake) == [("PUT", "traits", 200)]


def test_set_aggregates_at_a_stale_generation_raises_and_is_not_retried(
    providers: ProviderClient, fake: FakePlacement, rp: str, sleeps: list[float]
) -> None:
    stale = fake.provider_generation(rp)
    providers.set_traits(rp, ["HW_CPU_X86_AVX2"])  # moves the generation on
    before = len(fake.requests)
    with pytest.raises(reportclient.GenerationConflict) as caught:
        providers.set_aggregates(rp, [str(uuid.uuid4())], generation=stale)
    assert not caught.value.consumer_conflict
    assert wire(fake)[before:] == [("PUT", "aggregates", 409)]
    assert sleeps == []
    assert providers.get_aggregates(rp).aggregates == frozenset()


def test_set_inventories_at_a_stale_generation_leaves_the_inventories_alone(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    stale = fake.provider_generation(rp)
    providers.set_inventory(rp, "MEMORY_MB", 1024)
    with pytest.raises(reportclient.GenerationConflict):
        providers.set_inventories(rp, {"VCPU": 4}, generation=stale)
    assert dict(providers.get_inventories(rp).inventories) == {
        "VCPU": Inventory(total=8),
        "MEMORY_MB": Inventory(total=1024),
    }


def test_set_inventories_at_the_generation_replaces_every_class(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    result = providers.set_inventories(
        rp, {"DISK_GB": 100}, generation=fake.provider_generation(rp)
    )
    assert dict(result.inventories) == {"DISK_GB": Inventory(total=100)}


@pytest.mark.parametrize("bad", [-1, True, "3", 1.0])
def test_a_generation_that_is_no_generation_is_refused_before_the_wire(
    providers: ProviderClient, fake: FakePlacement, rp: str, bad: object
) -> None:
    with pytest.raises(reportclient.InvalidInput, match="generation"):
        providers.set_traits(rp, [], generation=bad)  # type: ignore[arg-type]
    assert fake.requests == []
