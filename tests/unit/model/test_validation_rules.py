"""One table per input rule: value -> accepted, or refused with InvalidInput naming the field.

Each table cites where Placement 16.0.0 draws the line: a JSON schema in
``placement/schemas/`` or a column in ``placement/db/sqlalchemy/models.py``
(``Integer`` is signed 32-bit on MariaDB and PostgreSQL; ``String(n)`` holds n
characters; PostgreSQL stores no NUL in text, so Placement on it answers 500).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from reportclient._model import validation as v
from reportclient._model.candidates import CandidatesQuery, RequestGroup
from reportclient._model.providers import Inventory
from reportclient.errors import InvalidInput
from tests.support.input_tables import INVENTORY_RECORDS, MAX_INT, inventory_id

UUID = "7b0d3e28-5d0b-4bd5-8f71-1d3f5e6b1a2c"
OK = None


def _check(rule: Callable[[], object], refused: str | None) -> None:
    if refused is None:
        rule()
        return
    with pytest.raises(InvalidInput, match=refused) as caught:
        rule()
    assert str(caught.value).startswith("Refused locally, before any request")


# -- owners: the allocation schemas' project_id/user_id (1-255), projects/users.external_id
# String(255); NUL refused for PostgreSQL.
OWNER_VALUES = [
    ("p", True),
    ("p" * 255, True),
    ("", False),
    ("p" * 256, False),
    (None, False),
    (7, False),
    ("p\x00q", False),
]


@pytest.mark.parametrize("field", ["project_id", "user_id"])
@pytest.mark.parametrize(("value", "accepted"), OWNER_VALUES)
def test_owner(field: str, value: object, accepted: bool) -> None:
    owner = {"project_id": "p", "user_id": "u", field: value}
    refused = None if accepted else field
    if isinstance(value, str) and "\x00" in value:
        refused = f"{field} must not contain a NUL"
    _check(lambda: v.validate_owner(owner["project_id"], owner["user_id"]), refused)


# -- provider names: resource_provider.py maxLength 200, resource_providers.name
# Unicode(200); Placement's create refuses "" ; NUL refused for PostgreSQL.
@pytest.mark.parametrize(
    ("value", "refused"),
    [
        ("n", OK),
        ("n" * 200, OK),
        ("é" * 200, OK),
        ("", "provider name"),
        ("n" * 201, "provider name.*201 characters"),
        (None, "provider name"),
        ("cn\x00", "provider name.*NUL"),
    ],
)
def test_provider_name(value: object, refused: str | None) -> None:
    _check(lambda: v.validate_provider_name(value), refused)


# -- resource classes (and traits, consumer types): common.py RC_PATTERN ^[A-Z0-9_]+$;
# resource_classes.name / traits.name / consumer_types.name are 255-character columns.
@pytest.mark.parametrize(
    ("value", "refused"),
    [
        ("VCPU", OK),
        ("CUSTOM_X_1", OK),
        ("A" * 255, OK),
        ("A" * 256, "resource class.*255"),
        ("vcpu", "resource class"),
        ("VCPU-X", "resource class"),
        ("VCPU\n", "resource class"),
        ("", "resource class"),
        (None, "resource class"),
    ],
)
def test_resource_class(value: object, refused: str | None) -> None:
    _check(lambda: v.validate_standard_name(value), refused)


# -- custom names: resource_class.py CUSTOM_RC_PATTERN + maxLength 255; trait.py
# CUSTOM_TRAIT (1-255).
@pytest.mark.parametrize(
    ("value", "refused"),
    [
        ("CUSTOM_A", OK),
        ("CUSTOM_" + "A" * 248, OK),
        ("CUSTOM_" + "A" * 249, "custom trait"),
        ("CUSTOM_", "custom trait"),
        ("HW_CPU_X86_AVX2", "custom trait"),
    ],
)
def test_custom_trait_name(value: str, refused: str | None) -> None:
    _check(lambda: v.validate_custom_name(value, "trait"), refused)


# -- consumer types: allocation.py ALLOCATION_SCHEMA_V1_38 pattern, 1-255.
@pytest.mark.parametrize(
    ("value", "refused"),
    [("INSTANCE", OK), ("A" * 255, OK), ("A" * 256, "consumer_type"), ("vm", "consumer_type")],
)
def test_consumer_type(value: object, refused: str | None) -> None:
    _check(lambda: v.validate_consumer_type(value), refused)


# -- amounts: allocation.py "minimum": 1; allocations.used Integer; max_unit <= MAX_INT.
AMOUNTS = [
    (1, OK),
    (MAX_INT, OK),
    (0, "amount of VCPU"),
    (-1, "amount of VCPU"),
    (2**31, "amount of VCPU"),
    (2**63, "amount of VCPU"),
    (True, "amount of VCPU"),
    (1.0, "amount of VCPU"),
    ("1", "amount of VCPU"),
]


@pytest.mark.parametrize(("value", "refused"), AMOUNTS)
def test_amount_in_allocations(value: object, refused: str | None) -> None:
    _check(lambda: v.normalize_allocations({UUID: {"VCPU": value}}), refused)


@pytest.mark.parametrize(("value", "refused"), AMOUNTS)
def test_amount_in_a_candidates_query(value: object, refused: str | None) -> None:
    _check(lambda: CandidatesQuery(resources={"VCPU": value}), refused)


@pytest.mark.parametrize(("value", "refused"), AMOUNTS)
def test_amount_in_a_resources_filter(value: object, refused: str | None) -> None:
    _check(lambda: v.validate_resources({"VCPU": value}), refused)


def test_a_256_character_class_is_refused_in_allocations_as_in_inventories() -> None:
    with pytest.raises(InvalidInput, match="resource class"):
        v.normalize_allocations({UUID: {"A" * 256: 1}})


# -- generations: resource_providers.generation and consumers.generation are Integer.
@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (0, OK),
        (MAX_INT, OK),
        (-1, "consumer_generation"),
        (2**31, "consumer_generation"),
        (True, "consumer_generation"),
        ("1", "consumer_generation"),
        (None, "consumer_generation"),
    ],
)
def test_generation(value: object, refused: str | None) -> None:
    _check(lambda: v.validate_generation(value, "consumer_generation"), refused)


# -- uuids: Placement's "format": "uuid" (and its 36-character UUID_PATTERN for keys).
@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (UUID, OK),
        (UUID.upper(), OK),
        (UUID[:-1], "in_tree"),
        (UUID.replace("-", ""), "in_tree"),
        ("x" * 36, "in_tree"),
        (UUID + "\n", "in_tree"),
        (None, "in_tree"),
    ],
)
def test_uuid(value: object, refused: str | None) -> None:
    _check(lambda: v.validate_uuid(value, "in_tree"), refused)


# -- traits filters (GET /resource_providers?required=, 1.18/1.22): names as above, "!"
# forbids; one string is refused rather than split into one-letter traits.
@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (["HW_CPU_X86_AVX2"], OK),
        (["HW_CPU_X86_AVX2", "!CUSTOM_GOLD"], OK),
        ((), OK),
        ("HW_CPU_X86_AVX2", "required must be an iterable"),
        (["hw"], "a trait in required"),
        (["!"], "a trait in required"),
        (["T" * 256], "a trait in required"),
        (["X", "!X"], "both requires and forbids X"),
    ],
)
def test_trait_filter(value: object, refused: str | None) -> None:
    _check(lambda: v.validate_trait_filter(value), refused)


@pytest.mark.parametrize(
    ("build", "refused"),
    [
        (lambda: RequestGroup(required="HW_CPU_X86_AVX2"), "required must be an iterable"),
        (lambda: RequestGroup(forbidden="HW_CPU_X86_AVX2"), "forbidden must be an iterable"),
        (lambda: RequestGroup(required=["T" * 256]), "trait"),
        (lambda: RequestGroup(member_of=UUID), "member_of must be an iterable"),
    ],
)
def test_candidates_query_shares_the_trait_and_aggregate_rules(
    build: Callable[[], Any], refused: str
) -> None:
    _check(build, refused)


# -- inventories: the shared table (tests/support/input_tables.py cites the schema and handler).
@pytest.mark.parametrize(
    ("record", "refused"), INVENTORY_RECORDS, ids=map(inventory_id, INVENTORY_RECORDS)
)
def test_inventory_record(record: dict[str, Any], refused: str | None) -> None:
    _check(lambda: Inventory.of(record), refused)


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (True, "inventory total must be an int"),
        ("4", "inventory total must be an int"),
        (4.0, "inventory total must be an int"),
    ],
)
def test_inventory_total_type(value: object, refused: str) -> None:
    _check(lambda: Inventory(total=value), refused)  # type: ignore[arg-type]


def test_an_inventory_placement_holds_with_reserved_above_total_can_still_be_read() -> None:
    """The reshaper stores one (it skips the capacity check): reading it must not fail."""
    held = Inventory.from_json({"total": 4, "reserved": 6})

    assert held.capacity == -2
    with pytest.raises(InvalidInput, match="negative capacity"):
        Inventory.of(held)
