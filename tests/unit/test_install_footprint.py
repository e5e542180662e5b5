"""Installing reportclient costs what the client needs, and the fake costs nothing until asked for.

Each check runs in a fresh interpreter: this suite's own process has long
since imported the fake.
"""

from __future__ import annotations

import configparser
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: What only the fake Placement needs (the ``fixture`` extra), and the fake itself.
FAKE_ONLY = (
    "jsonschema",
    "webob",
    "microversion_parse",
    "os_traits",
    "os_resource_classes",
    "fixtures",
    "reportclient.fixture",
)


def python(code: str, *, block: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new interpreter on this checkout, with ``block`` made unimportable."""
    prelude = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in block)
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def imported_after(statement: str) -> set[str]:
    """The top-level module names (and reportclient's subpackages) ``statement`` imports."""
    run = python(
        f"""
        {statement}
        import json
        names = set()
        for name in sys.modules:
            names.add(name.partition(".")[0])
            if name.startswith("reportclient."):
                names.add(".".join(name.split(".")[:2]))
        print(json.dumps(sorted(names)))
        """
    )
    assert run.returncode == 0, run.stderr
    return set(json.loads(run.stdout))


@pytest.mark.parametrize(
    "statement",
    ["import reportclient", "import reportclient.config", "from reportclient import errors, retry"],
)
def test_the_client_imports_nothing_the_fake_needs(statement):
    assert imported_after(statement).isdisjoint(FAKE_ONLY)


def test_loading_the_pytest_plugin_imports_neither_the_fake_nor_its_dependencies():
    loaded = imported_after("import reportclient.fixture.pytest_plugin")

    assert loaded.isdisjoint(set(FAKE_ONLY) - {"reportclient.fixture"})
    assert "reportclient.fixture._fake" not in loaded


def test_install_requires_is_only_what_the_client_imports():
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    lines = setup["options"]["install_requires"].splitlines()
    names = {
        line.split(">")[0].split("=")[0].split("<")[0].strip().lower()
        for line in lines
        if line.strip() and not line.strip().startswith("#")
    }

    assert names == {"requests", "keystoneauth1", "tenacity", "urllib3"}


def test_the_fixture_extra_holds_what_the_fake_imports():
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    extras = setup["options.extras_require"]

    fixture = extras["fixture"]
    for name in ("jsonschema", "microversion-parse", "os-traits", "os-resource-classes", "WebOb"):
        assert name in fixture
    assert "reportclient[fixture]" in extras["test"]
    assert "pytest11" not in setup["options.entry_points"]


@pytest.mark.parametrize("missing", ["jsonschema", "os_traits", "microversion_parse"])
def test_the_fake_without_its_extra_says_what_to_install(missing):
    run = python("from reportclient.fixture import FakePlacement", block=(missing,))

    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: the fake Placement"), run.stderr
    assert f"needs {missing}" in last
    assert "pip install 'reportclient[fixture]'" in last


def test_the_fake_clock_needs_no_extra():
    run = python(
        "from reportclient.fixture import FakeClock; print(FakeClock()())", block=("jsonschema",)
    )

    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "1000.0"


def test_a_pytest_run_that_asks_for_the_fake_without_the_extra_errors_saying_what_to_install(
    tmp_path,
):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(
        "import sys\n"
        "sys.modules['jsonschema'] = None\n"
        "pytest_plugins = ['reportclient.fixture.pytest_plugin']\n"
    )
    (tmp_path / "test_uses_fake.py").write_text(
        "def test_other():\n    pass\n\n\ndef test_fake(fake_placement):\n    pass\n"
    )

    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        # Other installed plugins are no part of what is checked.
        env={"PYTHONPATH": str(ROOT), "PATH": "", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert "1 passed, 1 error" in run.stdout, run.stdout + run.stderr
    assert "pip install 'reportclient[fixture]'" in run.stdout


def test_demo_on_the_fake_without_the_extra_says_what_to_install():
    run = python(
        "from reportclient._cli import main; sys.exit(main(['demo', '--placement', 'fake']))",
        block=("jsonschema",),
    )

    assert run.returncode == 2
    assert "pip install 'reportclient[fixture]'" in run.stderr
    assert "Traceback" not in run.stderr


def test_demo_on_the_embedded_placement_without_the_extra_says_what_to_install():
    run = python("from reportclient._cli import main; sys.exit(main(['demo']))", block=("oslo_db",))

    assert run.returncode == 2
    assert "pip install 'reportclient[placement]'" in run.stderr
    assert "oslo_db" in run.stderr
    assert "Traceback" not in run.stderr
