"""The overlap bench's figure: how often the cache ends wrong, per offset of the overlapping read.

Drawn from the ``overlap`` rows ``python -m bench overlap`` prints (one per database, workers,
operation and offset). A round either call raised in is not judged, so the rate is of the
judged rounds; the target is 0 at every offset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.figures.lines import order
from bench.figures.spec import Figure, Panel, Series, caption

__all__ = ["figures"]

Row = Mapping[str, Any]
TITLES = {
    "claim": "claim (cache_ttl=0) while B reads",
    "release": "release (cache_ttl=60) while B reads",
}


def wrong_share(row: Row) -> float | None:
    """Wrong rounds in percent of the judged ones; None when no round could be judged."""
    judged = row["rounds"] - sum(row["errors"].values())
    return 100.0 * row["wrong"] / judged if judged > 0 else None


def _panel(op: str, rows: Sequence[Row]) -> Panel:
    offsets = sorted(order(rows, "offset_ms"))
    shapes = order([{**r, "shape": f"{r['database']} x{r['workers']} workers"} for r in rows],
                   "shape")  # fmt: skip
    found = {(f"{r['database']} x{r['workers']} workers", r["offset_ms"]): r for r in rows}
    return Panel(
        key=op,
        title=TITLES.get(op, op),
        kind="lines",
        x_label="thread B's read starts this long after A's call (ms)",
        y_label="rounds with a wrong cache (% of judged)",
        x=tuple(f"{o:g}" for o in offsets),
        series=tuple(
            Series(
                shape,
                tuple(
                    wrong_share(found[(shape, o)]) if (shape, o) in found else None for o in offsets
                ),
            )
            for shape in shapes
        ),
    )


def figures(meta: Mapping[str, Any], rows: Sequence[Row]) -> list[Figure]:
    """A panel per operation: the wrong-cache rate per offset, a line per cluster shape."""
    return [
        Figure(
            "overlap",
            "Two threads of one client overlap on one consumer: does the cache end as "
            "Placement does? (target 0)",
            tuple(_panel(op, [r for r in rows if r["op"] == op]) for op in order(rows, "op")),
            caption(meta),
        )
    ]
