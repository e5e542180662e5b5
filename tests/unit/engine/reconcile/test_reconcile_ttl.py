"""Reconcile at fleet scale on the fake: the cache's ttl really ends, and every root is listed."""

from __future__ import annotations

import pytest

import reportclient
from reportclient import ProviderSpec
from reportclient._clients.providers import ProviderClient
from reportclient._gateway.provider_cache import ProviderCache
from reportclient._model.providers import ProviderAggregates, ProviderInventories, ProviderTraits
from reportclient.fixture import FakeClock, FakePlacement, make_client
from tests.support.wire import new_uuid

AGG = "5a5b5c5d-0000-4000-8000-000000000002"
TTL = 300.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=0.0)


def client_for(fake: FakePlacement, clock: FakeClock, ttl: float = TTL) -> ProviderClient:
    policy = reportclient.default_retry(sleep=lambda _s: None, rand=lambda: 0.5)
    return make_client(
        fake, microversion="1.39", retry=policy, cache_ttl=ttl, clock=clock
    ).providers


def node(rp: str, *, vcpus: int = 16) -> ProviderSpec:
    """A compute node managing all three fields, with no custom names to ensure."""
    return ProviderSpec(
        rp, f"cn-{rp}", inventories={"VCPU": vcpus}, traits={"HW_CPU_X86_AVX2"}, aggregates={AGG}
    )


def sent(fake: FakePlacement) -> list[tuple[str, str]]:
    """``(method, path without query)`` of every request since the last reset."""
    return [(r.method, r.path.split("?")[0]) for r in fake.requests]


# -- the cache itself ----------------------------------------------------------


def test_put_stamps_a_snapshot_with_now_by_default(clock: FakeClock) -> None:
    cache = ProviderCache(TTL, clock)
    clock.advance(42)
    snap = ProviderTraits("rp", 3, frozenset({"HW_CPU_X86_AVX2"}))

    cache.put(snap)

    assert cache.entry("rp", ProviderTraits) == (snap, 42.0)


def test_put_with_taken_at_keeps_the_age_of_the_content(clock: FakeClock) -> None:
    cache = ProviderCache(TTL, clock)
    snap = ProviderTraits("rp", 4, frozenset())
    clock.advance(250)

    cache.put(snap, taken_at=0.0)

    assert cache.entry("rp", ProviderTraits) == (snap, 0.0)
    assert cache.trusted_entry("rp", ProviderTraits, 4) == (snap, 0.0)
    clock.advance(51)  # 301 s after the content was proven, 51 s after the put
    assert cache.trusted("rp", ProviderTraits) is None
    assert cache.entry("rp", ProviderTraits) == (snap, 0.0)  # still there for inspection


def test_entry_of_a_field_never_cached_is_none(clock: FakeClock) -> None:
    assert ProviderCache(TTL, clock).entry("rp", ProviderInventories) is None


# -- defect 1: cache_ttl expires under reconcile -------------------------------


def test_reconciling_more_often_than_the_ttl_rereads_when_the_window_ends(
    fake: FakePlacement, clock: FakeClock
) -> None:
    providers = client_for(fake, clock)
    rp = new_uuid()
    counts = []
    for _ in range(5):  # t = 0, 200, 400, 600, 800
        fake.reset_requests()
        report = providers.reconcile([node(rp)])
        assert report.requests == len(fake.requests)
        counts.append(report.requests)
        clock.advance(200)

    # t=0: list, POST, 3 PUTs. t=200: within 300 s of the writes, the listing only.
    # t=400: 400 s old, the three fields are read again (and proven at 400);
    # t=600 trusts those reads, t=800 reads again.
    assert counts == [5, 1, 4, 1, 4]


def test_the_expired_run_reads_each_field_and_writes_nothing(
    fake: FakePlacement, clock: FakeClock
) -> None:
    providers = client_for(fake, clock)
    rp = new_uuid()
    providers.reconcile([node(rp)])
    clock.advance(TTL + 1)
    fake.reset_requests()

    report = providers.reconcile([node(rp)])

    assert sent(fake) == [
        ("GET", "/resource_providers"),
        ("GET", f"/resource_providers/{rp}/inventories"),
        ("GET", f"/resource_providers/{rp}/traits"),
        ("GET", f"/resource_providers/{rp}/aggregates"),
    ]
    assert report.written == ()


def test_a_run_within_the_window_costs_only_the_listing(
    fake: FakePlacement, clock: FakeClock
) -> None:
    providers = client_for(fake, clock)
    rp = new_uuid()
    providers.reconcile([node(rp)])
    clock.advance(TTL)  # the last second of the window
    fake.reset_requests()

    report = providers.reconcile([node(rp)])

    assert sent(fake) == [("GET", "/resource_providers")]
    assert report.requests == 1


