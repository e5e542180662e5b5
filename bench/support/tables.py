"""The printed tables: figures right-aligned, the header every report starts with."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def fmt(value: Any, digits: int = 2) -> str:
    """A figure as printed: ``-`` for None and NaN, floats to ``digits`` places."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A left-aligned first column and right-aligned figures."""
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(row: Sequence[str]) -> str:
        first = row[0].ljust(widths[0])
        rest = (str(c).rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))
        return "  ".join([first, *rest])

    return [line([str(h) for h in headers]), line(["-" * w for w in widths])] + [
        line(r) for r in cells
    ]


def errors_cell(errors: dict[str, int]) -> str:
    """Errors by exception name, ``-`` when none."""
    return ", ".join(f"{k}x{v}" for k, v in errors.items()) or "-"


def header(title: str, meta: dict[str, Any]) -> list[str]:
    """The title, the machine and the mode: the first lines of ``run``'s and ``surface``'s."""
    return [
        title,
        f"machine: {meta['cpu_model']}, {meta['cores']} cores, Python {meta['python']}, "
        f"openstack-placement {meta['placement']}, keystoneauth1 {meta['keystoneauth1']}, "
        f"reportclient {meta['reportclient']}, nova {meta.get('nova') or '-'}",
        f"mode: {meta['mode']}   started: {meta['started']}",
    ]
