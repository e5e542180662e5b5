"""Packaged the OpenStack way: pbr reads setup.cfg and git, and the version is the metadata's."""

from __future__ import annotations

import configparser
import importlib.metadata
import pathlib

import reportclient

ROOT = pathlib.Path(__file__).resolve().parents[3]


def setup_cfg() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser


def test_the_version_is_the_installed_metadatas() -> None:
    assert reportclient.__version__ == importlib.metadata.version("reportclient")


def test_setup_py_hands_everything_to_pbr() -> None:
    source = (ROOT / "setup.py").read_text()
    assert 'setuptools.setup(setup_requires=["pbr"], pbr=True)' in source


def test_the_build_backend_is_pbrs_and_no_version_is_written_down() -> None:
    # tomllib is 3.11's; the two lines are plain enough to find as text.
    build = (ROOT / "pyproject.toml").read_text().split("[build-system]", 1)[1]
    assert 'requires = ["pbr>=' in build
    assert 'build-backend = "pbr.build"' in build
    assert "version" not in setup_cfg()["metadata"]


def test_python_310_to_313_are_supported() -> None:
    cfg = setup_cfg()
    assert cfg["options"]["python_requires"] == ">=3.10"
    classifiers = cfg["metadata"]["classifiers"]
    for minor in (10, 11, 12, 13):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers


def test_unreleased_changes_are_reno_notes_and_the_changelog_keeps_releases() -> None:
    notes = sorted((ROOT / "releasenotes" / "notes").glob("*.yaml"))
    assert notes
    for note in notes:
        # reno's names: a slug and 16 hex digits, so that two branches never collide.
        slug, _, suffix = note.stem.rpartition("-")
        assert slug and len(suffix) == 16 and int(suffix, 16) >= 0, note.name
        assert note.read_text().startswith("---\n"), note.name
    changelog = (ROOT / "CHANGELOG.rst").read_text()
    assert "Unreleased" not in changelog
    assert "\n0.1.0\n=====\n" in changelog
