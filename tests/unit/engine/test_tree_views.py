"""A provider-tree view on the fake Placement: what it asks for, what a flush writes, what it keeps.

The same behaviours against the real Placement, with its server clocks, are
in ``tests/functional/test_tree_views_real.py``.
"""

from __future__ import annotations

import uuid

import pytest

import reportclient
from reportclient import PlacementClient, ProviderSpec, TreeViews
from reportclient.fixture import FakeClock, FakePlacement, make_client

WINDOW = 300.0


def new_id() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def fake() -> FakePlacement:
    return FakePlacement()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client(fake: FakePlacement, clock: FakeClock) -> PlacementClient:
    policy = reportclient.default_retry(sleep=lambda _s: None, rand=lambda: 0.5)
    return make_client(fake, microversion="1.39", retry=policy, clock=clock)


@pytest.fixture
def views(client: PlacementClient) -> TreeViews:
    return client.providers.views(window=WINDOW)


def sent(fake: FakePlacement) -> list[tuple[str, str]]:
    """The requests since the last reset, paths without their query and provider uuids named."""
    out = []
    for r in fake.requests:
        path = r.path.split("?")[0]
        parts = ["{rp}" if len(p) == 36 else p for p in path.split("/")]
        out.append((r.method, "/".join(parts)))
    fake.reset_requests()
    return out


def tree(root: str, child: str, agg: str) -> list[ProviderSpec]:
    return [
        ProviderSpec(root, "cn1", None, {"VCPU": 8}, {"HW_CPU_X86_AVX2"}, {agg}),
        ProviderSpec(child, "cn1-dev", root, {"CUSTOM_DEV": 2}, set(), set()),
    ]


@pytest.fixture
def flushed(views: TreeViews, fake: FakePlacement) -> tuple[str, str, str]:
    root, child, agg = new_id(), new_id(), new_id()
    views.ensure(root, name="cn1")
    views.flush(tree(root, child, agg))
    fake.reset_requests()
    return root, child, agg


def test_ensuring_a_missing_root_lists_then_creates_it(
    views: TreeViews, fake: FakePlacement
) -> None:
    root = new_id()
    view = views.ensure(root, name="cn1")
    assert sent(fake) == [("GET", "/resource_providers"), ("POST", "/resource_providers")]
    assert [(p.uuid, p.name, p.generation) for p in view] == [(root, "cn1", 0)]


def test_a_flush_writes_only_what_the_view_lacks_and_differs(
    views: TreeViews, fake: FakePlacement
) -> None:
    root, child, agg = new_id(), new_id(), new_id()
    views.ensure(root, name="cn1")
    fake.reset_requests()

    views.flush(tree(root, child, agg))

    assert sent(fake) == [
        ("POST", "/resource_providers"),  # the child; the root is in view
        ("PUT", "/resource_classes/CUSTOM_DEV"),
        ("PUT", "/resource_providers/{rp}/inventories"),  # leaves first, as nova
        ("PUT", "/resource_providers/{rp}/inventories"),
        ("PUT", "/resource_providers/{rp}/aggregates"),
        ("PUT", "/resource_providers/{rp}/traits"),
    ]
    assert fake.aggregates(root) == {agg}


def test_within_the_window_the_view_costs_nothing_and_an_unchanged_flush_nothing(
    views: TreeViews, fake: FakePlacement, clock: FakeClock, flushed: tuple[str, str, str]
) -> None:
    root, child, agg = flushed
    clock.advance(WINDOW)
    view = views.ensure(root)
    views.flush(tree(root, child, agg))
    assert sent(fake) == []
    assert [p.uuid for p in view] == [root, child]
    held = view.get(root)
    assert held is not None and held.aggregates == {agg} and held.generation == 3


