"""The whole suite's plugins.

The fake's ``fake_placement`` fixture is opt-in (no ``pytest11`` entry
point), as it is in any project that uses it; this is where this project
opts in, the way README.rst tells users to.
"""

pytest_plugins = ["reportclient.fixture.pytest_plugin"]
