"""The gateway's provider records: which providers make up a tree, as answers proved it."""

from __future__ import annotations

import uuid

from reportclient._gateway.provider_records import ProviderRecords
from reportclient._model.providers import ResourceProvider


def rp(name: str, uid: str, parent: str | None = None, root: str | None = None) -> ResourceProvider:
    return ResourceProvider(uid, name, 0, parent, root or uid)


def ids(n: int) -> list[str]:
    return [str(uuid.UUID(int=i + 1)) for i in range(n)]


def test_a_tree_listing_proves_its_tree_whole_parents_first() -> None:
    root, child, grandchild = ids(3)
    records = ProviderRecords()
    sent = records.ticket()
    records.listed(
        root,
        [rp("gc", grandchild, child, root), rp("cn", root), rp("dev", child, root, root)],
        sent,
    )
    assert [p.uuid for p in records.tree(root) or []] == [root, child, grandchild]


def test_a_tree_no_listing_proved_is_not_whole_even_when_its_members_were_read() -> None:
    root, child = ids(2)
    records = ProviderRecords()
    records.put([rp("cn", root), rp("dev", child, root, root)])
    assert records.tree(root) is None
    assert records.get(child) == rp("dev", child, root, root)


def test_a_listing_drops_the_members_it_no_longer_shows() -> None:
    root, child = ids(2)
    records = ProviderRecords()
    records.listed(root, [rp("cn", root), rp("dev", child, root, root)], records.ticket())
    records.listed(root, [rp("cn", root)], records.ticket())
    assert [p.uuid for p in records.tree(root) or []] == [root]
    assert records.get(child) is None


def test_a_listing_that_overlapped_a_create_is_dropped_and_the_create_kept() -> None:
    root, child = ids(2)
    records = ProviderRecords()
    records.listed(root, [rp("cn", root)], records.ticket())
    listing_sent = records.ticket()  # sent before the create answered
    records.created(rp("dev", child, root, root), records.ticket())
    records.listed(root, [rp("cn", root)], listing_sent)  # answered after: it predates the create
    assert [p.uuid for p in records.tree(root) or []] == [root, child]


def test_a_create_under_a_whole_tree_keeps_it_whole_and_a_new_root_starts_one() -> None:
    root, child, other = ids(3)
    records = ProviderRecords()
    records.listed(root, [rp("cn", root)], records.ticket())
    records.created(rp("dev", child, root, root), records.ticket())
    records.created(rp("other", other), records.ticket())
    assert [p.uuid for p in records.tree(root) or []] == [root, child]
    assert [p.uuid for p in records.tree(other) or []] == [other]


def test_an_answered_delete_keeps_the_tree_whole_a_lost_one_does_not() -> None:
    root, child, other = ids(3)
    records = ProviderRecords()
    records.listed(root, [rp("cn", root), rp("dev", child, root, root)], records.ticket())
    records.dropped(child, answered=True)
    assert [p.uuid for p in records.tree(root) or []] == [root]
    records.created(rp("dev", other, root, root), records.ticket())
    records.dropped(other, answered=False)
    assert records.tree(root) is None


def test_a_provider_moved_to_another_tree_leaves_neither_whole() -> None:
    root, child, other = ids(3)
    records = ProviderRecords()
    records.listed(root, [rp("cn", root), rp("dev", child, root, root)], records.ticket())
    records.listed(other, [rp("other", other)], records.ticket())
    records.put([rp("dev", child, other, other)], records.ticket())
    assert records.tree(root) is None
    assert records.tree(other) is None


def test_clear_drops_everything_and_answers_sent_before_it() -> None:
    root = ids(1)[0]
    records = ProviderRecords()
    sent = records.ticket()
    records.clear()
    records.listed(root, [rp("cn", root)], sent)
    assert records.tree(root) is None
    assert records.get(root) is None
