"""Placement's own gabbi files, shipped in the openstack-placement wheel, against the fake.

One test per YAML file. A file passes when each of its gabbi tests passed or
was "not modelled" (one of its requests got the fake's 501, or it was built
from such an answer); any other failure fails the file and is listed with
gabbi's assertion. The per-file table is printed at the end of the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gabbi import fixtures, runner, wsgi


@pytest.mark.parametrize("path", runner.yaml_files(), ids=lambda p: p.stem)
def test_gabbi_file_passes_on_the_routes_the_fake_models(path: Path) -> None:
    result = runner.run_file(path, fixtures, wsgi.app_factory)
    runner.RESULTS[path.name] = result
    failed = [o for o in result.outcomes if o.verdict == runner.FAILED]
    if failed:
        report = "\n\n".join(f"--- {o.name}\n{runner.last_lines(o.detail)}" for o in failed)
        pytest.fail(f"{len(failed)} of {len(result.outcomes)} failed:\n{report}", pytrace=False)
    if result.outcomes and result.count(runner.NOT_MODELLED) == len(result.outcomes):
        pytest.skip("every test of this file needs a route the fake does not model")
