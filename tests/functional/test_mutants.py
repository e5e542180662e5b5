"""Each scenario test of the one-engine issue catches its fix reverted alone.

A test that passes whether or not the code is right proves nothing, so each
fix is put back the way it was (``tests/support/mutants.py``) and the scenario it
was written for runs against the real Placement in a subprocess: it must
fail. The same scenarios pass in the ordinary run of this suite. Where two rules
of the engine guard one history, both are reverted: either alone still
stops it, which is the point of having both.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = "tests/functional/test_incarnations.py"

CASES = [
    ("field-ignores-premise", "test_lost_inventory_add_then_provider_recreated"),
    ("consumer-ignores-premise", "test_lost_add_then_consumer_deleted_and_reclaimed"),
    # The fate rule and the release's own no-clobber rule both stop it.
    ("consumer-ignores-premise+release-empties-what-it-finds", "test_lost_release_then_consumer"),
    ("missing-proves-a-create-pending", "test_lost_write_many_then_new_consumer_deleted"),
    # The fate rule, and "ends while a write is open" (NothingToMove) both stop it.
    (
        "missing-proves-a-create-pending+callback-errors-pass-through",
        "test_lost_move_then_target_deleted",
    ),
    ("move-adds-to-a-missing-target", "test_move_expecting_a_target_released_meanwhile"),
    ("callback-errors-pass-through", "test_slow_write_landing_after_the_reread"),
    ("cache-takes-the-last-answer", "test_late_read_answer_does_not_roll_back"),
    ("reshape-leaves-the-consumer-cache", "test_claim_after_its_own_reshape"),
    ("callbacks-unchecked", "test_inventory_mutator_returning_nonsense"),
]


def run_under(mutant: str, path: str, selector: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REPORTCLIENT_MUTANT": mutant, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", path, "-k", selector, "-p", "tests.support.mutants", "-q",
         "-p", "no:cacheprovider", "-x"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(("mutant", "selector"), CASES, ids=[f"{m}:{s}" for m, s in CASES])
def test_the_scenario_fails_with_its_fix_reverted(mutant: str, selector: str) -> None:
    done = run_under(mutant, SCENARIOS, selector)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 1, f"{selector} under {mutant}: {summary}"
    assert " failed" in summary and "error" not in summary, summary