def test_past_the_window_one_listing_and_the_sharing_query_prove_the_tree(
    views: TreeViews, fake: FakePlacement, clock: FakeClock, flushed: tuple[str, str, str]
) -> None:
    root, _child, _agg = flushed
    clock.advance(WINDOW + 1)
    views.ensure(root)
    requests = sent(fake)
    assert requests[:1] == [("GET", "/resource_providers")]  # the tree
    assert ("GET", "/resource_providers") in requests[1:]  # sharing providers of its aggregate
    # The fake dates every answer now, so nothing is proven unchanged: every field is read.
    assert sum(path.endswith(("inventories", "traits", "aggregates")) for _m, path in requests) == 6


def test_another_writers_aggregate_survives_a_flush_computed_before_it(
    views: TreeViews, fake: FakePlacement, flushed: tuple[str, str, str]
) -> None:
    root, child, agg = flushed
    theirs = new_id()
    fake.set_aggregates(root, {agg, theirs})  # nova-api's aggregate_add_host
    specs = tree(root, child, agg)
    specs[0] = ProviderSpec(root, "cn1", None, {"VCPU": 16}, {"HW_CPU_X86_AVX2"}, {agg})

    views.flush(specs)

    assert fake.aggregates(root) == {agg, theirs}
    assert fake.inventory(root)["VCPU"].total == 16
    assert sent(fake) == [
        ("PUT", "/resource_providers/{rp}/inventories"),  # at the view's generation: 409
        ("GET", "/resource_providers/{rp}/inventories"),  # as the view showed it: nobody wrote it
        ("PUT", "/resource_providers/{rp}/inventories"),
    ]


