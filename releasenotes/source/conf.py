"""Sphinx configuration of the release notes (``tox -e releasenotes``), as OpenStack builds them."""

from __future__ import annotations

project = "reportclient release notes"
copyright = "reportclient contributors"
extensions = ["reno.sphinxext"]
exclude_patterns: list[str] = []
html_theme = "alabaster"
html_static_path: list[str] = []
