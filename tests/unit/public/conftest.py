"""The public face's tests share the sample configuration oslo-config-generator writes."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def sample_conf(tmp_path: Path) -> str:
    """What ``oslo-config-generator --namespace reportclient`` writes."""
    generator = pytest.importorskip("oslo_config.generator")
    out = tmp_path / "sample.conf"
    generator.main(["--namespace", "reportclient", "--output-file", str(out)])
    return out.read_text()
