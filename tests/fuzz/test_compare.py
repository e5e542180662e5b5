"""What the differential comparison treats as the same detail, and what it does not.

Only text Placement builds from a set of strings (so in the process's
string-hash order) is compared sorted; every other list keeps its order.
"""

from __future__ import annotations

import pytest

from tests.fuzz._compare import Renamer

_BAD_GROUPS = (
    "Resourceless suffixed group request should be specified in `same_subtree` "
    "query param: bad group(s) - {}."
)
_NOT_FOUND = "Real suffixes should be specified in `same_subtree`: {} not found in {}."


@pytest.mark.parametrize(
    ("real", "fake", "same"),
    [
        # Set-ordered on Placement: equal in any order.
        (_BAD_GROUPS.format("['_NET', '1']"), _BAD_GROUPS.format("['1', '_NET']"), True),
        (
            _NOT_FOUND.format("['_B', '_A']", "['', '_C']"),
            _NOT_FOUND.format("['_A', '_B']", "['', '_C']"),
            True,
        ),
        ("No such trait CUSTOM_B, CUSTOM_A", "No such trait CUSTOM_A, CUSTOM_B", True),
        # Kept in an order Placement keeps: a different order is a difference.
        (
            _NOT_FOUND.format("['_A']", "['', '_C']"),
            _NOT_FOUND.format("['_A']", "['_C', '']"),
            False,
        ),
        (
            "Unable to allocate inventory: Inventory for 'VCPU, MEMORY_MB' on",
            "Unable to allocate inventory: Inventory for 'MEMORY_MB, VCPU' on",
            False,
        ),
        (_BAD_GROUPS.format("['1']"), _BAD_GROUPS.format("['2']"), False),
    ],
)
def test_only_set_ordered_lists_compare_sorted(real: str, fake: str, same: bool) -> None:
    names = frozenset[str]()
    assert (Renamer(names).text(real) == Renamer(names).text(fake)) is same
