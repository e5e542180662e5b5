"""The agent setting, ``reconcile(max_staleness=...)``: what each period costs, on a fake clock."""

from __future__ import annotations

import pytest

import reportclient
from reportclient import ProviderSpec
from reportclient._clients.providers import ProviderClient
from reportclient._engine.reconcile import AGENT_MAX_STALENESS
from reportclient.fixture import FakeClock, FakePlacement, make_client
from tests.support.clients import providers_on
from tests.support.hooks import once_after
from tests.support.wire import new_uuid

AGG = "5a5b5c5d-0000-4000-8000-000000000001"
WINDOW = AGENT_MAX_STALENESS


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def providers(fake: FakePlacement, clock: FakeClock) -> ProviderClient:
    return providers_on(fake, clock=clock)  # type: ignore[no-any-return]


def tree(
    root: str, child: str, *, vcpus: int = 16, traits: frozenset[str] = frozenset()
) -> list[ProviderSpec]:
    return [
        ProviderSpec(
            root,
            f"cn-{root[:8]}",
            inventories={"VCPU": vcpus, "MEMORY_MB": 4096, "DISK_GB": 100},
            traits={"HW_CPU_X86_AVX2", *traits},
            aggregates={AGG},
        ),
        ProviderSpec(child, f"cn-{root[:8]}-gpu", parent=root, inventories={"CUSTOM_GPU": 2}),
    ]


def periods(
    providers: ProviderClient, specs: list[ProviderSpec], clock: FakeClock, n: int
) -> list[int]:
    """Reconcile once a minute, ``n`` times; each period's request count."""
    counts = []
    for _ in range(n):
        clock.advance(60)
        counts.append(providers.reconcile(specs, max_staleness=WINDOW).requests)
    return counts


@pytest.fixture
def proven(providers: ProviderClient, fake: FakePlacement, clock: FakeClock) -> tuple[str, str]:
    """A root and child the agent reconciled under ``WINDOW``, one 60 s period ago."""
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child), max_staleness=WINDOW)
    fake.reset_requests()
    clock.advance(60)
    return root, child


def inventories_proven_at_200(providers: ProviderClient, clock: FakeClock) -> tuple[str, str]:
    """A tree reconciled at 0 whose inventories a second reconcile (32 VCPU) proved at 200."""
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child), max_staleness=WINDOW)
    clock.advance(200)
    providers.reconcile(tree(root, child, vcpus=32), max_staleness=WINDOW)
    return root, child


def test_steady_periods_inside_the_window_cost_no_request(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child), max_staleness=WINDOW)
    fake.reset_requests()

    assert periods(providers, tree(root, child), clock, 5) == [0, 0, 0, 0, 0]
    assert fake.requests == []


def test_past_the_window_an_unchanged_tree_costs_its_listing_and_one_read_per_field(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    """Every field is proven again once per window, whatever the listing's generations say."""
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child), max_staleness=WINDOW)
    periods(providers, tree(root, child), clock, 5)
    fake.reset_requests()

    clock.advance(60)  # 360 s after the proof
    report = providers.reconcile(tree(root, child), max_staleness=WINDOW)

    assert not report.trusted
    assert [(r.method, r.path.split("?")[0]) for r in fake.requests] == [
        ("GET", "/resource_providers"),
        ("GET", f"/resource_providers/{root}/inventories"),
        ("GET", f"/resource_providers/{root}/traits"),
        ("GET", f"/resource_providers/{root}/aggregates"),
        ("GET", f"/resource_providers/{child}/inventories"),
    ]
    assert report.requests == 5 and report.written == ()
    # the listing renewed the window, and the reads every field's proof
    assert periods(providers, tree(root, child), clock, 4) == [0, 0, 0, 0]


def test_a_steady_agent_pays_one_listing_and_one_read_per_field_once_per_window(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child), max_staleness=WINDOW)

    # a period of 60 s and a window of 300: every sixth period proves the tree
    assert periods(providers, tree(root, child), clock, 18) == [0, 0, 0, 0, 0, 1 + 4] * 3


def test_a_changed_description_inside_the_window_costs_one_write(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock, proven: tuple[str, str]
) -> None:
    root, child = proven

    report = providers.reconcile(tree(root, child, vcpus=32), max_staleness=WINDOW)

    assert report.trusted and report.written == ((root, "inventories"),)
    assert [(r.method, r.status) for r in fake.requests] == [("PUT", 200)]
    assert fake.inventory(root)["VCPU"].total == 32
    # the write's own generation carries the other fields: the next change is one write too
    fake.reset_requests()
    report = providers.reconcile(
        tree(root, child, vcpus=32, traits=frozenset({"COMPUTE_NET_VIF_MODEL_VIRTIO"})),
        max_staleness=WINDOW,
    )
    assert [(r.method, r.status) for r in fake.requests] == [("PUT", 200)]


