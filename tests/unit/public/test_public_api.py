"""The public names are exactly the ones documented."""

from __future__ import annotations

import reportclient

EXPECTED = {
    "MAX_REQUESTS",
    "PlacementOverloaded",
    "RetryBudget",
    "CannotDeleteParent",
    "DuplicateName",
    "InventoryInUse",
    "ProviderInUse",
    "ProviderNotFound",
    "InventoryMutator",
    "Inventory",
    "ProviderAggregates",
    "ProviderAllocations",
    "ProviderInventories",
    "ProviderTraits",
    "ProviderWrite",
    "ResourceProvider",
    "REPARENT_VERSION",
    "ProviderClient",
    "ProviderChanged",
    "ProviderView",
    "TreeView",
    "TreeViews",
    "ProviderSpec",
    "ReconcileReport",
    "RESHAPER_VERSION",
    "Reshape",
    "ReshapeState",
    "AllocationCandidates",
    "AllocationRequest",
    "AllocationWrite",
    "Allocations",
    "CandidatesQuery",
    "ConsumerTypeUsages",
    "Move",
    "NothingToMove",
    "ProjectUsages",
    "ProofAssumption",
    "ProviderSummary",
    "ProviderUsages",
    "RequestGroup",
    "ResourceSummary",
    "any_of",
    "CONSUMER_GENERATION_VERSION",
    "CONSUMER_TYPE_VERSION",
    "CacheStats",
    "ClientSettings",
    "CapacityExceeded",
    "ConsumerAllocations",
    "ConsumerChanged",
    "ConsumerGone",
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_CACHE_TTL",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_TIMEOUT",
    "GenerationConflict",
    "InvalidInput",
    "MAX_VERSION",
    "MicroversionUnsupported",
    "Mutation",
    "Mutator",
    "NO_RETRY",
    "OutcomeUnknown",
    "PlacementAuthError",
    "PlacementClient",
    "PlacementEndpointError",
    "PlacementError",
    "PlacementUnavailable",
    "add_allocations",
    "default_retry",
    "idempotent",
    "is_idempotent",
    "no_retry",
    "remove_providers",
    "replace_allocations",
    "wait_contention",
    "wait_full_jitter",
    # adoption: nova's, neutron's and cyborg's calls
    "AllocationsNotHeld",
    "RawAnswer",
    "subtract_allocations",
}


def test_all_lists_exactly_the_public_api():
    assert set(reportclient.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(reportclient, name)


def test_error_hierarchy_of_the_write_semantics():
    assert issubclass(reportclient.ConsumerChanged, reportclient.GenerationConflict)
    assert issubclass(reportclient.ConsumerGone, reportclient.PlacementError)
    assert not issubclass(reportclient.ConsumerGone, reportclient.GenerationConflict)
    assert issubclass(reportclient.OutcomeUnknown, reportclient.PlacementUnavailable)


def test_default_cache_ttl_trusts_no_cached_state():
    assert reportclient.DEFAULT_CACHE_TTL == 0


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


def test_provider_errors_are_typed_by_code():
    assert issubclass(reportclient.CannotDeleteParent, reportclient.ProviderInUse)
    for error in (
        reportclient.InventoryInUse,
        reportclient.DuplicateName,
        reportclient.ProviderInUse,
        reportclient.ProviderNotFound,
    ):
        assert issubclass(error, reportclient.PlacementError)
        assert not issubclass(error, reportclient.GenerationConflict)  # never retried


def test_a_subtraction_beyond_what_is_held_is_invalid_input_never_retried():
    assert issubclass(reportclient.AllocationsNotHeld, reportclient.InvalidInput)
    assert issubclass(reportclient.AllocationsNotHeld, ValueError)
    assert not issubclass(reportclient.AllocationsNotHeld, reportclient.GenerationConflict)
