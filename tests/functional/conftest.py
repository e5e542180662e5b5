"""Functional tests run against the real Placement service.

Their fixtures (``real_placement``, ``placement_admin``, ``compute_node``,
``placement_process``) come from ``reportclient.testing.pytest_plugin``,
which pyproject.toml's ``addopts`` loads for every run, so the functional
and contract suites share one embedded Placement per session.
"""
