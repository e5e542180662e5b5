"""Ready-made ``mutate`` functions for :meth:`PlacementClient.update_allocations`.

Each returns a function of the consumer's current state, so the result is
recomputed from what Placement holds at the start of every attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from reportclient.models import (
    Allocations,
    ConsumerAllocations,
    normalize_allocations,
    validate_uuid,
)

__all__ = ["add_allocations", "remove_providers", "replace_allocations"]

AllocationsMutator = Callable[[ConsumerAllocations], dict[str, dict[str, int]]]


def replace_allocations(allocations: Allocations) -> AllocationsMutator:
    """Hold exactly ``allocations``, whatever the consumer held before.

    :raises InvalidInput: at once, for malformed allocations.
    """
    desired = normalize_allocations(allocations)

    def mutate(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
        return {rp: dict(res) for rp, res in desired.items()}

    return mutate


def add_allocations(extra: Allocations) -> AllocationsMutator:
    """Hold what the consumer holds now plus ``extra``, summed per class.

    This is a move's doubled-up claim: the source host's allocations stay
    while the destination's are added.

    :raises InvalidInput: at once, for malformed allocations.
    """
    more = normalize_allocations(extra)

    def mutate(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
        result = {rp: dict(res) for rp, res in current.allocations.items()}
        for rp, resources in more.items():
            held = result.setdefault(rp, {})
            for rc, amount in resources.items():
                held[rc] = held.get(rc, 0) + amount
        return result

    return mutate


def remove_providers(providers: Iterable[str]) -> AllocationsMutator:
    """Hold what the consumer holds now, minus everything on ``providers``.

    :raises InvalidInput: at once, for a malformed provider uuid.
    """
    gone = frozenset(validate_uuid(rp, "resource provider uuid") for rp in providers)

    def mutate(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
        return {rp: dict(res) for rp, res in current.allocations.items() if rp not in gone}

    return mutate
