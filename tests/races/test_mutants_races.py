"""Scenario 10 catches its fix reverted: ratios compared as sent, not as MariaDB stores them.

The twin of ``tests/functional/test_mutants.py`` for the scenario that needs
MariaDB's single-precision FLOAT column.
"""

from __future__ import annotations

import pytest

from tests.functional.test_mutants import run_under

CASES = [
    ("ratio-compared-as-sent", "test_lost_inventory_add_with_a_float_ratio"),
    ("ratio-compared-as-sent", "test_reconcile_of_a_float_ratio_twice"),
]


@pytest.mark.parametrize(("mutant", "selector"), CASES, ids=[s for _, s in CASES])
def test_the_float_scenario_fails_with_its_fix_reverted(mutant: str, selector: str) -> None:
    done = run_under(mutant, "tests/races/test_float_columns.py", selector)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 1, f"{selector} under {mutant}: {summary}"
    assert " failed" in summary and "error" not in summary, summary
