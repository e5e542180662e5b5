"""Sphinx configuration for the reportclient documentation (``tox -e docs``)."""

from __future__ import annotations

import reportclient

project = "reportclient"
copyright = "reportclient contributors"
# pbr's version from git tags, as the installed package's metadata has it.
version = release = reportclient.__version__

# reno.sphinxext renders the unreleased notes (releasenotes/notes) on the changelog page.
extensions = ["sphinx.ext.autodoc", "reno.sphinxext"]

# No intersphinx: the build must not reach the network.
exclude_patterns: list[str] = []
# The API reference follows each module's __all__, in source order.
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
# Hints stay in the signature; docstrings already say what a reader needs.
autodoc_typehints = "signature"
# Optional dependencies the reference names but the docs build need not install.
# The docs environment installs only Sphinx and the ``fixture`` extra.
autodoc_mock_imports = [
    "gunicorn",
    "openstack",
    "oslo_config",
    "placement",
    "psycopg2",
    "pymysql",
    "pytest",
    "requests_mock",
]

html_theme = "alabaster"
html_title = f"reportclient {release}"
html_static_path: list[str] = []
