"""reportclient: a conflict-safe client for the OpenStack Placement API.

Scheduler code claims and reads consumers' allocations through
:class:`PlacementClient`; consumer generations are cached, and a
``placement.concurrent_update`` conflict is recovered by re-reading the
consumer, recomputing the allocations and writing again.
"""

from reportclient.cache import DEFAULT_CACHE_SIZE, DEFAULT_CACHE_TTL, CacheStats
from reportclient.client import Mutator, PlacementClient
from reportclient.errors import (
    CapacityExceeded,
    ConsumerChanged,
    ConsumerGone,
    GenerationConflict,
    InvalidInput,
    MicroversionUnsupported,
    OutcomeUnknown,
    PlacementError,
    PlacementUnavailable,
)
from reportclient.models import Allocations, AllocationWrite, ConsumerAllocations
from reportclient.mutators import (
    Mutation,
    add_allocations,
    idempotent,
    is_idempotent,
    remove_providers,
    replace_allocations,
)
from reportclient.retry import NO_RETRY, default_retry, no_retry, wait_full_jitter
from reportclient.transport import (
    CONSUMER_GENERATION_VERSION,
    CONSUMER_TYPE_VERSION,
    DEFAULT_POOL_SIZE,
    DEFAULT_TIMEOUT,
    MAX_VERSION,
)

__all__ = [
    "CONSUMER_GENERATION_VERSION",
    "CONSUMER_TYPE_VERSION",
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_CACHE_TTL",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_TIMEOUT",
    "MAX_VERSION",
    "NO_RETRY",
    "AllocationWrite",
    "Allocations",
    "CacheStats",
    "CapacityExceeded",
    "ConsumerAllocations",
    "ConsumerChanged",
    "ConsumerGone",
    "GenerationConflict",
    "InvalidInput",
    "MicroversionUnsupported",
    "Mutation",
    "Mutator",
    "OutcomeUnknown",
    "PlacementClient",
    "PlacementError",
    "PlacementUnavailable",
    "add_allocations",
    "default_retry",
    "idempotent",
    "is_idempotent",
    "no_retry",
    "remove_providers",
    "replace_allocations",
    "wait_full_jitter",
]

__version__ = "0.1.0"