def test_a_field_another_writer_changed_since_the_view_is_not_written(
    views: TreeViews, fake: FakePlacement, flushed: tuple[str, str, str]
) -> None:
    root, child, agg = flushed
    fake.set_traits(root, {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"})
    specs = tree(root, child, agg)
    specs[0] = ProviderSpec(
        root, "cn1", None, {"VCPU": 8}, {"HW_CPU_X86_AVX2", "COMPUTE_STATUS_DISABLED"}, {agg}
    )

    with pytest.raises(reportclient.ProviderChanged) as caught:
        views.flush(specs)

    assert fake.traits(root) == {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"}
    assert caught.value.known == {"HW_CPU_X86_AVX2"}
    # The field as just read is in the view now: the caller's next tree has it.
    held = views.current().get(root)
    assert held is not None and held.traits == {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"}


def test_what_the_gateway_forgets_is_read_again_inside_the_window(
    client: PlacementClient,
    views: TreeViews,
    fake: FakePlacement,
    flushed: tuple[str, str, str],
) -> None:
    root, _child, _agg = flushed
    client.request(
        "PUT",
        f"/resource_providers/{root}/traits",
        json={
            "resource_provider_generation": fake.provider_generation(root),
            "traits": ["HW_CPU_X86_SSE"],
        },
    )
    fake.reset_requests()

    view = views.ensure(root)

    held = view.get(root)
    assert held is not None and held.traits == {"HW_CPU_X86_SSE"}
    assert ("GET", "/resource_providers/{rp}/traits") in sent(fake)


def test_invalidate_drops_the_provider_and_its_subtree_until_proven_again(
    views: TreeViews, fake: FakePlacement, flushed: tuple[str, str, str]
) -> None:
    root, child, _agg = flushed
    views.invalidate(root)
    assert sent(fake) == []  # no request
    assert views.current().uuids == []
    assert views.refreshed() == {}

    view = views.ensure(root)

    assert view.uuids == [root, child]
    assert sent(fake)[0] == ("GET", "/resource_providers")


def test_invalidate_keeping_it_only_makes_it_stale(
    views: TreeViews, fake: FakePlacement, flushed: tuple[str, str, str]
) -> None:
    root, child, _agg = flushed
    views.invalidate(root, keep=True)
    assert views.current().uuids == [root, child]
    views.ensure(root)
    assert sent(fake)[0] == ("GET", "/resource_providers")  # proven again


def test_a_window_of_zero_never_refreshes_once_proven(
    client: PlacementClient, fake: FakePlacement, clock: FakeClock
) -> None:
    views = client.providers.views(window=0)
    root = new_id()
    views.ensure(root, name="cn1")
    fake.reset_requests()
    clock.advance(10**6)
    views.ensure(root)
    assert sent(fake) == []


def test_the_window_is_asked_on_every_call(
    client: PlacementClient, fake: FakePlacement, clock: FakeClock
) -> None:
    window = [WINDOW]
    views = client.providers.views(window=lambda: window[0])
    root = new_id()
    views.ensure(root, name="cn1")
    fake.reset_requests()
    clock.advance(60)
    views.ensure(root)
    assert sent(fake) == []
    window[0] = 30  # nova's option changed (it is mutable)
    views.ensure(root)
    assert sent(fake)[0] == ("GET", "/resource_providers")


@pytest.mark.parametrize("window", [-1, "300", True])
def test_a_bad_window_is_refused(client: PlacementClient, window: object) -> None:
    with pytest.raises(reportclient.InvalidInput):
        client.providers.views(window=window)  # type: ignore[arg-type]


def test_a_sharing_provider_of_the_trees_aggregate_is_shown_as_a_root(
    views: TreeViews, fake: FakePlacement, clock: FakeClock, flushed: tuple[str, str, str]
) -> None:
    root, child, agg = flushed
    parent = fake.create_provider("storage-cluster")
    ssp = fake.create_provider("ssp", inventory={"DISK_GB": 500}, parent=parent)
    fake.set_traits(ssp, {"MISC_SHARES_VIA_AGGREGATE"})
    fake.set_aggregates(ssp, {agg})
    clock.advance(WINDOW + 1)

    view = views.ensure(root)

    held = view.get(ssp)
    assert held is not None and held.parent is None and held.sharing
    assert view.uuids == [root, child, ssp]
    assert held.inventories["DISK_GB"].total == 500


def test_a_provider_deleted_by_another_writer_leaves_the_view_when_proven(
    views: TreeViews, fake: FakePlacement, clock: FakeClock, flushed: tuple[str, str, str]
) -> None:
    root, child, _agg = flushed
    other = make_client(fake, microversion="1.39")
    other.providers.delete_provider(child)
    clock.advance(WINDOW + 1)
    assert views.ensure(root).uuids == [root]


def test_a_flush_deletes_what_the_tree_dropped_and_creates_nothing_twice(
    views: TreeViews, fake: FakePlacement, flushed: tuple[str, str, str]
) -> None:
    root, child, agg = flushed
    views.flush(tree(root, child, agg)[:1])
    assert sent(fake) == [("DELETE", "/resource_providers/{rp}")]
    assert views.current().uuids == [root]


def test_a_custom_trait_and_a_custom_class_of_one_name_are_both_ensured(
    views: TreeViews, fake: FakePlacement
) -> None:
    """nova's provider config names a host's trait and its class alike (CUSTOM_FAKE_HOST)."""
    root = new_id()
    views.ensure(root, name="cn1")
    views.flush([ProviderSpec(root, "cn1", None, {"CUSTOM_FAKE_HOST": 1}, {"CUSTOM_FAKE_HOST"})])
    assert fake.traits(root) == {"CUSTOM_FAKE_HOST"}
    assert fake.inventory(root)["CUSTOM_FAKE_HOST"].total == 1


def test_a_provider_whose_name_another_holds_is_refused_and_nothing_is_created_in_its_place(
    fake: FakePlacement, client: PlacementClient, views: TreeViews
) -> None:
    """A create refused for its name proves the uuid as it is, and creates nothing else."""
    root = new_id()
    views.ensure(root, name="cn1")
    taken = fake.create_provider("cn1-dev")  # another writer's provider holds the name
    child = new_id()

    with pytest.raises(reportclient.DuplicateName):
        views.flush(
            [ProviderSpec(root, "cn1", None), ProviderSpec(child, "cn1-dev", root, {"VCPU": 1})]
        )

    names = {rp.name for rp in client.providers.list_providers()}
    assert names == {"cn1", "cn1-dev"}  # no provider named after the child's uuid
    assert taken != child
