"""Progress lines: what a long bench says on stderr as it goes, and ``--quiet``."""

from __future__ import annotations

import io

from bench.support.progress import Progress, duration


class Clock:
    """Seconds that pass only when the test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_each_finished_step_says_how_far_elapsed_and_about_how_long_is_left() -> None:
    clock, out = Clock(), io.StringIO()
    progress = Progress("fleet", 10, "periods", stream=out, clock=clock)
    clock.now += 30
    progress.done("create rc agent: 8.65 req/agent-period")
    clock.now += 90
    progress.done("settle rc agent: 1.33 req/agent-period", units=4)
    assert out.getvalue().splitlines() == [
        "  [      30 s] fleet 1/10 periods: create rc agent: 8.65 req/agent-period;"
        " about 4 min 30 s left",
        "  [2 min 00 s] fleet 5/10 periods: settle rc agent: 1.33 req/agent-period;"
        " about 2 min 00 s left",
    ]


def test_the_last_step_estimates_nothing_left() -> None:
    clock, out = Clock(), io.StringIO()
    progress = Progress("claims", 2, stream=out, clock=clock)
    progress.done("first")
    clock.now += 5
    progress.done("second")
    assert out.getvalue().splitlines()[-1] == "  [       5 s] claims 2/2 cells: second"


def test_a_step_announced_as_it_begins_counts_the_one_before_it_done() -> None:
    clock, out = Clock(), io.StringIO()
    progress = Progress("run", 3, "workloads", stream=out, clock=clock)
    progress.begin("workload 5")
    clock.now += 20
    progress.begin("workload 6")
    progress.note("workload 6: 10/40 instances")
    assert out.getvalue().splitlines() == [
        "  [       0 s] run 0/3 workloads: workload 5",
        "  [      20 s] run 1/3 workloads: workload 6; about 40 s left",
        "  [      20 s] run workload 6: 10/40 instances",
    ]


def test_quiet_prints_nothing() -> None:
    out = io.StringIO()
    progress = Progress("overlap", 2, quiet=True, stream=out, clock=Clock())
    progress.begin("a")
    progress.done("b")
    progress.note("c")
    assert out.getvalue() == ""


def test_durations_read_as_a_person_would_say_them() -> None:
    assert [duration(s) for s in (0, 59.4, 61, 3599, 3725)] == [
        "0 s",
        "59 s",
        "1 min 01 s",
        "59 min 59 s",
        "1 h 02 min",
    ]
