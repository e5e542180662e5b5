"""Typed, immutable views of what Placement holds, and input validation.

Validation lives here so that every malformed value is refused with
:class:`~reportclient.errors.InvalidInput` before a request is built.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from reportclient.errors import InvalidInput

__all__ = [
    "MAX_INT",
    "AllocationWrite",
    "Allocations",
    "ConsumerAllocations",
    "is_valid_name",
    "normalize_allocations",
    "validate_consumer_type",
    "validate_owner",
    "validate_uuid",
]

#: provider uuid -> resource class -> amount
Allocations = Mapping[str, Mapping[str, int]]

# Matched with fullmatch: "$" would also accept a trailing newline.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Placement's pattern for both resource class names and consumer types.
_NAME = re.compile(r"[A-Z0-9_]+")
_MAX_ID_LEN = 255
# consumer_types.name is a 255-character column.
_MAX_TYPE_LEN = 255
# Keys of one provider's entry in Placement's allocations documents.
_ENTRY_KEYS = frozenset({"resources", "generation"})
#: The largest integer Placement stores (amounts, inventory fields): a signed 32-bit column.
MAX_INT = 2**31 - 1


def validate_uuid(value: object, what: str = "consumer_uuid") -> str:
    """Return ``value`` in lower case if it is a 36-character UUID string.

    Lower case is the one spelling Placement returns, so a caller's
    upper-case uuid must not become a second key for the same provider (on
    MariaDB's case-insensitive collation it would even become a second row).

    :raises InvalidInput: for anything else.
    """
    if not isinstance(value, str) or not _UUID.fullmatch(value):
        raise InvalidInput(f"{what} must be a 36-character UUID string, got {value!r}")
    return value.lower()


def validate_owner(project_id: object, user_id: object) -> None:
    """Check project and user ids as Placement's schema would.

    :raises InvalidInput: when either is not a 1-255 character string.
    """
    for name, value in (("project_id", project_id), ("user_id", user_id)):
        if not isinstance(value, str) or not value or len(value) > _MAX_ID_LEN:
            raise InvalidInput(f"{name} must be a string of 1 to 255 characters, got {value!r}")


def is_valid_name(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a valid resource class name or consumer type."""
    return isinstance(value, str) and bool(_NAME.fullmatch(value))


def validate_consumer_type(value: object) -> str:
    """Return ``value`` if it is a valid consumer type (``^[A-Z0-9_]+$``, at most 255).

    :raises InvalidInput: otherwise.
    """
    if not is_valid_name(value) or len(value) > _MAX_TYPE_LEN:
        raise InvalidInput(
            f"consumer_type must match ^[A-Z0-9_]+$ and be at most {_MAX_TYPE_LEN} "
            f"characters, got {value!r}"
        )
    return value


def normalize_allocations(allocations: object) -> dict[str, dict[str, int]]:
    """Validate ``allocations`` and return a fresh plain-dict copy.

    Takes ``{provider: {resource class: amount}}`` and also Placement's own
    shape, ``{provider: {"resources": {...}}}`` (what a GET or an allocation
    candidate returns); no resource class can be called ``resources``, so
    the two cannot be confused. Provider uuids come back in lower case.

    :raises InvalidInput: for a malformed provider uuid, a provider given
        twice (in two spellings), a malformed resource class, an amount that
        is not an int from 1 to 2**31-1, or a provider without any resources.
    """
    if not isinstance(allocations, Mapping):
        raise InvalidInput(f"allocations must be a mapping, got {type(allocations).__name__}")
    result: dict[str, dict[str, int]] = {}
    for given_uuid, given in allocations.items():
        rp_uuid = validate_uuid(given_uuid, "resource provider uuid")
        if rp_uuid in result:
            raise InvalidInput(f"resource provider {rp_uuid} is given twice")
        resources = given.get("resources") if _is_placement_entry(given) else given
        if not isinstance(resources, Mapping) or not resources:
            raise InvalidInput(
                f"resources for provider {rp_uuid} must be a non-empty mapping, got {resources!r}"
            )
        clean: dict[str, int] = {}
        for rc, amount in resources.items():
            if not is_valid_name(rc):
                raise InvalidInput(f"resource class must match ^[A-Z0-9_]+$, got {rc!r}")
            # bool is an int subclass; True is not a meaningful amount.
            if isinstance(amount, bool) or not isinstance(amount, int):
                raise InvalidInput(f"amount of {rc} on {rp_uuid} must be an int, got {amount!r}")
            if amount < 1 or amount > MAX_INT:
                raise InvalidInput(
                    f"amount of {rc} on {rp_uuid} must be between 1 and {MAX_INT}, got {amount}"
                )
            clean[rc] = amount
        result[rp_uuid] = clean
    return result


def _is_placement_entry(value: object) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping) and "resources" in value and set(value) <= _ENTRY_KEYS


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
