"""Typed, immutable views of resource providers and their generation-guarded fields.

Placement guards a provider's inventories, traits and aggregates with one
*provider generation*: every write of any of them carries the generation the
writer read and moves it on by one. Each field is read (``GET``) and written
(``PUT``) on its own route, and both the read and the write answer with the
generation, so a model here is always "this field, as of this generation".
"""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from reportclient._compat import Self
from reportclient._model.validation import MAX_INT, validate_standard_name, validate_uuid
from reportclient.errors import InvalidInput

__all__ = [
    "MAX_ALLOCATION_RATIO",
    "MAX_INVENTORY_INT",
    "Inventory",
    "InventoryMutator",
    "ProviderAggregates",
    "ProviderAllocations",
    "ProviderInventories",
    "ProviderTraits",
    "ProviderWrite",
    "ResourceProvider",
    "check_capacity",
    "inventories_from",
    "inventories_of",
    "stored_ratio",
]

#: The largest integer Placement stores in an inventory field.
MAX_INVENTORY_INT = MAX_INT

#: The largest allocation ratio Placement accepts (its schema's ``SQL_SP_FLOAT_MAX``).
MAX_ALLOCATION_RATIO = 3.40282e38


@dataclass(frozen=True, slots=True)
class ResourceProvider:
    """A resource provider as Placement reports it (microversion 1.14+)."""

    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str | None = None
    root_provider_uuid: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResourceProvider:
        """Build from a provider document of ``GET /resource_providers[/{uuid}]``."""
        return cls(
            uuid=data["uuid"],
            name=data["name"],
            generation=int(data["generation"]),
            parent_provider_uuid=data.get("parent_provider_uuid"),
            root_provider_uuid=data.get("root_provider_uuid", data["uuid"]),
        )

    def to_json(self) -> dict[str, Any]:
        """The document's fields, as Placement names them."""
        return dataclasses.asdict(self)


def stored_ratio(ratio: float) -> float:
    """``ratio`` as Placement on MariaDB/MySQL reads it back: what to compare, never what to send.

    Placement keeps ``allocation_ratio`` in a ``FLOAT`` column. On
    MariaDB/MySQL that is IEEE single precision, and the server answers it
    with ``FLT_DIG`` (6) significant digits: 16/3 is written, ``5.33333``
    is read (float32 rounding alone would give 5.3333335, not the same
    number: seen on MariaDB 10.11 through pymysql, as Placement reads it).
    PostgreSQL and SQLite keep the double. Rounding both sides of a
    comparison the way MariaDB does makes a ratio equal to what any backend
    returns for it, so a reconcile does not rewrite 16/3 on every run and a
    lost write that landed is not taken for someone else's. The price: on
    the double backends two ratios differing only beyond the sixth digit
    count as the same.
    """
    single: float = struct.unpack("f", struct.pack("f", ratio))[0]
    return float(f"{single:.6g}")


#: Each integer field of an inventory and its least value: the inventory schema
#: (``placement/schemas/inventory.py``) says ``minimum`` 1 for all but ``reserved``
#: (0) and ``maximum`` MAX_INT for every one (each is an ``Integer`` column).
_INT_FIELDS = {"total": 1, "reserved": 0, "min_unit": 1, "max_unit": 1, "step_size": 1}


