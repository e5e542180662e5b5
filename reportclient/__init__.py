"""reportclient: a conflict-safe client for the OpenStack Placement API.

Scheduler code claims and reads consumers' allocations through
:class:`PlacementClient`; consumer generations are cached, and a
``placement.concurrent_update`` conflict is recovered by re-reading the
consumer, recomputing the allocations and writing again.
"""

import importlib.metadata

from reportclient._clients.core import ClientSettings
from reportclient._clients.placement import PlacementClient
from reportclient._clients.providers import ProviderClient
from reportclient._engine.tree_views import TreeViews
from reportclient._gateway.gateway import DEFAULT_CACHE_SIZE, DEFAULT_CACHE_TTL, CacheStats
from reportclient._model.assumptions import ProofAssumption
from reportclient._model.candidate_results import (
    AllocationCandidates,
    AllocationRequest,
    ProviderSummary,
    ResourceSummary,
)
from reportclient._model.candidates import CandidatesQuery, RequestGroup, any_of
from reportclient._model.consumers import Allocations, AllocationWrite, ConsumerAllocations
from reportclient._model.microversions import (
    CONSUMER_GENERATION_VERSION,
    CONSUMER_TYPE_VERSION,
    MAX_VERSION,
    REPARENT_VERSION,
    RESHAPER_VERSION,
)
from reportclient._model.moves import Move
from reportclient._model.mutators import (
    Mutation,
    Mutator,
    add_allocations,
    idempotent,
    is_idempotent,
    remove_providers,
    replace_allocations,
    subtract_allocations,
)
from reportclient._model.provider_tree import ProviderSpec, ReconcileReport
from reportclient._model.providers import (
    Inventory,
    InventoryMutator,
    ProviderAggregates,
    ProviderAllocations,
    ProviderInventories,
    ProviderTraits,
    ProviderWrite,
    ResourceProvider,
)
from reportclient._model.raw import RawAnswer
from reportclient._model.reshape import Reshape, ReshapeState
from reportclient._model.tree_view import ProviderView, TreeView
from reportclient._model.usages import ConsumerTypeUsages, ProjectUsages, ProviderUsages
from reportclient._wire.transport import DEFAULT_POOL_SIZE, DEFAULT_TIMEOUT
from reportclient.errors import (
    AllocationsNotHeld,
    CannotDeleteParent,
    CapacityExceeded,
    ConsumerChanged,
    ConsumerGone,
    DuplicateName,
    GenerationConflict,
    InvalidInput,
    InventoryInUse,
    MicroversionUnsupported,
    NothingToMove,
    OutcomeUnknown,
    PlacementAuthError,
    PlacementEndpointError,
    PlacementError,
    PlacementOverloaded,
    PlacementUnavailable,
    ProviderChanged,
    ProviderInUse,
    ProviderNotFound,
)
from reportclient.retry import (
    MAX_REQUESTS,
    NO_RETRY,
    RetryBudget,
    default_retry,
    no_retry,
    wait_contention,
    wait_full_jitter,
)

__all__ = [
    "CONSUMER_GENERATION_VERSION",
    "CONSUMER_TYPE_VERSION",
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_CACHE_TTL",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_TIMEOUT",
    "MAX_REQUESTS",
    "MAX_VERSION",
    "NO_RETRY",
    "REPARENT_VERSION",
    "RESHAPER_VERSION",
    "AllocationCandidates",
    "AllocationRequest",
    "AllocationWrite",
    "Allocations",
    "AllocationsNotHeld",
    "CacheStats",
    "CandidatesQuery",
    "CannotDeleteParent",
    "CapacityExceeded",
    "ClientSettings",
    "ConsumerAllocations",
    "ConsumerChanged",
    "ConsumerGone",
    "ConsumerTypeUsages",
    "DuplicateName",
    "GenerationConflict",
    "InvalidInput",
    "Inventory",
    "InventoryInUse",
    "InventoryMutator",
    "MicroversionUnsupported",
    "Move",
    "Mutation",
    "Mutator",
    "NothingToMove",
    "OutcomeUnknown",
    "PlacementAuthError",
    "PlacementClient",
    "PlacementEndpointError",
    "PlacementError",
    "PlacementOverloaded",
    "PlacementUnavailable",
    "ProjectUsages",
    "ProofAssumption",
    "ProviderAggregates",
    "ProviderAllocations",
    "ProviderChanged",
    "ProviderClient",
    "ProviderInUse",
    "ProviderInventories",
    "ProviderNotFound",
    "ProviderSpec",
    "ProviderSummary",
    "ProviderTraits",
    "ProviderUsages",
    "ProviderView",
    "ProviderWrite",
    "RawAnswer",
    "ReconcileReport",
    "RequestGroup",
    "Reshape",
    "ReshapeState",
    "ResourceProvider",
    "ResourceSummary",
    "RetryBudget",
    "TreeView",
    "TreeViews",
    "add_allocations",
    "any_of",
    "default_retry",
    "idempotent",
    "is_idempotent",
    "no_retry",
    "remove_providers",
    "replace_allocations",
    "subtract_allocations",
    "wait_contention",
    "wait_full_jitter",
]


def _installed_version() -> str:
    """The version pbr wrote into the installed metadata (from the git tag)."""
    try:
        return importlib.metadata.version("reportclient")
    except importlib.metadata.PackageNotFoundError:  # imported from a bare source tree
        return "0+unknown"


__version__ = _installed_version()
