"""Inventories, traits and aggregates under provider generations: recovery without clobbering."""

from __future__ import annotations

import uuid

import pytest

import reportclient
from reportclient import Inventory
from reportclient._clients.providers import ProviderClient
from reportclient.fixture import FakeClock, FakePlacement, RequestRecord, make_client
from tests.support.wire import new_uuid


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def providers(fake: FakePlacement, sleeps: list[float]) -> ProviderClient:
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    # A clock that stands still: contention windows start at their floor.
    return make_client(fake, microversion="1.39", retry=policy, clock=FakeClock()).providers


@pytest.fixture
def rp(fake: FakePlacement) -> str:
    return fake.create_provider(inventory={"VCPU": 8})


def once_after_first_read(fake: FakePlacement, act) -> None:  # type: ignore[no-untyped-def]
    """Run ``act`` (another writer) right after the client's first GET, once."""
    done: list[bool] = []

    def hook(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.method == "GET" and not done:
            done.append(True)
            act()

    fake.between_requests(hook)


def claim_elsewhere(fake: FakePlacement, rp: str) -> None:
    """Another consumer allocates on ``rp``: its generation moves, none of its fields."""
    fake.put_allocations(new_uuid(), {rp: {"VCPU": 1}}, project_id="p", user_id="u")


def wire(fake: FakePlacement) -> list[tuple[str, str, int]]:
    return [(r.method, r.path.rsplit("/", 1)[-1], r.status) for r in fake.requests]


def test_set_inventory_keeps_the_other_classes_and_reports_the_new_generation(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    result = providers.set_inventory(rp, "MEMORY_MB", {"total": 2048, "reserved": 512})
    assert result.generation == 2 == fake.provider_generation(rp)
    assert dict(result.inventories) == {
        "VCPU": Inventory(total=8),
        "MEMORY_MB": Inventory(total=2048, reserved=512),
    }
    assert wire(fake) == [("GET", "inventories", 200), ("PUT", "inventories", 200)]


def test_inventory_conflict_rereads_and_keeps_the_class_another_writer_added(
    providers: ProviderClient, fake: FakePlacement, rp: str, sleeps: list[float]
) -> None:
    once_after_first_read(fake, lambda: fake.set_inventory(rp, {"VCPU": 8, "DISK_GB": 100}))

    providers.set_inventory(rp, "MEMORY_MB", 1024)

    assert set(fake.inventory(rp)) == {"VCPU", "DISK_GB", "MEMORY_MB"}
    assert wire(fake) == [
        ("GET", "inventories", 200),
        ("PUT", "inventories", 409),
        ("GET", "inventories", 200),  # the look: another writer touched the field
        ("GET", "inventories", 200),  # after the wait, the premise is read again
        ("PUT", "inventories", 200),
    ]
    # computed from a fresh read: contention, so it backs off over the engine's
    # first window (1 s), rand pinned at 0.5
    assert sleeps == [0.5]


def test_inventory_conflict_from_allocations_alone_is_retried_at_once(
    providers: ProviderClient, fake: FakePlacement, rp: str, sleeps: list[float]
) -> None:
    """A claim moved the generation, not the inventory: no contention, no backoff."""
    once_after_first_read(fake, lambda: claim_elsewhere(fake, rp))

    providers.set_inventory(rp, "MEMORY_MB", 1024)

    assert set(fake.inventory(rp)) == {"VCPU", "MEMORY_MB"}
    assert wire(fake) == [
        ("GET", "inventories", 200),
        ("PUT", "inventories", 409),
        ("GET", "inventories", 200),
        ("PUT", "inventories", 200),
    ]
    assert sleeps == [0.0]  # at once


def test_trait_conflict_from_allocations_alone_is_retried_at_once(
    providers: ProviderClient, fake: FakePlacement, rp: str, sleeps: list[float]
) -> None:
    once_after_first_read(fake, lambda: claim_elsewhere(fake, rp))

    providers.add_traits(rp, ["HW_CPU_X86_AVX2"])

    assert fake.traits(rp) == {"HW_CPU_X86_AVX2"}
    assert [m for m, _, _ in wire(fake)] == ["GET", "PUT", "GET", "PUT"]
    assert sleeps == [0.0]  # at once


def test_update_inventories_calls_mutate_again_on_the_reread_state(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    seen: list[int] = []
    once_after_first_read(fake, lambda: fake.set_inventory(rp, {"VCPU": 10}))

    def grow(current: dict[str, Inventory]) -> dict[str, Inventory]:
        seen.append(current["VCPU"].total)
        return {**current, "VCPU": Inventory(total=current["VCPU"].total + 2)}

    providers.update_inventories(rp, grow)

    assert seen == [8, 10]
    assert fake.inventory(rp)["VCPU"].total == 12


def test_shrinking_inventory_below_usage_is_inventory_in_use_and_not_retried(
    providers: ProviderClient, fake: FakePlacement, rp: str, sleeps: list[float]
) -> None:
    fake.set_inventory(rp, {"VCPU": 8, "MEMORY_MB": 1024})
    fake.put_allocations(new_uuid(), {rp: {"MEMORY_MB": 512}})
    fake.reset_requests()

    with pytest.raises(reportclient.InventoryInUse) as caught:
        providers.remove_inventory(rp, "MEMORY_MB")

    assert caught.value.code == "placement.inventory.inuse"
    assert wire(fake) == [("GET", "inventories", 200), ("PUT", "inventories", 409)]
    assert sleeps == []


def test_unchanged_inventory_is_one_read_and_no_write(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    providers.set_inventory(rp, "VCPU", 8)
    assert wire(fake) == [("GET", "inventories", 200)]


def test_add_traits_keeps_a_trait_another_writer_added_meanwhile(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    fake.set_traits(rp, ["HW_CPU_X86_AVX"])
    once_after_first_read(
        fake, lambda: fake.set_traits(rp, ["HW_CPU_X86_AVX", "COMPUTE_NET_ATTACH_INTERFACE"])
    )

    result = providers.add_traits(rp, ["HW_CPU_X86_AVX2"])

    assert result.traits == {"HW_CPU_X86_AVX", "COMPUTE_NET_ATTACH_INTERFACE", "HW_CPU_X86_AVX2"}
    assert fake.traits(rp) == set(result.traits)


def test_remove_traits_keeps_every_other_trait(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    fake.set_traits(rp, ["HW_CPU_X86_AVX", "COMPUTE_NET_ATTACH_INTERFACE"])
    providers.remove_traits(rp, ["HW_CPU_X86_AVX"])
    assert fake.traits(rp) == {"COMPUTE_NET_ATTACH_INTERFACE"}


def test_unknown_custom_trait_is_refused_not_retried(
    providers: ProviderClient, fake: FakePlacement, rp: str, sleeps: list[float]
) -> None:
    with pytest.raises(reportclient.PlacementError) as caught:
        providers.add_traits(rp, ["CUSTOM_NEVER_CREATED"])
    assert caught.value.status == 400
    assert sleeps == []


def test_add_aggregates_keeps_a_membership_another_writer_added(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    mine, theirs = new_uuid(), new_uuid()
    once_after_first_read(fake, lambda: fake.set_aggregates(rp, [theirs]))

    result = providers.add_aggregates(rp, [mine])

    assert result.aggregates == {mine, theirs} == fake.aggregates(rp)


def test_set_aggregates_replaces_them(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    fake.set_aggregates(rp, [new_uuid()])
    only = new_uuid()
    assert providers.set_aggregates(rp, [only]).aggregates == {only}


def test_lost_answer_of_an_idempotent_change_is_settled_by_one_read(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    fake.lose_next_response()

    result = providers.set_inventory(rp, "MEMORY_MB", 1024)

    assert result.inventories["MEMORY_MB"] == Inventory(total=1024)
    assert [(m, s) for m, _, s in wire(fake)] == [("GET", 200), ("PUT", 200), ("GET", 200)]


def test_lost_answer_of_a_non_idempotent_change_that_landed_is_outcome_unknown(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    fake.lose_next_response()

    def add_two(current: dict[str, Inventory]) -> dict[str, Inventory]:
        return {**current, "VCPU": Inventory(total=current["VCPU"].total + 2)}

    with pytest.raises(reportclient.OutcomeUnknown) as caught:
        providers.update_inventories(rp, add_two)

    assert fake.inventory(rp)["VCPU"].total == 10  # applied once, never twice
    assert caught.value.sent.generation == 1


def _after_the_failed_put(fake: FakePlacement, status: int, applied: bool, then) -> None:
    """The first PUT answers ``status`` (after committing if ``applied``); ``then`` runs next."""
    steps: list[str] = []

    def hook(fake_: FakePlacement, record: RequestRecord) -> None:
        if not steps and record.method == "GET":
            steps.append("armed")
            fake_.fail_next(1, status=status, applied=applied)
        elif len(steps) == 1 and record.method == "PUT":
            steps.append("failed")
            then(fake_)

    fake.between_requests(hook)


def _add_two(current: dict[str, Inventory]) -> dict[str, Inventory]:
    return {**current, "VCPU": Inventory(total=current["VCPU"].total + 2)}


def test_lost_change_another_writer_then_built_on_is_outcome_unknown_not_applied_again(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    # The PUT carrying generation 1 lands (2) and its answer is a 500; another
    # writer's change makes 3. At 3 nothing proves whether ours is in there.
    _after_the_failed_put(fake, 500, True, lambda f: f.set_traits(rp, ["HW_CPU_X86_AVX"]))

    with pytest.raises(reportclient.OutcomeUnknown) as caught:
        providers.update_inventories(rp, _add_two)

    assert fake.inventory(rp)["VCPU"].total == 10  # applied once, never twice
    assert (caught.value.sent.generation, caught.value.state.generation) == (1, 3)


def test_lost_change_whose_generation_another_writer_took_is_written_once_more(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    # The PUT carrying generation 1 is refused before committing (a 502 from a
    # proxy: outcome unknown to the client); another writer takes 2. Exactly
    # one write came after 1 and it did not hold ours: ours never landed.
    _after_the_failed_put(fake, 502, False, lambda f: f.set_traits(rp, ["HW_CPU_X86_AVX"]))

    result = providers.update_inventories(rp, _add_two)

    assert fake.inventory(rp)["VCPU"].total == result.inventories["VCPU"].total == 10
    assert fake.traits(rp) == {"HW_CPU_X86_AVX"}


def test_write_refused_by_a_proxy_before_commit_is_retried_from_a_reread(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    fake.set_inventory(rp, {"VCPU": 8})
    fake.reset_requests()
    done: list[bool] = []

    def fail_the_put(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.method == "GET" and not done:
            done.append(True)
            fake.fail_next(1, status=503)

    fake.between_requests(fail_the_put)

    def add_two(current: dict[str, Inventory]) -> dict[str, Inventory]:
        return {**current, "VCPU": Inventory(total=current["VCPU"].total + 2)}

    providers.update_inventories(rp, add_two)

    # The 503 left the generation where it was: provably not landed, so one more write.
    assert fake.inventory(rp)["VCPU"].total == 10


def test_change_to_a_missing_provider_is_provider_not_found_and_not_retried(
    providers: ProviderClient, sleeps: list[float]
) -> None:
    with pytest.raises(reportclient.ProviderNotFound):
        providers.set_inventory(new_uuid(), "VCPU", 4)
    assert sleeps == []


def test_get_fields_read_each_with_the_provider_generation(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    agg = new_uuid()
    fake.set_traits(rp, ["HW_CPU_X86_AVX"])
    fake.set_aggregates(rp, [agg])
    assert providers.get_inventories(rp).inventories == {"VCPU": Inventory(total=8)}
    assert providers.get_traits(rp).traits == {"HW_CPU_X86_AVX"}
    assert providers.get_aggregates(rp).aggregates == {agg}
    generations = {
        providers.get_inventories(rp).generation,
        providers.get_traits(rp).generation,
        providers.get_aggregates(rp).generation,
    }
    assert generations == {fake.provider_generation(rp)} == {3}


def test_set_inventories_replaces_every_class(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    providers.set_inventories(rp, {"MEMORY_MB": 512, "DISK_GB": {"total": 10, "reserved": 1}})
    held = {rc: (inv.total, inv.reserved) for rc, inv in fake.inventory(rp).items()}
    assert held == {"MEMORY_MB": (512, 0), "DISK_GB": (10, 1)}


def test_set_traits_makes_them_exactly_the_given_ones(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    fake.set_traits(rp, ["HW_CPU_X86_AVX"])
    assert providers.set_traits(rp, ["COMPUTE_TRUSTED_CERTS"]).traits == {"COMPUTE_TRUSTED_CERTS"}


def test_remove_aggregates_keeps_the_other_memberships(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    gone, kept = new_uuid(), new_uuid()
    fake.set_aggregates(rp, [gone, kept])
    assert providers.remove_aggregates(rp, [gone]).aggregates == {kept} == fake.aggregates(rp)


def test_a_trusted_snapshot_that_already_holds_the_change_is_confirmed_by_a_read(
    fake: FakePlacement, rp: str
) -> None:
    # cache_ttl=60 trusts a snapshot for what a write is computed from, not
    # for "nothing to write": another writer may have changed the field.
    providers = make_client(fake, microversion="1.39", cache_ttl=60, clock=FakeClock()).providers
    providers.set_inventory(rp, "VCPU", 8)  # cached: VCPU 8
    fake.set_inventory(rp, {"VCPU": 4})  # behind the client's back
    fake.reset_requests()

    result = providers.set_inventory(rp, "VCPU", 8)

    assert fake.inventory(rp)["VCPU"].total == result.inventories["VCPU"].total == 8
    assert result.generation == fake.provider_generation(rp)
    assert [(m, s) for m, _, s in wire(fake)] == [("GET", 200), ("PUT", 200)]


def test_a_trusted_snapshot_confirmed_unchanged_costs_one_read_and_no_write(
    fake: FakePlacement, rp: str
) -> None:
    providers = make_client(fake, microversion="1.39", cache_ttl=60, clock=FakeClock()).providers
    providers.add_traits(rp, ["HW_CPU_X86_AVX"])
    fake.set_aggregates(rp, [new_uuid()])  # moves the provider generation only
    fake.reset_requests()

    result = providers.add_traits(rp, ["HW_CPU_X86_AVX"])

    assert result.traits == {"HW_CPU_X86_AVX"}
    assert result.generation == fake.provider_generation(rp)  # not the cached one
    assert [(m, s) for m, _, s in wire(fake)] == [("GET", 200)]


def test_idempotent_mutate_raising_while_a_lost_write_is_judged_is_outcome_unknown(
    providers: ProviderClient, fake: FakePlacement, rp: str
) -> None:
    """The caller's function ends the operation while its write may have landed."""
    calls: list[int] = []

    def mutate(current: dict[str, Inventory]) -> dict[str, Inventory]:
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("the caller's function failed")
        current["MEMORY_MB"] = Inventory(total=1024)
        return current

    fake.lose_next_response()

    with pytest.raises(reportclient.OutcomeUnknown) as err:
        providers.update_inventories(rp, mutate, idempotent=True)

    assert isinstance(err.value.__cause__, RuntimeError)
    assert set(fake.inventory(rp)) == {"VCPU", "MEMORY_MB"}  # it had landed, once


# -- a caller's own generation: one compare-and-swap, as nova's and neutron-lib's calls --
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
