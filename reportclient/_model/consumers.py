"""Typed, immutable views of a consumer's allocations, as Placement holds or accepted them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AllocationWrite", "Allocations", "ConsumerAllocations", "already_holds"]

#: provider uuid -> resource class -> amount
Allocations = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True, slots=True)
class AllocationWrite:
    """One allocation write as sent: what an :class:`OutcomeUnknown` reports.

    ``consumer_generation`` is the generation the write carried (None: it
    expected a new consumer); the write can only land while Placement holds
    exactly that generation.
    """

    consumer_uuid: str
    allocations: Mapping[str, Mapping[str, int]]
    consumer_generation: int | None
    project_id: str
    user_id: str
    consumer_type: str | None = None


@dataclass(frozen=True, slots=True)
class ConsumerAllocations:
    """A consumer's allocations as Placement last reported or accepted them.

    ``generation`` is None when the consumer does not exist; the next write
    must then expect a new consumer. ``consumer_type`` is None when it was
    not read: :meth:`PlacementClient.get_allocations` reads it (1.38+), while
    the reads and writes inside an operation that names no type go at 1.28,
    where Placement neither shows nor changes it (``LEAN_VERSION``).
    """

    consumer_uuid: str
    allocations: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    generation: int | None = None
    project_id: str | None = None
    user_id: str | None = None
    consumer_type: str | None = None

    @property
    def exists(self) -> bool:
        """Whether Placement holds this consumer."""
        return self.generation is not None

    @classmethod
    def missing(cls, consumer_uuid: str) -> ConsumerAllocations:
        """The state of a consumer Placement does not know."""
        return cls(consumer_uuid)

    @classmethod
    def from_json(cls, consumer_uuid: str, body: Mapping[str, Any]) -> ConsumerAllocations:
        """Parse a ``GET /allocations/{consumer}`` body (microversion 1.28+).

        A missing consumer comes back without generation or owner keys, so
        every key but ``allocations`` is optional.
        """
        allocations: dict[str, dict[str, int]] = {}
        for rp_uuid, entry in (body.get("allocations") or {}).items():
            resources = entry.get("resources") or {}
            allocations[rp_uuid] = {rc: int(amount) for rc, amount in resources.items()}
        # Absent for a consumer Placement does not hold; trust it when given.
        generation = body.get("consumer_generation")
        return cls(
            consumer_uuid=consumer_uuid,
            allocations=allocations,
            generation=generation if isinstance(generation, int) else None,
            project_id=body.get("project_id"),
            user_id=body.get("user_id"),
            consumer_type=body.get("consumer_type"),
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON shape Placement returns for this consumer."""
        body: dict[str, Any] = {
            "allocations": {
                rp: {"resources": dict(resources)} for rp, resources in self.allocations.items()
            }
        }
        if self.exists:
            body["consumer_generation"] = self.generation
            for key in ("project_id", "user_id", "consumer_type"):
                value = getattr(self, key)
                if value is not None:
                    body[key] = value
        return body


def already_holds(
    current: ConsumerAllocations,
    desired: Mapping[str, Mapping[str, int]],
    owner: tuple[str, str],
    ctype: str | None,
) -> bool:
    """Whether writing ``desired`` would change nothing Placement holds."""
    if not desired:
        return not current.exists
    return (
        current.exists
        and current.allocations == desired
        and (current.project_id, current.user_id) == owner
        and (ctype is None or current.consumer_type in (None, ctype))
    )
