"""The ordering rule for overlapping answers, as a table (like test_fate.py for the fate rule)."""

from __future__ import annotations

import pytest

from reportclient._gateway.ordering import Order, Version, order

MISSING = Version(False, None)
MISSING_MINE = Version(False, None, written=True)


def at(generation: int, mine: bool = False) -> Version:
    return Version(True, generation, written=mine)


R, K, DN, DO = Order.REPLACE, Order.KEEP, Order.DOUBT_NEW, Order.DOUBT_OLD
NN, NO = Order.NEWER_NEW, Order.NEWER_OLD

# (why, overlapped, old, new, same content, verdict)
ROWS = [
    ("sent after the entry arrived: newer, whatever it shows", False, at(5), at(1), False, R),
    ("sent after, a missing consumer after a create", False, at(1, True), MISSING, False, R),
    ("sent after, nothing stored", False, None, at(3), False, R),
    ("overlapping a forget: cannot be ordered", True, None, at(3), False, DN),
    ("overlapping, the same state", True, at(4), at(4), True, K),
    ("overlapping, both missing", True, MISSING, MISSING, False, K),
    ("overlapping, same generation, other content (re-created)", True, at(4), at(4), False, DO),
    ("our create, then an older read showing missing", True, at(1, True), MISSING, False, DO),
    ("a read showing missing, then our older create", True, MISSING, at(1, True), False, DN),
    ("our release, then a read from before it", True, MISSING_MINE, at(4), False, DO),
    ("a read, then our release sent before it", True, at(4), MISSING_MINE, False, DN),
    ("our write, then another writer's later state read", True, at(2, True), at(3), False, NN),
    ("our write, then a read from before it", True, at(2, True), at(1), False, NO),
    ("a read, then our write sent before it", True, at(1), at(2, True), False, NN),
    ("two reads: the higher generation is the later", True, at(2), at(3), False, NN),
    ("two reads: a lower generation leaves the higher", True, at(3), at(2), False, NO),
    ("two reads: existing is kept over missing", True, MISSING, at(2), False, DN),
    ("two reads: missing leaves the existing", True, at(2), MISSING, False, DO),
]  # fmt: skip


@pytest.mark.parametrize(
    ("overlapped", "old", "new", "same", "verdict"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_ordering_rule(
    overlapped: bool, old: Version | None, new: Version, same: bool, verdict: Order
) -> None:
    assert order(overlapped=overlapped, old=old, new=new, same=same) is verdict


def test_only_an_answer_sent_after_the_entry_is_ever_stored_trusted() -> None:
    """The invariant's premise: every overlapping verdict is KEEP or a doubt."""
    for _why, overlapped, old, new, same, _verdict in ROWS:
        got = order(overlapped=overlapped, old=old, new=new, same=same)
        assert (got is Order.REPLACE) == (not overlapped)