def test_a_trusted_snapshot_is_not_restamped_by_the_reconcile_that_trusted_it(
    fake: FakePlacement, clock: FakeClock
) -> None:
    providers = client_for(fake, clock)
    rp = new_uuid()
    providers.reconcile([node(rp)])
    clock.advance(200)

    providers.reconcile([node(rp)])

    for kind in (ProviderInventories, ProviderTraits, ProviderAggregates):
        entry = providers._ops.cache.entry(rp, kind)
        assert entry is not None and entry[1] == 0.0


def test_a_carried_snapshot_keeps_the_time_its_content_was_proven(
    fake: FakePlacement, clock: FakeClock
) -> None:
    providers = client_for(fake, clock)
    rp = new_uuid()
    providers.reconcile([node(rp)])  # every field proven at t=0
    clock.advance(200)

    # Writing inventories moves the generation; traits and aggregates are
    # carried to it, but what proves them is still the t=0 write.
    report = providers.reconcile([node(rp, vcpus=32)])

    assert report.written == ((rp, "inventories"),)
    inventories = providers._ops.cache.entry(rp, ProviderInventories)
    traits = providers._ops.cache.entry(rp, ProviderTraits)
    assert inventories is not None and traits is not None
    assert (inventories[0].generation, inventories[1]) == (report.generations[rp], 200.0)
    assert (traits[0].generation, traits[1]) == (report.generations[rp], 0.0)

    clock.advance(200)  # t=400: inventories 200 s old, the carried fields 400 s
    fake.reset_requests()
    report = providers.reconcile([node(rp, vcpus=32)])

    assert sent(fake) == [
        ("GET", "/resource_providers"),
        ("GET", f"/resource_providers/{rp}/traits"),
        ("GET", f"/resource_providers/{rp}/aggregates"),
    ]
    assert report.requests == 3


# -- defect 2: every root of the description is listed --------------------------


def test_twenty_roots_steady_reconcile_lists_each_tree_once_and_creates_nothing(
    fake: FakePlacement, clock: FakeClock
) -> None:
    providers = client_for(fake, clock)
    roots = [new_uuid() for _ in range(20)]
    specs = [node(rp) for rp in roots]
    first = providers.reconcile(specs)
    assert first.created == tuple(roots)
    assert first.requests == len(fake.requests)
    fake.reset_requests()

    report = providers.reconcile(specs)

    methods = [r.method for r in fake.requests]
    assert methods == ["GET"] * 20
    assert sorted(r.path for r in fake.requests) == sorted(
        f"/resource_providers?in_tree={rp}" for rp in roots
    )
    assert [r.status for r in fake.requests].count(409) == 0
    assert report.created == () and report.written == ()
    assert report.requests == 20


def test_twenty_new_roots_are_each_listed_and_created_once(
    fake: FakePlacement, clock: FakeClock
) -> None:
    providers = client_for(fake, clock)
    specs = [node(new_uuid()) for _ in range(20)]

    report = providers.reconcile(specs)

    statuses = [(r.method, r.status) for r in fake.requests]
    # one listing and one POST per root, then its three fields written
    assert statuses.count(("GET", 200)) == 20
    assert statuses.count(("POST", 200)) == 20
    assert [s for _m, s in statuses].count(409) == 0
    assert report.requests == len(fake.requests) == 20 * (1 + 1 + 3)


def test_a_subtree_under_an_undescribed_provider_is_listed_by_that_parent(
    fake: FakePlacement, clock: FakeClock
) -> None:
    providers = client_for(fake, clock)
    root = providers.create_provider("cn-owned-by-nova", uuid=new_uuid()).uuid
    gpu, fpga = new_uuid(), new_uuid()
    # A device agent describes only its own providers, under nova's root.
    specs = [
        ProviderSpec(gpu, "gpu", parent=root, inventories={"VGPU": 4}),
        ProviderSpec(fpga, "fpga", parent=root, traits={"HW_CPU_X86_AVX2"}),
    ]
    providers.reconcile(specs)
    fake.reset_requests()

    report = providers.reconcile(specs)

    # Both hang from the same parent: its one tree listing covers them.
    assert [r.path for r in fake.requests] == [f"/resource_providers?in_tree={root}"]
    assert report.requests == 1


def test_roots_and_their_children_need_one_listing_per_root(
    fake: FakePlacement, clock: FakeClock
) -> None:
    providers = client_for(fake, clock)
    specs = []
    roots = [new_uuid() for _ in range(3)]
    for rp in roots:
        specs += [
            node(rp),
            ProviderSpec(new_uuid(), f"gpu-{rp}", parent=rp, inventories={"VGPU": 1}),
        ]
    providers.reconcile(specs)
    fake.reset_requests()

    report = providers.reconcile(specs)

    assert sorted(r.path for r in fake.requests) == sorted(
        f"/resource_providers?in_tree={rp}" for rp in roots
    )
    assert report.requests == 3
