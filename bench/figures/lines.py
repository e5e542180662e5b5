"""Panels of lines against a count (threads, writers, load): one series per client.

Every cluster bench but the fleet compares clients over a count its cells step through, so
one function builds those panels from result rows, whatever the bench calls its columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bench.figures.spec import Panel, Series

__all__ = ["against", "order"]

Row = Mapping[str, Any]


def order(rows: Sequence[Row], key: str) -> list[Any]:
    """The values of ``key`` in the order the rows first show them."""
    seen: list[Any] = []
    for row in rows:
        if row[key] not in seen:
            seen.append(row[key])
    return seen


def against(
    rows: Sequence[Row],
    *,
    key: str,
    title: str,
    x: str,
    x_label: str,
    series: str,
    value: str | Callable[[Row], float | None],
    y_label: str,
    log_x: bool = True,
    log_y: bool = False,
) -> Panel:
    """A panel of ``value`` against the rows' ``x``, a line per distinct ``series``.

    ``value`` names a field or computes the figure from a row; a row missing for an x leaves
    that point out. Counts that double (1, 4, 16, 64 threads) read best on a log-2 axis.
    """
    xs = sorted(order(rows, x))
    pick = (lambda r: r[value]) if isinstance(value, str) else value
    found = {(r[series], r[x]): pick(r) for r in rows}
    return Panel(
        key=key,
        title=title,
        kind="lines",
        x_label=x_label,
        y_label=y_label,
        x=tuple(float(v) for v in xs),
        series=tuple(
            Series(str(name), tuple(found.get((name, v)) for v in xs))
            for name in order(rows, series)
        ),
        log_x=log_x,
        log_y=log_y,
    )
