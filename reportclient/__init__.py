"""reportclient: a conflict-safe client for the OpenStack Placement API.

Scheduler code claims and reads consumers' allocations through
:class:`PlacementClient`; consumer generations are cached, and a
``placement.concurrent_update`` conflict is recovered by re-reading the
consumer, recomputing the allocations and writing again.
"""

from reportclient.cache import DEFAULT_CACHE_SIZE, DEFAULT_CACHE_TTL, CacheStats
from reportclient.candidates import (
    AllocationCandidates,
    AllocationRequest,
    CandidatesQuery,
    ProviderSummary,
    RequestGroup,
    ResourceSummary,
    any_of,
)
from reportclient.client import Mutator, PlacementClient
from reportclient.errors import (
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
    PlacementUnavailable,
    ProviderInUse,
    ProviderNotFound,
)
from reportclient.models import Allocations, AllocationWrite, ConsumerAllocations
from reportclient.moves import Move
from reportclient.mutators import (
    Mutation,
    add_allocations,
    idempotent,
    is_idempotent,
    remove_providers,
    replace_allocations,
)
from reportclient.provider_fields import InventoryMutator
from reportclient.provider_models import (
    Inventory,
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ProviderWrite,
    ResourceProvider,
)
from reportclient.providers import REPARENT_VERSION, ProviderClient
from reportclient.reconcile import ProviderSpec, ReconcileReport
from reportclient.reshaper import RESHAPER_VERSION, Reshape, ReshapeState
from reportclient.retry import NO_RETRY, default_retry, no_retry, wait_full_jitter
from reportclient.transport import (
    CONSUMER_GENERATION_VERSION,
    CONSUMER_TYPE_VERSION,
    DEFAULT_POOL_SIZE,
    DEFAULT_TIMEOUT,
    MAX_VERSION,
)
from reportclient.usages import ConsumerTypeUsages, ProjectUsages, ProviderUsages

__all__ = [
    "CONSUMER_GENERATION_VERSION",
    "CONSUMER_TYPE_VERSION",
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_CACHE_TTL",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_TIMEOUT",
    "MAX_VERSION",
    "NO_RETRY",
    "REPARENT_VERSION",
    "RESHAPER_VERSION",
    "AllocationCandidates",
    "AllocationRequest",
    "AllocationWrite",
    "Allocations",
    "CacheStats",
    "CandidatesQuery",
    "CannotDeleteParent",
    "CapacityExceeded",
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
    "PlacementUnavailable",
    "ProjectUsages",
    "ProviderAggregates",
    "ProviderClient",
    "ProviderInUse",
    "ProviderInventories",
    "ProviderNotFound",
    "ProviderSpec",
    "ProviderSummary",
    "ProviderTraits",
    "ProviderUsages",
    "ProviderWrite",
    "ReconcileReport",
    "RequestGroup",
    "Reshape",
    "ReshapeState",
    "ResourceProvider",
    "ResourceSummary",
    "add_allocations",
    "any_of",
    "default_retry",
    "idempotent",
    "is_idempotent",
    "no_retry",
    "remove_providers",
    "replace_allocations",
    "wait_full_jitter",
]

__version__ = "0.1.0"
