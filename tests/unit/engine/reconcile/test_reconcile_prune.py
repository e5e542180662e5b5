"""Reconcile on the fake: what it deletes, what it never deletes, moves between trees, names."""

from __future__ import annotations

import pytest

import reportclient
from reportclient import ProviderSpec
from reportclient._clients.providers import ProviderClient
from reportclient._model.provider_tree import doomed_providers
from reportclient.fixture import FakePlacement
from tests.support.clients import providers_on
from tests.support.trees import node
from tests.support.wire import new_uuid


def methods(fake: FakePlacement) -> list[str]:
    return [r.method for r in fake.requests]


def exists(providers: ProviderClient, uuid: str) -> bool:
    return bool(providers.list_providers(uuid=uuid))


def test_a_child_dropped_from_the_description_is_deleted(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, kept, dropped = new_uuid(), new_uuid(), new_uuid()
    providers.reconcile(node(root, kept, dropped))
    fake.reset_requests()

    report = providers.reconcile(node(root, kept))

    assert report.deleted == (dropped,)
    assert methods(fake).count("DELETE") == 1
    assert report.requests == len(fake.requests)
    assert not exists(providers, dropped)
    assert exists(providers, kept)


def test_a_dropped_subtree_is_deleted_leaves_first(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, mid, leaf = new_uuid(), new_uuid(), new_uuid()
    specs = [*node(root, mid), ProviderSpec(leaf, "leaf", parent=mid)]
    providers.reconcile(specs)

    report = providers.reconcile(node(root))

    assert report.deleted == (leaf, mid)
    assert [r.status for r in fake.requests if r.method == "DELETE"] == [204, 204]


def test_a_provider_a_described_one_hangs_from_is_kept_though_not_described(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, mid, leaf = new_uuid(), new_uuid(), new_uuid()
    fake.create_provider("cn", root)
    fake.create_provider("mid", mid, parent=root)

    report = providers.reconcile([ProviderSpec(root, "cn"), ProviderSpec(leaf, "leaf", parent=mid)])

    assert report.deleted == ()
    assert exists(providers, mid)


def test_merge_never_deletes_a_provider_of_a_shared_tree(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, theirs = new_uuid(), new_uuid()
    providers.reconcile(node(root))
    fake.create_provider("another-agents-device", theirs, parent=root)

    report = providers.reconcile(node(root), merge=True)

    assert report.deleted == ()
    assert exists(providers, theirs)


def test_children_under_a_provider_the_caller_does_not_describe_are_never_deleted(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    nova_root, mine, theirs = new_uuid(), new_uuid(), new_uuid()
    fake.create_provider("compute-by-nova", nova_root)
    fake.create_provider("their-device", theirs, parent=nova_root)

    report = providers.reconcile([ProviderSpec(mine, "my-device", parent=nova_root)])

    assert report.created == (mine,) and report.deleted == ()
    assert exists(providers, theirs) and exists(providers, nova_root)


def test_a_root_no_longer_described_is_kept_unless_named(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    one, two = new_uuid(), new_uuid()
    providers.reconcile(node(one) + node(two))

    report = providers.reconcile(node(one))

    assert report.deleted == ()
    assert exists(providers, two)


def test_a_named_root_is_deleted_with_its_whole_tree(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    one, two, child = new_uuid(), new_uuid(), new_uuid()
    providers.reconcile(node(one) + node(two, child))

    report = providers.reconcile(node(one), delete_roots=[two])

    assert report.deleted == (child, two)
    assert not exists(providers, two) and not exists(providers, child)
    assert exists(providers, one)


def test_a_named_root_already_gone_is_nothing_to_do(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    one = new_uuid()
    providers.reconcile(node(one))

    report = providers.reconcile(node(one), delete_roots=[new_uuid()])

    assert report.deleted == ()


def test_naming_a_provider_that_is_not_a_root_is_refused_before_any_write(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    theirs_root, theirs_child, mine = new_uuid(), new_uuid(), new_uuid()
    fake.create_provider("theirs", theirs_root)
    fake.create_provider("theirs-child", theirs_child, parent=theirs_root)
    fake.reset_requests()

    with pytest.raises(reportclient.InvalidInput, match=f"{theirs_child}, which is not a root"):
        providers.reconcile(node(mine), delete_roots=[theirs_child])

    assert set(methods(fake)) == {"GET"}
    assert exists(providers, theirs_child)


def test_a_root_both_described_and_named_for_deletion_is_refused_before_any_request(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root = new_uuid()
    with pytest.raises(reportclient.InvalidInput, match="delete_roots names described"):
        providers.reconcile(node(root), delete_roots=[root])
    with pytest.raises(reportclient.InvalidInput, match="delete_roots"):
        providers.reconcile(node(root), delete_roots=root)  # one string, not a list
    assert fake.requests == []


def test_a_dropped_child_with_allocations_is_provider_in_use_after_everything_else(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, busy, idle = new_uuid(), new_uuid(), new_uuid()
    providers.reconcile(node(root, busy, idle))
    fake.put_allocations(new_uuid(), {busy: {"CUSTOM_GPU": 1}})

    with pytest.raises(reportclient.ProviderInUse) as caught:
        providers.reconcile(
            [ProviderSpec(root, f"cn-{root}", inventories={"VCPU": 16})], global_request_id=None
        )

    assert not isinstance(caught.value, reportclient.CannotDeleteParent)
    assert busy in str(caught.value) and f"dev-{busy}" in str(caught.value)
    assert caught.value.status == 409
    assert caught.value.code == "placement.resource_provider.inuse"
    assert f"deleted ['{idle}']" in caught.value.message
    # everything else was done: the field written, the idle child deleted
    assert fake.inventory(root)["VCPU"].total == 16
    assert not exists(providers, idle) and exists(providers, busy)


def test_an_in_use_grandchild_keeps_its_dropped_parent_without_trying_it(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root, mid, leaf = new_uuid(), new_uuid(), new_uuid()
    providers.reconcile(
        [*node(root, mid), ProviderSpec(leaf, "leaf", parent=mid, inventories={"VCPU": 1})]
    )
    fake.put_allocations(new_uuid(), {leaf: {"VCPU": 1}})
    fake.reset_requests()

    with pytest.raises(reportclient.ProviderInUse, match=f"as their ancestors: {mid}"):
        providers.reconcile(node(root))

    assert [r.path.rsplit("/", 1)[1] for r in fake.requests if r.method == "DELETE"] == [leaf]


def test_a_child_moved_from_another_tree_is_re_parented(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    old_root, new_root, child = new_uuid(), new_uuid(), new_uuid()
    providers.reconcile(node(old_root, child))
    fake.reset_requests()

    report = providers.reconcile(node(new_root, child))

    moved = providers.get_provider(child)
    assert (moved.parent_provider_uuid, moved.root_provider_uuid) == (new_root, new_root)
    assert report.created == (new_root,) and report.updated == (child,)
    assert report.deleted == ()  # the old tree is not described: untouched
    assert exists(providers, old_root)
    # list, POST root, POST child (409: the uuid exists elsewhere), GET child, PUT child
    statuses = [(r.method, r.status) for r in fake.requests if r.method != "GET"]
    assert statuses[:3] == [("POST", 200), ("POST", 409), ("PUT", 200)]


def test_a_child_moved_between_two_described_trees_is_re_parented_not_deleted(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    one, two, child = new_uuid(), new_uuid(), new_uuid()
    providers.reconcile(node(one, child) + node(two))

    report = providers.reconcile(node(one) + node(two, child))

    assert report.updated == (child,) and report.deleted == ()
    assert providers.get_provider(child).parent_provider_uuid == two


def test_re_parenting_below_1_37_is_refused_before_any_write(fake: FakePlacement) -> None:
    one, two, child = new_uuid(), new_uuid(), new_uuid()
    providers_on(fake).reconcile(node(one, child) + node(two))
    providers = providers_on(fake, microversion="1.36")
    fake.reset_requests()

    with pytest.raises(reportclient.MicroversionUnsupported, match=r"needs microversion 1\.37"):
        providers.reconcile(node(one) + node(two, child))

    assert set(methods(fake)) == {"GET"}
    assert providers.get_provider(child).parent_provider_uuid == one


def test_re_parenting_from_a_tree_not_listed_below_1_37_is_refused_before_the_put(
    fake: FakePlacement,
) -> None:
    old_root, new_root, child = new_uuid(), new_uuid(), new_uuid()
    providers_on(fake).reconcile(node(old_root, child))
    providers = providers_on(fake, microversion="1.36")
    fake.reset_requests()

    with pytest.raises(reportclient.MicroversionUnsupported, match=f"provider {child}"):
        providers.reconcile(node(new_root, child))

    assert "PUT" not in methods(fake)


def test_a_root_may_become_a_child_below_1_37(fake: FakePlacement) -> None:
    root, other = new_uuid(), new_uuid()
    fake.create_provider("other", other)
    providers = providers_on(fake, microversion="1.36")

    providers.reconcile([ProviderSpec(root, "root"), ProviderSpec(other, "other", parent=root)])

    assert providers.get_provider(other).root_provider_uuid == root


def test_a_name_held_by_another_uuid_is_duplicate_name_naming_the_holder(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    holder = fake.create_provider("compute-1", new_uuid())
    mine = new_uuid()

    with pytest.raises(reportclient.DuplicateName, match=f"provider {holder}") as caught:
        providers.reconcile([ProviderSpec(mine, "compute-1")])

    assert caught.value.status == 409 and caught.value.code == "placement.duplicate_name"
    assert mine in caught.value.message


def test_a_rename_to_a_held_name_is_duplicate_name_naming_the_holder(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    root = new_uuid()
    providers.reconcile(node(root))
    holder = fake.create_provider("taken", new_uuid())

    with pytest.raises(reportclient.DuplicateName, match=f"provider {holder}"):
        providers.reconcile([ProviderSpec(root, "taken")])


# -- which providers a prune deletes, as a table ------------------------------------------
R, A, B, C, X, Y = "r", "a", "b", "c", "x", "y"


@pytest.mark.parametrize(
    ("parents", "described", "owned", "doomed"),
    [
        pytest.param({R: None, A: R}, {R, A}, {R}, [], id="all-described"),
        pytest.param({R: None, A: R, B: A}, {R}, {R}, [B, A], id="leaves-first"),
        pytest.param({R: None, A: R, B: A}, {R, B}, {R}, [], id="ancestor-of-described-kept"),
        pytest.param({R: None, A: R}, {R}, set(), [], id="root-not-owned"),
        pytest.param({X: None, Y: X}, {A}, {R}, [], id="other-tree"),
        pytest.param({A: X, B: A}, {A}, {A}, [], id="hangs-from-unlisted"),
        pytest.param({R: None, A: R, C: None}, {R}, {R, C}, [A, C], id="named-root"),
        pytest.param({R: None, A: None, B: A}, {R, A}, {R}, [], id="moved-out-re-rooted"),
    ],
)
def test_doomed_is_the_owned_undescribed_deepest_first(
    parents: dict[str, str | None], described: set[str], owned: set[str], doomed: list[str]
) -> None:
    assert doomed_providers(parents, described, owned) == doomed
