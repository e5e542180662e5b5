"""Other projects' functional suites, run on the fake and on the real Placement and diffed.

``python -m tests.external`` (``tox -e external``) runs each suite twice
from its installed package, once on Placement's own fixture and once with
:class:`reportclient.fixture.DropInPlacementFixture` swapped in by
``tests/external/plugin.py``, records every request and answer on both
sides, and compares them pair by pair with the fuzzer's comparison and its
declared differences.
"""
