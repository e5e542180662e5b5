"""The surface bench's figure: what a move, a candidates query and a tree sync cost, by client.

Drawn from the results ``python -m bench surface`` prints: ``move`` and ``candidates`` (a
summary per variant) and ``reconcile`` (a summary per variant and phase). Not every variant
runs every operation (``@1.28`` moves only, ``ttl 60`` and ``cold cache`` reconcile only),
so a group of bars may lack one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.figures.spec import Figure, Panel, Series, caption

__all__ = ["figures"]

#: (key, unit, the summary's field)
MEASURES = (
    ("requests", "requests per operation", "requests_per_op"),
    ("p50", "median time per operation (ms)", "p50_ms"),
)


def _cells(results: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Each operation's summaries by variant, the tree sync's phases as operations of their own."""
    out = {"move": results["move"]["variants"], "candidates": results["candidates"]["variants"]}
    sync = results["reconcile"]
    for phase in sync["phases"]:
        out[f"tree {phase}"] = {name: by[phase] for name, by in sync["variants"].items()}
    return out


def figures(meta: Mapping[str, Any], results: Mapping[str, Any]) -> list[Figure]:
    """Grouped bars: requests and median time per operation, a bar per variant."""
    cells = _cells(results)
    ops = list(cells)
    variants: list[str] = []
    for by_variant in cells.values():
        variants += [v for v in by_variant if v not in variants]
    panels = tuple(
        Panel(
            key=key,
            title="what each operation sends" if key == "requests" else "how long it takes",
            kind="bars",
            x_label="operation",
            y_label=unit,
            x=tuple(ops),
            series=tuple(
                Series(v, tuple(cells[op][v][field] if v in cells[op] else None for op in ops))
                for v in variants
            ),
        )
        for key, unit, field in MEASURES
    )
    return [
        Figure(
            "surface",
            "Moves, allocation candidates and provider tree sync, reportclient beside nova",
            panels,
            caption(meta),
            columns=1,
        )
    ]
