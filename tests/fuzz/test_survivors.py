"""The run's survivors check: a limited candidates answer is judged by Placement's full one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fuzz._backends import FakeSide
from tests.fuzz._run import COVERAGE, Disagreement, run_sequence
from tests.fuzz._steps import Step


def _limited(query: str) -> Step:
    return Step("GET /allocation_candidates", "1.39", (("query", query),))


def test_shuffled_survivors_of_a_limit_pass_when_placement_would_answer_them(
    real_side: Any,
) -> None:
    before = COVERAGE.survivors_checked
    for seed in range(6):
        run_sequence(real_side, FakeSide(seed=seed), [_limited("?resources=VCPU:1&limit=1")])
    # Two providers have VCPU: a shuffled fake keeps the other one about half the time.
    assert COVERAGE.survivors_checked > before


def test_a_survivor_placement_would_not_answer_is_a_disagreement(real_side: Any) -> None:
    class Broken(FakeSide):
        def send(self, request: Any) -> Any:
            answer = super().send(request)
            if request.path.startswith("/allocation_candidates"):
                return type(answer)(
                    answer.status, answer.headers, answer.body.replace(b"1}", b"3}")
                )
            return answer

    with pytest.raises(Disagreement):
        for seed in range(6):
            run_sequence(real_side, Broken(seed=seed), [_limited("?resources=VCPU:1&limit=1")])