def test_an_allocation_moving_the_generation_costs_no_field_reread(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child), max_staleness=WINDOW)
    fake.put_allocations(new_uuid(), {root: {"VCPU": 1}})
    fake.reset_requests()
    clock.advance(60)

    assert providers.reconcile(tree(root, child), max_staleness=WINDOW).requests == 0
    report = providers.reconcile(tree(root, child, vcpus=32), max_staleness=WINDOW)

    # the write at the cached generation conflicts; only the written field is re-read
    assert [(r.method, r.path.rsplit("/", 1)[-1], r.status) for r in fake.requests] == [
        ("PUT", "inventories", 409),
        ("GET", "inventories", 200),
        ("PUT", "inventories", 200),
    ]
    assert report.requests == 3
    assert fake.inventory(root)["VCPU"].total == 32
    # the traits and aggregates cached before the allocation are still trusted
    fake.reset_requests()
    assert periods(providers, tree(root, child, vcpus=32), clock, 2) == [0, 0]


def test_past_the_window_a_field_proven_within_it_is_not_read_again(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    root, child = inventories_proven_at_200(providers, clock)
    fake.reset_requests()
    clock.advance(101)  # the tree's window ended; the inventories are 101 s old

    report = providers.reconcile(tree(root, child, vcpus=32), max_staleness=WINDOW)

    paths = [r.path.split("?")[0] for r in fake.requests]
    assert paths == [
        "/resource_providers",
        f"/resource_providers/{root}/traits",
        f"/resource_providers/{root}/aggregates",
        f"/resource_providers/{child}/inventories",
    ]
    assert report.written == ()


def test_a_field_trusted_by_the_last_listing_is_read_once_its_own_proof_is_a_window_old(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    root, child = inventories_proven_at_200(providers, clock)
    clock.advance(101)
    providers.reconcile(tree(root, child, vcpus=32), max_staleness=WINDOW)  # listed at 301
    fake.reset_requests()
    clock.advance(200)  # 501: inside the tree's window, the inventories 301 s old

    report = providers.reconcile(tree(root, child, vcpus=32), max_staleness=WINDOW)

    assert report.trusted
    assert [(r.method, r.path) for r in fake.requests] == [
        ("GET", f"/resource_providers/{root}/inventories")
    ]
    assert report.requests == 1 and report.written == ()


def test_a_provider_recreated_back_at_the_cached_generation_is_restored_within_one_window(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    """Another writer deletes and re-creates the provider under its uuid, back at our generation."""
    root = new_uuid()
    specs = [ProviderSpec(root, "cn", inventories={"VCPU": 16}, traits={"HW_CPU_X86_AVX2"})]
    ours = providers.reconcile(specs, max_staleness=WINDOW).generations[root]
    other = make_client(fake, microversion="1.39").providers
    other.delete_provider(root)
    fake.create_provider("cn", root)
    fake.set_inventory(root, {"VCPU": 4})
    fake.set_traits(root, ["COMPUTE_TRUSTED_CERTS"])
    assert fake.provider_generation(root) == ours  # the generation cannot tell

    clock.advance(60)
    assert providers.reconcile(specs, max_staleness=WINDOW).requests == 0  # the window's risk
    clock.advance(WINDOW)
    report = providers.reconcile(specs, max_staleness=WINDOW)

    assert fake.inventory(root)["VCPU"].total == 16
    assert fake.traits(root) == {"HW_CPU_X86_AVX2"}
    assert set(report.written) == {(root, "inventories"), (root, "traits")}


def test_another_writers_change_inside_the_window_is_repaired_once_the_window_ends(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child), max_staleness=WINDOW)
    fake.set_traits(root, ["COMPUTE_TRUSTED_CERTS"])

    clock.advance(60)
    assert providers.reconcile(tree(root, child), max_staleness=WINDOW).requests == 0
    assert fake.traits(root) == {"COMPUTE_TRUSTED_CERTS"}  # the risk the window accepts

    clock.advance(WINDOW)
    report = providers.reconcile(tree(root, child), max_staleness=WINDOW)
    assert fake.traits(root) == {"HW_CPU_X86_AVX2"}
    assert report.written == ((root, "traits"),)


def test_a_provider_deleted_inside_the_window_is_rebuilt_in_the_same_call(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    root = new_uuid()
    specs = [ProviderSpec(root, "cn", inventories={"VCPU": 4})]
    providers.reconcile(specs, max_staleness=WINDOW)
    providers.delete_provider(root)

    clock.advance(60)
    report = providers.reconcile(
        [ProviderSpec(root, "cn", inventories={"VCPU": 8})], max_staleness=WINDOW
    )

    assert report.created == (root,)
    assert fake.inventory(root)["VCPU"].total == 8


def test_a_new_shape_is_proven_at_once_whatever_the_window(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock, proven: tuple[str, str]
) -> None:
    root, child = proven

    report = providers.reconcile(tree(root, child)[:1], max_staleness=WINDOW)

    assert report.deleted == (child,) and not report.trusted


def test_the_strict_default_still_reads_every_field(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock, proven: tuple[str, str]
) -> None:
    root, child = proven

    assert providers.reconcile(tree(root, child)).requests == 1 + 4


def test_a_negative_window_is_refused() -> None:
    providers = make_client(FakePlacement()).providers
    with pytest.raises(reportclient.InvalidInput):
        providers.reconcile([ProviderSpec(new_uuid(), "cn")], max_staleness=-1)


def test_a_write_refused_inside_the_window_makes_the_next_period_prove_the_tree(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    root = new_uuid()
    providers.reconcile(
        [ProviderSpec(root, "cn", inventories={"VCPU": 8, "MEMORY_MB": 512})],
        max_staleness=WINDOW,
    )
    fake.put_allocations(new_uuid(), {root: {"MEMORY_MB": 256}})
    clock.advance(60)
    with pytest.raises(reportclient.InventoryInUse):
        providers.reconcile(
            [ProviderSpec(root, "cn", inventories={"VCPU": 8})], max_staleness=WINDOW
        )
    fake.reset_requests()

    clock.advance(60)
    report = providers.reconcile(
        [ProviderSpec(root, "cn", inventories={"VCPU": 8, "MEMORY_MB": 512})],
        max_staleness=WINDOW,
    )

    assert not report.trusted
    assert fake.requests[0].path.startswith("/resource_providers?in_tree=")


def test_merge_inside_the_window_keeps_what_another_agent_added_without_a_request(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    root = new_uuid()
    specs = [ProviderSpec(root, "cn", traits={"HW_CPU_X86_AVX2"})]
    providers.reconcile(specs, merge=True, max_staleness=WINDOW)
    fake.set_traits(root, ["HW_CPU_X86_AVX2", "COMPUTE_TRUSTED_CERTS"])
    fake.reset_requests()

    clock.advance(60)
    assert providers.reconcile(specs, merge=True, max_staleness=WINDOW).requests == 0
    clock.advance(WINDOW)
    providers.reconcile(specs, merge=True, max_staleness=WINDOW)

    assert fake.traits(root) == {"HW_CPU_X86_AVX2", "COMPUTE_TRUSTED_CERTS"}


def test_the_agent_setting_can_be_the_clients_default(
    fake: FakePlacement, clock: FakeClock
) -> None:
    """``reconcile_max_staleness`` on the client: a compute agent configures it once."""
    policy = reportclient.default_retry(sleep=lambda _s: None, rand=lambda: 0.5)
    client = make_client(
        fake, microversion="1.39", retry=policy, clock=clock, reconcile_max_staleness=WINDOW
    )
    root, child = new_uuid(), new_uuid()
    specs = tree(root, child)
    client.providers.reconcile(specs)

    clock.advance(60)
    assert client.providers.reconcile(specs).requests == 0  # inside the window: nothing
    clock.advance(60)
    strict = client.providers.reconcile(specs, max_staleness=None)  # one call asks for proof
    assert strict.requests > 0
    clock.advance(WINDOW)
    assert client.providers.reconcile(specs).requests > 0  # the window ended: proven again


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "300", True])
def test_a_bad_agent_setting_is_refused_before_any_request(
    fake: FakePlacement, bad: object
) -> None:
    with pytest.raises(reportclient.InvalidInput, match="max_staleness"):
        make_client(fake, microversion="1.39", reconcile_max_staleness=bad)
    providers = make_client(fake, microversion="1.39").providers
    with pytest.raises(reportclient.InvalidInput, match="max_staleness"):
        providers.reconcile(tree(new_uuid(), new_uuid()), max_staleness=bad)  # type: ignore[arg-type]
    assert fake.requests == []


def test_a_field_this_client_writes_during_reconcile_is_never_trusted_at_reconciles_read(
    providers: ProviderClient, fake: FakePlacement, clock: FakeClock
) -> None:
    """Issue 49: reconcile stored back, at the end of a provider's steps, what it had read.

    Reconcile reads the root's traits, then its aggregates; while that
    second read is in flight, another thread of the same client writes the
    traits, and the cache holds the write. Reconcile used to store its own
    read of the traits again once the provider's steps were done, without
    a ticket: the client's own write was replaced by the older content,
    trusted for a window, so the next period left the extra trait on.
    """
    root, child = new_uuid(), new_uuid()
    providers.reconcile(tree(root, child), max_staleness=WINDOW)
    clock.advance(WINDOW + 60)  # past the window: the listing, then a read of each field

    def other_thread(_fake: FakePlacement) -> None:
        providers.set_traits(root, {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"})

    once_after(fake, lambda r: r.path == f"/resource_providers/{root}/aggregates", other_thread)
    providers.reconcile(tree(root, child), max_staleness=WINDOW)
    assert fake.traits(root) == {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"}

    clock.advance(60)  # inside the window again
    report = providers.reconcile(tree(root, child), max_staleness=WINDOW)

    assert report.written == ((root, "traits"),)
    assert fake.traits(root) == {"HW_CPU_X86_AVX2"}