@dataclass(frozen=True, slots=True, eq=False)
class Inventory:
    """One resource class's inventory on a provider, with Placement's defaults.

    Every field is checked as Placement's inventory schema checks it:
    ``total``, ``min_unit``, ``max_unit`` and ``step_size`` from 1,
    ``reserved`` from 0, all at most :data:`MAX_INVENTORY_INT`;
    ``allocation_ratio`` a finite number within a single-precision FLOAT.
    The schema sets no least ratio (0 and negative ratios are written), and
    neither does this class. Placement's cross-field rule, a capacity that
    is not negative, is checked on writing (:meth:`of`), not here: an
    inventory Placement already holds may break it (see :func:`check_capacity`).

    Two inventories are equal when their ratios are (see :func:`stored_ratio`).

    :raises InvalidInput: a field out of its range, naming the field.
    """

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_INVENTORY_INT
    step_size: int = 1
    allocation_ratio: float = 1.0

    def __post_init__(self) -> None:
        for name, least in _INT_FIELDS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidInput(f"inventory {name} must be an int, got {value!r}")
            if not least <= value <= MAX_INVENTORY_INT:
                raise InvalidInput(
                    f"inventory {name} must be from {least} to {MAX_INVENTORY_INT}, got {value}"
                )
        if isinstance(self.allocation_ratio, bool) or not isinstance(
            self.allocation_ratio, int | float
        ):
            raise InvalidInput(f"allocation_ratio must be a number, got {self.allocation_ratio!r}")
        if not math.isfinite(self.allocation_ratio):
            raise InvalidInput(f"allocation_ratio must be finite, got {self.allocation_ratio!r}")
        if abs(self.allocation_ratio) > MAX_ALLOCATION_RATIO:
            # Beyond a single-precision FLOAT: Placement refuses it, and it has no stored_ratio.
            raise InvalidInput(
                f"allocation_ratio must be within -{MAX_ALLOCATION_RATIO} and "
                f"{MAX_ALLOCATION_RATIO}, got {self.allocation_ratio!r}"
            )

    @property
    def capacity(self) -> int:
        """What Placement computes: ``int((total - reserved) * allocation_ratio)``."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    def _compared(self) -> tuple[int, int, int, int, int, float]:
        return (
            self.total,
            self.reserved,
            self.min_unit,
            self.max_unit,
            self.step_size,
            stored_ratio(self.allocation_ratio),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Inventory):
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Inventory:
        """Build from one class's record; missing fields take Placement's defaults."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def of(cls, spec: Inventory | int | Mapping[str, Any]) -> Inventory:
        """An Inventory to write, from itself, a total, or a mapping of fields.

        :raises InvalidInput: a field out of range, or a negative capacity
            (:func:`check_capacity`).
        """
        return check_capacity(cls._of(spec))

    @classmethod
    def _of(cls, spec: Inventory | int | Mapping[str, Any]) -> Inventory:
        if isinstance(spec, Inventory):
            return spec
        if isinstance(spec, int) and not isinstance(spec, bool):
            return cls(total=spec)
        if isinstance(spec, Mapping):
            # A caller's mapping, unlike Placement's record (from_json), is
            # refused whole when a key is unknown: a misspelled ``totl`` or
            # ``reserverd`` would otherwise silently take the default.
            unknown = sorted(str(k) for k in spec if k not in _FIELDS)
            if unknown:
                raise InvalidInput(
                    f"an inventory mapping has unknown key(s) {', '.join(map(repr, unknown))};"
                    f" its keys are {', '.join(_FIELDS)}"
                )
            if "total" not in spec:
                raise InvalidInput(f"an inventory mapping needs a 'total', got {dict(spec)!r}")
            return cls(**spec)
        raise InvalidInput(f"an inventory is an Inventory, a total or a mapping, got {spec!r}")

    def to_json(self) -> dict[str, Any]:
        """The record Placement accepts (every field sent, so none is left to defaults)."""
        return dataclasses.asdict(self)


#: The fields of an inventory record, as Placement names them.
_FIELDS = tuple(f.name for f in dataclasses.fields(Inventory))


