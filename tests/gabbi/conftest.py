"""Skip the gabbi suite where gabbi or Placement's test files are missing; print the table."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("gabbi", reason="gabbi runs Placement's YAML tests (tox -e gabbi)")
pytest.importorskip(
    "placement.tests.functional.fixtures.gabbits", reason="needs openstack-placement"
)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.gabbi import runner

    if runner.RESULTS:
        results = [runner.RESULTS[name] for name in sorted(runner.RESULTS)]
        terminalreporter.write_sep("=", "Placement's gabbi files against the fake")
        terminalreporter.write_line(runner.format_table(results))
        seconds = sum(r.seconds for r in results)
        terminalreporter.write_line(f"({seconds:.1f} s inside the files)")
