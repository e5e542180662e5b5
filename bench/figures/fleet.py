"""The fleet bench's figures: what each agent costs Placement per period, and the starvation.

Drawn from the rows ``bench.fleet_report`` prints its tables from (``results["fleet"]``: one
summary per phase and variant). The create phase is a one-off of a tree's life and costs ten
to forty times a period after it, so it gets a narrow panel of its own: on one scale the
periodic phases, where the clients differ most, would be slivers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.figures.spec import Figure, Panel, Series, caption

__all__ = ["figures"]

CREATE = "create"
#: (key, what the panels show, the summary's field)
MEASURES = (
    ("requests", "requests per agent-period", "requests_per_agent_period"),
    ("cpu", "Placement CPU ms per agent-period", "placement_cpu_ms_per_agent_period"),
)


def _order(rows: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    seen: list[str] = []
    for row in rows:
        if row[key] not in seen:
            seen.append(row[key])
    return seen


def _bars(
    rows: Sequence[Mapping[str, Any]], key: str, title: str, unit: str, field: str,
    phases: list[str], variants: list[str], width: float,
) -> Panel:  # fmt: skip
    cell = {(r["phase"], r["variant"]): r for r in rows}
    return Panel(
        key=key,
        title=title,
        kind="bars",
        x_label="phase",
        y_label=unit,
        x=tuple(phases),
        series=tuple(
            Series(v, tuple(cell[(p, v)][field] if (p, v) in cell else None for p in phases))
            for v in variants
        ),
        width=width,
    )


def fleet_figure(meta: Mapping[str, Any], results: Mapping[str, Any]) -> Figure:
    """Grouped bars: requests and Placement CPU per agent-period, by phase and variant."""
    rows = results["fleet"]
    phases, variants = _order(rows, "phase"), _order(rows, "variant")
    periodic = [p for p in phases if p != CREATE]
    panels: list[Panel] = []
    for key, unit, field in MEASURES:
        if CREATE in phases:
            panels.append(
                _bars(rows, f"{key}-create", "creating the trees", unit, field, [CREATE],
                      variants, 1.0)
            )  # fmt: skip
        if periodic:
            panels.append(
                _bars(rows, f"{key}-periods", "each period after", unit, field, periodic,
                      variants, max(len(periodic), 1.0))
            )  # fmt: skip
    shape = results.get("shape", {})
    title = "Fleet: what each compute agent costs Placement"
    if shape:
        title += (
            f" ({shape['agents']} agents per variant, {shape['placement']} behind "
            f"{shape['workers']} gunicorn workers, {shape['clock']})"
        )
    columns = 2 if CREATE in phases and periodic else 1
    return Figure("fleet", title, tuple(panels), caption(meta), columns=columns)


def starvation_figure(meta: Mapping[str, Any], results: Mapping[str, Any]) -> Figure:
    """Lines against the claim rate: each writer's success and requests per write."""
    rows = results["starvation"]
    rates = sorted({r["claims_per_s"] for r in rows})
    writers = _order(rows, "writer")
    cell = {(r["claims_per_s"], r["writer"]): r for r in rows}

    def panel(key: str, title: str, unit: str, value: Any, log_y: bool = False) -> Panel:
        return Panel(
            key=key,
            title=title,
            kind="lines",
            x_label="claims and releases offered on the provider (per s)",
            y_label=unit,
            x=tuple(float(r) for r in rates),
            series=tuple(
                Series(w, tuple(value(cell[(r, w)]) if (r, w) in cell else None for r in rates))
                for w in writers
            ),
            log_y=log_y,
        )

    return Figure(
        "starvation",
        "Starvation: one writer on one provider while schedulers claim on it",
        (
            panel(
                "success", "writes done", "writes reported done (%)", lambda r: 100.0 * r["success"]
            ),
            panel(
                "requests",
                "what a write costs",
                "requests per write",
                lambda r: r["requests_per_write"],
                log_y=True,
            ),
        ),
        caption(meta),
    )


def figures(meta: Mapping[str, Any], results: Mapping[str, Any]) -> list[Figure]:
    """The fleet figure, and the starvation figure when the run measured it."""
    out = []
    if results.get("fleet"):
        out.append(fleet_figure(meta, results))
    if results.get("starvation"):
        out.append(starvation_figure(meta, results))
    return out