def check_capacity(inventory: Inventory) -> Inventory:
    """Return ``inventory`` if Placement's inventory routes would store it: capacity >= 0.

    ``PUT``/``POST .../inventories`` refuse (400) an inventory whose
    ``int((total - reserved) * allocation_ratio)`` is below 0 (from 1.26;
    ``placement/handlers/inventory.py`` ``_validate_inventory_capacity``),
    so ``reserved`` above ``total`` is refused at a positive ratio. The
    rule is Placement's own arithmetic, truncation included, so nothing it
    stores is refused here.

    ``POST /reshaper`` skips that check in 16.0.0 and stores such an
    inventory (``tests/functional/test_bad_input_real.py`` shows it). The
    library refuses it on the reshaper too: an inventory with a negative
    capacity can hold no allocation, and every later inventory write of
    the provider that keeps it is refused, so storing it is a mistake that
    blocks the provider's inventory writes, never a capability.

    :raises InvalidInput: a negative capacity, naming ``reserved``.
    """
    if inventory.capacity < 0:
        raise InvalidInput(
            f"inventory reserved ({inventory.reserved}) leaves a negative capacity: "
            f"(total {inventory.total} - reserved {inventory.reserved}) * allocation_ratio "
            f"{inventory.allocation_ratio} < 0"
        )
    return inventory


def _kind_of(value: object) -> str:
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def inventories_from(value: object, what: str) -> dict[str, Inventory]:
    """A caller's ``{resource class: inventory}`` as validated :class:`Inventory` values.

    For what a caller's function returned (a mutate, a reshape's compute):
    anything else fails here, naming ``what``, before a request is built.

    :param what: who returned ``value``, for the message
        (``"update_inventories' mutate"``).
    :raises InvalidInput: ``value`` is not a mapping, or names a malformed
        resource class or inventory.
    """
    return _inventories(value, f"{what} returned", f"{what} returned a bad entry")


def inventories_of(value: object, what: str) -> dict[str, Inventory]:
    """Like :func:`inventories_from`, for inventories a caller gave as a value.

    :param what: whose inventories they are, for the message
        (``"the inventories of ProviderSpec <uuid>"``).
    :raises InvalidInput: as :func:`inventories_from`.
    """
    return _inventories(value, f"{what} are", f"{what} have a bad entry")


def _inventories(value: object, kind_prefix: str, entry_prefix: str) -> dict[str, Inventory]:
    if not isinstance(value, Mapping):
        raise InvalidInput(
            f"{kind_prefix} {_kind_of(value)}, expected a mapping of resource class -> inventory"
        )
    out: dict[str, Inventory] = {}
    for rc, spec in value.items():
        try:
            out[validate_standard_name(rc)] = Inventory.of(spec)
        except InvalidInput as exc:
            raise InvalidInput(f"{entry_prefix} for {rc!r}: {exc.message}") from exc
    return out


#: Given a copy of a provider's inventories, return what it should hold.
InventoryMutator = Callable[[dict[str, Inventory]], Mapping[str, Inventory]]


@dataclass(frozen=True, slots=True)
class ProviderInventories:
    """A provider's inventories as of ``generation``."""

    uuid: str
    generation: int
    inventories: Mapping[str, Inventory] = field(default_factory=dict)

    #: The route of this field under ``/resource_providers/{uuid}``.
    ROUTE = "inventories"

    @classmethod
    def from_json(cls, uuid: str, data: Mapping[str, Any]) -> ProviderInventories:
        """Build from ``GET``/``PUT .../inventories``."""
        raw = data.get("inventories") or {}
        return cls(
            uuid,
            int(data["resource_provider_generation"]),
            {rc: Inventory.from_json(inv) for rc, inv in raw.items()},
        )

    @property
    def value(self) -> dict[str, Inventory]:
        """A fresh copy of the field, for a mutate function to edit."""
        return dict(self.inventories)

    def body(self, value: Mapping[str, Inventory]) -> dict[str, Any]:
        """The PUT body replacing the field with ``value`` at this generation."""
        return {
            "resource_provider_generation": self.generation,
            "inventories": {rc: inv.to_json() for rc, inv in value.items()},
        }

    def holds(self, value: Mapping[str, Inventory]) -> bool:
        """Whether writing ``value`` would change nothing (ratios as :func:`stored_ratio`)."""
        return dict(self.inventories) == dict(value)


