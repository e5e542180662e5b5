"""Print the gabbi conformance table of the fake, or time the same files on the real Placement.

    python -m tests.gabbi.report                 # every file against the fake
    python -m tests.gabbi.report --failures      # ... and what failed, test by test
    python -m tests.gabbi.report --real          # the same files against Placement itself
    python -m tests.gabbi.report inventory usage # only these files

``--real`` serves Placement's own WSGI app with Placement's own fixtures
(in-memory SQLite), as its functional test suite does; it needs the test
dependencies Placement does not declare (gabbi, oslotest, wsgi-intercept).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from types import ModuleType
from typing import Any

from tests.gabbi import runner


def _target(real: bool) -> tuple[ModuleType, Any]:
    if real:
        module = importlib.import_module("placement.tests.functional.fixtures.gabbits")
        return module, module.setup_app
    from tests.gabbi import fixtures, wsgi

    return fixtures, wsgi.app_factory


def main(argv: list[str] | None = None) -> int:
    """Run the files, print the table; exit 1 if any test failed (501s excepted)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="YAML file names or stems (default: all)")
    parser.add_argument("--real", action="store_true", help="run against the real Placement")
    parser.add_argument("--failures", action="store_true", help="list each failed test")
    args = parser.parse_args(argv)
    fixture_module, intercept = _target(args.real)
    started = time.perf_counter()
    results = [
        runner.run_file(path, fixture_module, intercept, track_501=not args.real)
        for path in runner.yaml_files(args.files)
    ]
    elapsed = time.perf_counter() - started
    print(runner.format_table(results))
    target = "the real Placement (in-memory SQLite)" if args.real else "the fake"
    print(f"\n{sum(len(r.outcomes) for r in results)} tests against {target} in {elapsed:.1f} s")
    failed = [(r.name, o) for r in results for o in r.outcomes if o.verdict == runner.FAILED]
    if args.failures:
        for name, outcome in failed:
            print(f"\n--- {name}: {outcome.name}\n{runner.last_lines(outcome.detail)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
