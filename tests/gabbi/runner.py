"""Run Placement's gabbi files and sort every test into passed, not modelled or failed.

A test is "not modelled" only when one of its requests got 501 from the fake:
the fake's rule is to answer 501 for a route of the real service it does not
model, so a 501 says "out of scope", while any other wrong answer is a bug.
"""

from __future__ import annotations

import time
import unittest
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import placement
from gabbi import handlers, suitemaker, utils

from tests.gabbi import wsgi

__all__ = [
    "FAILED",
    "GABBITS",
    "NOT_MODELLED",
    "PASSED",
    "RESULTS",
    "FileResult",
    "Outcome",
    "format_table",
    "last_lines",
    "run_file",
    "yaml_files",
]

GABBITS = Path(placement.__file__).parent / "tests" / "functional" / "gabbits"

PASSED, NOT_MODELLED, FAILED = "passed", "not modelled", "failed"
#: What a pytest run collected, by file name, for the summary table.
RESULTS: dict[str, FileResult] = {}


@dataclass
class Outcome:
    """One gabbi test: its name, verdict and, unless it passed, why."""

    name: str
    verdict: str
    detail: str = ""


@dataclass
class FileResult:
    """The outcomes of one YAML file, in file order, and the time it took."""

    name: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, verdict: str) -> int:
        return sum(1 for o in self.outcomes if o.verdict == verdict)


class _Sorter(unittest.TestResult):
    """Sorts each finished gabbi test by what it saw from the fake."""

    def __init__(self, track_501: bool) -> None:
        super().__init__()
        self.track_501 = track_501
        self.outcomes: list[Outcome] = []
        self._failure: str | None = None
        self._classes: dict[str, str] = {}

    def startTest(self, test: unittest.TestCase) -> None:  # noqa: N802 - unittest API
        super().startTest(test)
        wsgi.reset_not_modelled()
        self._failure = None

    def _fail(self, test: unittest.TestCase, err: Any) -> None:
        self._failure = self._exc_info_to_string(err, test)

    addFailure = addError = _fail  # noqa: N815 - unittest API

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:  # noqa: N802
        # gabbi skips every test of a file whose fixture failed, after adding
        # the fixture's error to the first test: count them all as failed.
        super().addSkip(test, reason)
        name = str(getattr(test, "test_data", {}).get("name", test.id()))
        self.outcomes.append(Outcome(name, FAILED, f"{reason}: {self._failure}"))

    def stopTest(self, test: unittest.TestCase) -> None:  # noqa: N802 - unittest API
        super().stopTest(test)
        name = str(getattr(test, "test_data", {}).get("name", test.id()))
        unserved = wsgi.reset_not_modelled() if self.track_501 else []
        if self._failure is None:
            self.outcomes.append(Outcome(name, PASSED))
        elif unserved:
            self.outcomes.append(Outcome(name, NOT_MODELLED, "501 for " + ", ".join(unserved)))
        elif self.track_501 and self._unbuildable(self._failure):
            detail = "request built from an unmodelled answer"
            self.outcomes.append(Outcome(name, NOT_MODELLED, detail))
        else:
            self.outcomes.append(Outcome(name, FAILED, self._failure))
        self._classes[type(test).__name__] = self.outcomes[-1].verdict

    def _unbuildable(self, failure: str) -> bool:
        """Whether the test never sent its request for want of an unmodelled answer.

        gabbi fails a test whose URL or body refers to an earlier answer
        ($RESPONSE, $LOCATION, $LAST_URL...) it cannot read: that answer was a
        501, or the earlier test itself never got that far for the same reason.
        """
        if "unable to replace" not in failure or "data unavailable" not in failure:
            return False
        if "'status': 501" in failure:
            return True
        return any(
            f"'{cls}' object has no attribute" in failure
            for cls, verdict in self._classes.items()
            if verdict == NOT_MODELLED
        )


def yaml_files(names: Iterable[str] = ()) -> list[Path]:
    """The gabbi files shipped with Placement, or those of them named (stem or file name)."""
    wanted = {n.removesuffix(".yaml") for n in names}
    return [p for p in sorted(GABBITS.glob("*.yaml")) if not wanted or p.stem in wanted]


def run_file(
    path: Path,
    fixture_module: ModuleType,
    intercept: Callable[[], Any],
    *,
    track_501: bool = True,
) -> FileResult:
    """Run one YAML file as gabbi's ``build_tests`` would, against the app ``intercept`` builds."""
    # build_tests reads a whole directory; this is its body for one file.
    handler_objects = [handler() for handler in handlers.RESPONSE_HANDLERS]
    suite = suitemaker.test_suite_from_dict(
        unittest.TestLoader(),
        path.stem,
        utils.load_yaml(yaml_file=str(path)),
        str(path.parent),
        str(uuid.uuid4()),  # gabbi's host name for an intercepted app
        8001,
        fixture_module,
        intercept,
        handlers=handler_objects,
        test_loader_name="gabbi",
    )
    sorter = _Sorter(track_501)
    started = time.perf_counter()
    suite.run(sorter)
    return FileResult(path.name, sorter.outcomes, time.perf_counter() - started)


def format_table(results: list[FileResult]) -> str:
    """The per-file table: file, tests, passed, not modelled, failed; totals last."""
    head = ("file", "tests", "passed", "not modelled", "failed")
    rows = [
        (r.name, len(r.outcomes), r.count(PASSED), r.count(NOT_MODELLED), r.count(FAILED))
        for r in results
    ]
    totals = tuple(sum(int(row[i]) for row in rows) for i in range(1, 5))
    rows.append((f"total ({len(results)} files)", *totals))
    width = max(len(head[0]), *(len(str(r[0])) for r in rows))
    lines = [f"{head[0]:<{width}}  {head[1]:>5}  {head[2]:>6}  {head[3]:>12}  {head[4]:>6}"]
    lines.append("-" * len(lines[0]))
    for i, (name, *nums) in enumerate(rows):
        if i == len(rows) - 1:
            lines.append("-" * len(lines[0]))
        lines.append(f"{name:<{width}}  {nums[0]:>5}  {nums[1]:>6}  {nums[2]:>12}  {nums[3]:>6}")
    return "\n".join(lines)


def last_lines(trace: str, n: int = 12) -> str:
    """The end of a failure's traceback: gabbi's assertion and the response it saw."""
    lines = [line for line in trace.splitlines() if line.strip()]
    return "\n".join(lines[-n:])