@dataclass(frozen=True, slots=True)
class _MemberSet:
    """What the two set-valued fields share: a frozenset under the key its route is named after.

    ``GET``/``PUT .../traits`` and ``.../aggregates`` (1.19+) carry
    ``{"<route>": [...], "resource_provider_generation": n}``; only the rule
    a member must meet differs (:meth:`_member`). A subclass adds the
    field itself, named ``ROUTE``.
    """

    uuid: str
    generation: int
    #: The route of this field under ``/resource_providers/{uuid}``, and its key.
    ROUTE: ClassVar[str]

    if TYPE_CHECKING:

        def __init__(self, uuid: str, generation: int, members: frozenset[str], /) -> None: ...

    @staticmethod
    def _member(value: object) -> str:
        raise NotImplementedError

    @property
    def _members(self) -> frozenset[str]:
        members: frozenset[str] = getattr(self, self.ROUTE)
        return members

    @classmethod
    def from_json(cls, uuid: str, data: Mapping[str, Any]) -> Self:
        """Build from ``GET``/``PUT`` of the field's route."""
        return cls(uuid, int(data["resource_provider_generation"]), frozenset(data[cls.ROUTE]))

    @property
    def value(self) -> set[str]:
        """A fresh copy of the field, for a mutate function to edit."""
        return set(self._members)

    def body(self, value: Iterable[str]) -> dict[str, Any]:
        """The PUT body replacing the field with ``value`` at this generation."""
        return {
            "resource_provider_generation": self.generation,
            self.ROUTE: sorted({self._member(v) for v in value}),
        }

    def holds(self, value: Iterable[str]) -> bool:
        """Whether writing ``value`` would change nothing."""
        return self._members == frozenset(value)


@dataclass(frozen=True, slots=True)
class ProviderTraits(_MemberSet):
    """A provider's traits as of ``generation``."""

    traits: frozenset[str] = frozenset()

    ROUTE = "traits"

    @staticmethod
    def _member(value: object) -> str:
        return validate_standard_name(value, "trait")


# Like ProviderTraits on purpose: only the public field, its route and the
# member rule differ; everything else is _MemberSet's.
@dataclass(frozen=True, slots=True)
class ProviderAggregates(_MemberSet):
    """A provider's aggregate uuids as of ``generation`` (microversion 1.19+)."""

    aggregates: frozenset[str] = frozenset()

    ROUTE = "aggregates"

    @staticmethod
    def _member(value: object) -> str:
        return validate_uuid(value, "aggregate")


@dataclass(frozen=True, slots=True)
class ProviderAllocations:
    """Every allocation against one provider, by consumer, as of ``generation``.

    ``GET /resource_providers/{uuid}/allocations``. Only this provider's
    part of each consumer is here; a consumer may hold more elsewhere.
    """

    uuid: str
    generation: int
    #: consumer uuid -> {resource class: amount} on this provider.
    allocations: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, uuid: str, data: Mapping[str, Any]) -> ProviderAllocations:
        """Build from the body of ``GET /resource_providers/{uuid}/allocations``."""
        raw = data.get("allocations") or {}
        return cls(
            uuid,
            int(data.get("resource_provider_generation") or 0),
            {
                consumer: {rc: int(n) for rc, n in (entry.get("resources") or {}).items()}
                for consumer, entry in raw.items()
            },
        )

    @property
    def consumers(self) -> tuple[str, ...]:
        """The uuids of the consumers holding anything here, sorted."""
        return tuple(sorted(self.allocations))

    @property
    def used(self) -> dict[str, int]:
        """The amount allocated per resource class, summed over the consumers."""
        total: dict[str, int] = {}
        for resources in self.allocations.values():
            for rc, amount in resources.items():
                total[rc] = total.get(rc, 0) + amount
        return total


@dataclass(frozen=True, slots=True)
class ProviderWrite:
    """One generation-guarded write of one provider field, as it was sent."""

    uuid: str
    route: str
    generation: int
    body: Mapping[str, Any]
