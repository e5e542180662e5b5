"""The fake and the real Placement, fed the same random request sequences, must agree.

``FUZZ_EXAMPLES`` sets how many sequences to draw (default 400, sized for CI: about
three minutes on two cores;
the nightly run is ``FUZZ_EXAMPLES=4000 tox -e fuzz``);
``FUZZ_SEED`` draws them from a different fixed seed; ``FUZZ_RANDOM=1``
draws new ones each run. A failure is shrunk to the shortest sequence
that still disagrees and printed request by request, with what differed.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.fuzz._backends import FakeSide
from tests.fuzz._run import run_sequence
from tests.fuzz._steps import PROLOGUES, steps

_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "400"))
_RANDOM = os.environ.get("FUZZ_RANDOM") == "1"
_SEED = int(os.environ.get("FUZZ_SEED", "20260"))


@seed(_SEED)
@settings(
    max_examples=_EXAMPLES,
    derandomize=not _RANDOM and "FUZZ_SEED" not in os.environ,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    prologue=st.sampled_from(sorted(PROLOGUES)),
    sequence=st.lists(steps(), min_size=1, max_size=20),
)
def test_fake_answers_every_sequence_as_placement_does(
    real_side: Any, prologue: str, sequence: Any
) -> None:
    # The fake's default, shuffled candidate order (seeded, so a run replays).
    run_sequence(real_side, FakeSide(seed=_SEED), sequence, prologue=prologue)
