"""The public names are exactly the ones documented."""

from __future__ import annotations

import reportclient

EXPECTED = {
    "Allocations",
    "CONSUMER_GENERATION_VERSION",
    "CONSUMER_TYPE_VERSION",
    "CacheStats",
    "CapacityExceeded",
    "ConsumerAllocations",
    "DEFAULT_CACHE_SIZE",
    "GenerationConflict",
    "InvalidInput",
    "MAX_VERSION",
    "MicroversionUnsupported",
    "Mutator",
    "NO_RETRY",
    "PlacementClient",
    "PlacementError",
    "PlacementUnavailable",
    "add_allocations",
    "default_retry",
    "no_retry",
    "remove_providers",
    "replace_allocations",
    "wait_full_jitter",
}


def test_all_lists_exactly_the_public_api():
    assert set(reportclient.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(reportclient, name)


def test_library_does_not_import_its_test_helpers():
    import subprocess
    import sys

    code = (
        "import sys, reportclient; "
        "bad = [m for m in sys.modules if m.startswith(('reportclient.fixture', "
        "'reportclient.testing', 'requests_mock', 'placement', 'fixtures'))]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
