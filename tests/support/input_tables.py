"""Values and Placement 16.0.0's verdict on them, shared by the unit rules and the real checks.

Each row is ``(value, refused)``: ``refused`` is None when Placement stores the value, or
the word the local refusal must name (the field). ``tests/unit/model/test_validation_rules.py``
checks the library's rule against every row; ``tests/functional/test_bad_input_real.py``
sends the same rows raw to the real Placement and checks it gives the same verdict, so a
rule that refuses more (or less) than Placement fails there.
"""

from __future__ import annotations

from typing import Any

MAX_INT = 2**31 - 1

#: Inventory records for ``PUT /resource_providers/{uuid}/inventories`` at 1.39.
#: ``placement/schemas/inventory.py`` BASE_INVENTORY_SCHEMA: total, min_unit, max_unit,
#: step_size in 1..MAX_INT, reserved in 0..MAX_INT, allocation_ratio a number at most
#: SQL_SP_FLOAT_MAX (no minimum); every one an Integer/Float column of ``inventories``.
#: Then ``placement/handlers/inventory.py`` ``_validate_inventory_capacity`` (1.26+):
#: ``int((total - reserved) * allocation_ratio) < 0`` is refused.
INVENTORY_RECORDS: list[tuple[dict[str, Any], str | None]] = [
    ({"total": 1}, None),
    ({"total": MAX_INT}, None),
    ({"total": 0}, "total"),
    ({"total": -1}, "total"),
    ({"total": 2**31}, "total"),
    ({"total": 4, "reserved": -1}, "reserved"),
    ({"total": 4, "reserved": 2**31}, "reserved"),
    ({"total": 4, "min_unit": 0}, "min_unit"),
    ({"total": 4, "min_unit": 2**31}, "min_unit"),
    ({"total": 4, "max_unit": 0}, "max_unit"),
    ({"total": 4, "max_unit": 2**31}, "max_unit"),
    ({"total": 4, "max_unit": 1}, None),
    ({"total": 4, "step_size": 0}, "step_size"),
    ({"total": 4, "step_size": 2**31}, "step_size"),
    ({"total": 4, "allocation_ratio": 16.0}, None),
    # No minimum in the schema: a ratio of 0 is stored (capacity 0).
    ({"total": 4, "allocation_ratio": 0.0}, None),
    ({"total": 4, "allocation_ratio": 3.5e38}, "allocation_ratio"),
    # The capacity rule, Placement's arithmetic exactly (truncation and sign included).
    ({"total": 4, "reserved": 4}, None),
    ({"total": 4, "reserved": 5}, "reserved"),
    ({"total": 1, "reserved": 2, "allocation_ratio": 0.5}, None),
    ({"total": 4, "reserved": 5, "allocation_ratio": -1.0}, None),
    ({"total": 4, "allocation_ratio": -1.0}, "allocation_ratio"),
]


def inventory_id(row: tuple[dict[str, Any], str | None]) -> str:
    record, refused = row
    fields = ",".join(f"{k}={v}" for k, v in record.items())
    return f"{fields}->{'ok' if refused is None else 'refused'}"
