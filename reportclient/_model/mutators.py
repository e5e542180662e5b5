"""Ready-made ``mutate`` functions for :meth:`PlacementClient.update_allocations`.

Each returns a function of the consumer's current state, so the result is
recomputed from what Placement holds at the start of every attempt.

Each also says whether it is *idempotent*: whether applying it to its own
result changes nothing. That decides what the client may do when a write's
answer is lost and no read can prove whether it landed: an idempotent
mutation is simply computed and written again, while one that is not (an
addition) is never risked twice and the caller gets
:class:`~reportclient.errors.OutcomeUnknown` instead. A custom ``mutate`` is
taken as not idempotent unless it says so, with :func:`idempotent` or an
``idempotent = True`` attribute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from reportclient._model.consumers import Allocations, ConsumerAllocations
from reportclient._model.validation import normalize_allocations, validate_uuid
from reportclient.errors import AllocationsNotHeld, InvalidInput

__all__ = [
    "Mutation",
    "Mutator",
    "add_allocations",
    "idempotent",
    "is_idempotent",
    "remove_providers",
    "replace_allocations",
    "subtract_allocations",
]

#: Given the consumer's current state, return the allocations it should hold.
Mutator = Callable[[ConsumerAllocations], Allocations]


class Mutation:
    """A ``mutate`` function that knows whether it is idempotent.

    :param function: ``function(current)`` returns what the consumer should hold.
    :param idempotent: applying it to its own result changes nothing.
    :param description: shown by ``repr`` (and so in logs).
    """

    __slots__ = ("_function", "description", "idempotent")

    def __init__(self, function: Mutator, *, idempotent: bool, description: str) -> None:
        self._function = function
        self.idempotent = idempotent
        self.description = description

    def __call__(self, current: ConsumerAllocations) -> Allocations:
        return self._function(current)

    def __repr__(self) -> str:
        kind = "idempotent" if self.idempotent else "not idempotent"
        return f"<Mutation {self.description} ({kind})>"


def idempotent(function: Mutator) -> Mutation:
    """Declare a custom ``mutate`` idempotent: ``f(f(x)) == f(x)`` for every state.

    Only then may the client write it again after a lost answer. Usable as a
    decorator.
    """
    name = getattr(function, "__qualname__", None) or repr(function)
    return Mutation(function, idempotent=True, description=name)


def is_idempotent(mutate: object) -> bool:
    """Whether ``mutate`` declared itself idempotent (undeclared means not)."""
    return getattr(mutate, "idempotent", False) is True


def replace_allocations(allocations: Allocations) -> Mutation:
    """Hold exactly ``allocations``, whatever the consumer held before. Idempotent.

    :raises InvalidInput: at once, for malformed allocations.
    """
    desired = normalize_allocations(allocations)

    def mutate(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
        return {rp: dict(res) for rp, res in desired.items()}

    return Mutation(mutate, idempotent=True, description=f"replace with {desired}")


def add_allocations(extra: Allocations) -> Mutation:
    """Hold what the consumer holds now plus ``extra``, summed per class. Not idempotent.

    Adding twice is not adding once, so when a write's answer is lost and
    Placement's generation cannot prove whether it landed, the client raises
    :class:`~reportclient.errors.OutcomeUnknown` rather than add again.

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

    return Mutation(mutate, idempotent=False, description=f"add {more}")


def remove_providers(providers: Iterable[str]) -> Mutation:
    """Hold what the consumer holds now, minus everything on ``providers``. Idempotent.

    :raises InvalidInput: at once, for a malformed provider uuid, or for a
        single string (which would otherwise be taken letter by letter).
    """
    if isinstance(providers, str | bytes):
        raise InvalidInput(
            f"providers must be an iterable of provider uuids, got the string {providers!r}; "
            "wrap a single provider in a list"
        )
    gone = frozenset(validate_uuid(rp, "resource provider uuid") for rp in providers)

    def mutate(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
        return {rp: dict(res) for rp, res in current.allocations.items() if rp not in gone}

    return Mutation(mutate, idempotent=True, description=f"remove {sorted(gone)}")


def subtract_allocations(amounts: Allocations) -> Mutation:
    """Hold what the consumer holds now minus ``amounts``, per provider and class. Not idempotent.

    A class brought to 0 is removed, and a provider left with no class is
    removed; a consumer left with nothing is deleted by the write (Placement's
    rule for an empty allocation write). This is nova's
    ``remove_resources_from_instance_allocation`` and neutron's shrinking QoS
    update.

    Whether the consumer holds enough depends on what it holds *now*, so the
    check runs inside ``mutate``, on the state every attempt reads; subtracting
    twice is not subtracting once, so, like :func:`add_allocations`, a lost
    answer that the generation cannot settle ends in
    :class:`~reportclient.errors.OutcomeUnknown`.

    :raises InvalidInput: at once, for malformed amounts.
    :raises AllocationsNotHeld: from ``mutate`` (so from the update), when
        the consumer holds less of a class than ``amounts`` asks for, or
        nothing of it, or nothing on a provider named; nothing is written.
    """
    less = normalize_allocations(amounts)

    def mutate(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
        result = {rp: dict(res) for rp, res in current.allocations.items()}
        missing: dict[str, dict[str, int]] = {}
        for rp, resources in less.items():
            held = result.get(rp, {})
            for rc, amount in resources.items():
                left = held.get(rc, 0) - amount
                if left < 0:
                    missing.setdefault(rp, {})[rc] = -left
                elif left == 0:
                    del held[rc]
                else:
                    held[rc] = left
            if rp in result and not held:
                del result[rp]
        if missing:
            raise AllocationsNotHeld(
                f"cannot subtract {less}: the consumer holds {dict(current.allocations)} at "
                f"generation {current.generation}, short by {missing}; nothing was written",
                state=current,
                missing=missing,
            )
        return result

    return Mutation(mutate, idempotent=False, description=f"subtract {less}")
