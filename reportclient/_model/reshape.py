"""Reshape's values: what a reshape computes from, the target it describes, and their checks.

``POST /reshaper`` (microversion 1.30+) replaces the inventories of some
providers and the allocations of some consumers in one transaction, guarded
by every provider generation and every consumer generation it carries; the
write itself runs on the engine (:mod:`reportclient._engine.reshape_write`).

``compute`` must describe the *target* (where each class and allocation
should be), not a delta: that makes the reshape idempotent, so after a lost
answer a re-read that already shows the target is success.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from reportclient._model.consumers import ConsumerAllocations
from reportclient._model.providers import Inventory, ProviderInventories, inventories_from
from reportclient._model.validation import normalize_allocations
from reportclient.errors import InvalidInput

__all__ = ["Reshape", "ReshapeState", "checked_target", "target_holds"]


@dataclass(frozen=True)
class ReshapeState:
    """What a reshape computes from: the providers' inventories and the consumers' allocations."""

    inventories: Mapping[str, ProviderInventories]
    allocations: Mapping[str, ConsumerAllocations]


@dataclass(frozen=True)
class Reshape:
    """The target: every named provider's inventories and every named consumer's allocations.

    A provider or consumer that ``compute`` leaves out is not touched.
    """

    inventories: Mapping[str, Mapping[str, Inventory]] = field(default_factory=dict)
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)


def target_holds(state: ReshapeState, target: Reshape) -> bool:
    """Whether ``state`` already is ``target`` (inventories compared as Placement stores them)."""
    for rp, inventories in target.inventories.items():
        if dict(state.inventories[rp].inventories) != dict(inventories):
            return False
    for consumer, allocations in target.allocations.items():
        if dict(state.allocations[consumer].allocations) != normalize_allocations(allocations):
            return False
    return True


def checked_target(target: object, providers: Iterable[str], consumers: Iterable[str]) -> Reshape:
    """The target with typed inventories, naming only what was read.

    :raises InvalidInput: ``compute`` returned something else; nothing is sent.
    """
    if not isinstance(target, Reshape):
        got = "None" if target is None else type(target).__name__
        raise InvalidInput(f"reshape's compute returned {got}, expected a Reshape")
    for member in ("inventories", "allocations"):
        value = getattr(target, member)
        if not isinstance(value, Mapping):
            got = "None" if value is None else type(value).__name__
            raise InvalidInput(
                f"reshape's compute returned a Reshape whose {member} is {got}, expected a mapping"
            )
    unknown = (set(target.inventories) - set(providers)) | (
        set(target.allocations) - set(consumers)
    )
    if unknown:
        raise InvalidInput(f"compute named providers or consumers not read: {sorted(unknown)}")
    return Reshape(
        {
            rp: inventories_from(invs, f"reshape's compute (inventories of provider {rp})")
            for rp, invs in target.inventories.items()
        },
        {c: normalize_allocations(a) for c, a in target.allocations.items()},
    )
