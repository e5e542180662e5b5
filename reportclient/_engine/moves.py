"""Moves and other multi-consumer writes, as the parts and plan of a BatchWrite.

A move is a plan over two consumers: whatever the source holds when the
attempt reads it goes to the target, and the source is emptied (or, for a
migration, made to hold the destination's claim), in one
``POST /allocations``. Because the plan reads the source on every attempt,
a conflict never replays a stale body: the allocations moved are always the
ones the source held at the generation the POST carries.

:func:`write_many` turns a caller's ``{consumer: allocations or mutate}``
into the same shape, so a move is just one more plan on the one engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reportclient._engine.batch_write import Part, Plan, States
from reportclient._engine.consumer_write import Kind
from reportclient._model.consumers import Allocations, ConsumerAllocations
from reportclient._model.mutators import is_idempotent
from reportclient._model.validation import (
    normalize_allocations,
    validate_consumer_type,
    validate_uuid,
)
from reportclient.errors import ConsumerChanged, InvalidInput, NothingToMove

__all__ = ["ManyPlan", "MovePlan", "WriteSpec", "plan_many", "plan_move"]

#: A multi-consumer write's value per consumer: what it should hold, or how to compute it.
WriteSpec = Allocations | Callable[[ConsumerAllocations], Allocations]


@dataclass(frozen=True, slots=True)
class MovePlan:
    """The parts and plan of one move, and what the last plan moved."""

    parts: tuple[Part, ...]
    plan: Plan
    moved: dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class ManyPlan:
    """The parts and plan of a :meth:`PlacementClient.write_many`."""

    parts: tuple[Part, ...]
    plan: Plan
    idempotent: bool


def plan_move(
    source: str,
    target: str,
    *,
    expect_target: Allocations | None = None,
    target_consumer_type: str | None = None,
    source_allocations: Allocations | None = None,
    replace_target: bool = False,
) -> MovePlan:
    """Validate a move's input and build its parts and plan.

    :param replace_target: the target ends holding what the source held,
        whatever it held before (nova's revert: the instance takes back what
        its migration record holds); never with ``expect_target``.
    :raises InvalidInput: malformed uuids, allocations or type, or a move
        of a consumer onto itself.
    """
    source, target = validate_uuid(source), validate_uuid(target, "target consumer uuid")
    if source == target:
        raise InvalidInput(f"a move needs two consumers, got {source} twice")
    if replace_target and expect_target:
        raise InvalidInput("a move replacing its target expects nothing of it")
    expected = normalize_allocations(expect_target) if expect_target else {}
    then = normalize_allocations(source_allocations) if source_allocations else {}
    ctype = None if target_consumer_type is None else validate_consumer_type(target_consumer_type)
    moved: dict[str, dict[str, int]] = {}

    def plan(states: States) -> dict[str, dict[str, dict[str, int]]]:
        held = states[source]
        if not held.allocations:
            raise NothingToMove(
                "the source consumer holds no allocations; there is nothing to move",
                state=held,
                consumer_uuid=source,
            )
        if expected and dict(states[target].allocations) != expected:
            # What the caller announced is gone (released, changed): adding the
            # move to it would bring it back.
            raise ConsumerChanged(
                f"the target holds {dict(states[target].allocations) or 'nothing'}, where the "
                f"caller expected {expected}; nothing was written",
                state=states[target],
                known=None,
                consumer_uuid=target,
            )
        moved.clear()
        moved.update({rp: dict(res) for rp, res in held.allocations.items()})
        if replace_target:
            return {source: then, target: dict(moved)}
        return {source: then, target: _summed(expected, held.allocations)}

    parts = (
        # The source needs no premise: its generation guards what was read.
        Part(source, Kind.RELEASE),
        # A new target (a migration record) takes the source's owner and type.
        Part(target, Kind.CLAIM, owner_from=source, ctype=ctype, expected=expected),
    )
    return MovePlan(parts, plan, moved)


def plan_many(
    writes: Mapping[str, WriteSpec],
    *,
    owner: tuple[str, str],
    consumer_type: str | None,
) -> ManyPlan:
    """Validate a multi-consumer write's input and build its parts and plan.

    A mapping of allocations is a claim (``{}``: a release); a function of
    the consumer's state is an update of an existing consumer.

    :raises InvalidInput: no consumers, malformed uuids or allocations.
    """
    if not isinstance(writes, Mapping) or not writes:
        raise InvalidInput("write_many needs a non-empty mapping of consumer -> allocations")
    ctype = None if consumer_type is None else validate_consumer_type(consumer_type)
    fixed: dict[str, dict[str, dict[str, int]]] = {}
    mutators: dict[str, Callable[[ConsumerAllocations], Allocations]] = {}
    parts = []
    for given, spec in writes.items():
        consumer = validate_uuid(given)
        if consumer in fixed or consumer in mutators:
            raise InvalidInput(f"consumer {consumer} is given twice")
        if callable(spec):
            mutators[consumer] = spec
            parts.append(Part(consumer, Kind.UPDATE, owner=owner, ctype=ctype))
            continue
        fixed[consumer] = normalize_allocations(spec)
        if fixed[consumer]:
            parts.append(Part(consumer, Kind.CLAIM, owner=owner, ctype=ctype))
        else:
            parts.append(Part(consumer, Kind.RELEASE, ctype=ctype, seen_only=True))

    def plan(states: States) -> dict[str, dict[str, dict[str, int]]]:
        desired = {c: {rp: dict(res) for rp, res in a.items()} for c, a in fixed.items()}
        for consumer, mutate in mutators.items():
            desired[consumer] = normalize_allocations(mutate(states[consumer]))
        return desired

    idempotent = all(is_idempotent(m) for m in mutators.values())
    return ManyPlan(tuple(parts), plan, idempotent)


def _summed(
    base: Mapping[str, Mapping[str, int]], extra: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    result = {rp: dict(res) for rp, res in base.items()}
    for rp, resources in extra.items():
        held = result.setdefault(rp, {})
        for rc, amount in resources.items():
            held[rc] = held.get(rc, 0) + amount
    return result
