"""The saturation bench's figure: goodput against the load offered, per client and database.

Drawn from ``results["databases"]``, the rows ``python -m bench saturation`` prints: every row
of a cell carries the cell's goodput (successful claims and provider writes per second).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.figures.lines import against
from bench.figures.spec import Figure, caption

__all__ = ["figures"]


def figures(meta: Mapping[str, Any], results: Mapping[str, Any]) -> list[Figure]:
    """A panel per database: goodput against the claims offered, a line per client."""
    panels = []
    for db in results["databases"]:
        cells: dict[tuple[str, float], Mapping[str, Any]] = {}
        for row in db["rows"]:
            cells.setdefault((row["client"], row["factor"]), row)
        capacity = sum(db["capacity"]) / len(db["capacity"])
        panels.append(
            against(
                list(cells.values()),
                key=db["database"],
                title=f"{db['database']}, {db['workers']} gunicorn workers "
                f"(capacity {capacity:.0f} claims/s)",
                x="factor",
                x_label="claims offered (x the measured capacity)",
                series="client",
                value="goodput_per_s",
                y_label="goodput: successful claims and writes/s",
                log_x=False,
            )
        )
    pace = results["databases"][0]["pace"] if results["databases"] else 0
    agents = f"agents begin a write every {pace:g} s" if pace else "agents write back to back"
    return [
        Figure(
            "saturation",
            f"Saturation: claims around Placement's capacity beside three agents ({agents})",
            tuple(panels),
            caption(meta),
        )
    ]
