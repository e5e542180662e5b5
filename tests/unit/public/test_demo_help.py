"""``reportclient demo --help`` names the extra each kind of Placement needs, as the demo does."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from reportclient import _cli

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_the_help_names_the_extra_of_each_placement(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        _cli.main(["demo", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())

    assert "reportclient[placement]" in text
    assert "reportclient[fixture]" in text
    assert "no extra dependencies" not in text


def test_the_fake_without_the_fixture_extra_exits_2_naming_it() -> None:
    """What the help promises: without the extra, a sentence and status 2, no traceback."""
    code = (
        "import sys\n"
        "sys.modules['jsonschema'] = None\n"  # the fixture extra, as if not installed
        "from reportclient._cli import main\n"
        "sys.exit(main(['demo', '--placement', 'fake']))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert run.returncode == 2, run.stderr
    assert "pip install 'reportclient[fixture]'" in run.stderr
    assert "Traceback" not in run.stderr
