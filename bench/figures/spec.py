"""What a figure shows, as plain values: the one seam between a bench's results and matplotlib.

Each bench's module in this package turns the results it printed (the dict its ``--json``
writes) into :class:`Figure` values; :mod:`bench.figures.render` alone draws them. Keeping the
two apart lets a test check what a figure will show without drawing it, and lets the drawing
be tested once, on any figure, by reading the SVG back (every artist carries an id that says
which panel, series and category it is: :func:`gid`).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Figure", "Panel", "Series", "caption", "gid", "slug"]


@dataclass(frozen=True)
class Series:
    """One client or variant: a value per x of its panel; None where it was not measured."""

    name: str
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class Panel:
    """One set of axes.

    ``bars``: ``x`` are categories (phases, groups) and each series a bar in every category;
    ``lines``: ``x`` are numbers (threads, writers, load), or strings shown evenly spaced in
    their order (offsets that span 0 to 50 ms). ``y_label`` names the unit.
    """

    key: str
    title: str
    kind: Literal["bars", "lines"]
    x_label: str
    y_label: str
    x: tuple[float, ...] | tuple[str, ...]
    series: tuple[Series, ...]
    log_x: bool = False
    log_y: bool = False
    #: Relative width in its row, for a narrow panel beside a wide one.
    width: float = 1.0

    def __post_init__(self) -> None:
        for series in self.series:
            if len(series.values) != len(self.x):
                raise ValueError(
                    f"panel {self.key}: series {series.name!r} has {len(series.values)} "
                    f"values for {len(self.x)} x"
                )


@dataclass(frozen=True)
class Figure:
    """One SVG: a title, panels laid out ``columns`` to a row, and the caption under them."""

    name: str
    title: str
    panels: tuple[Panel, ...]
    caption: str
    columns: int = 2

    def series_names(self) -> list[str]:
        """Every series of every panel, in order of first appearance: the legend's entries."""
        names: list[str] = []
        for panel in self.panels:
            names += [s.name for s in panel.series if s.name not in names]
        return names


def slug(text: str) -> str:
    """``text`` as an id part: lower case, runs of other characters as one ``-``."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def gid(*parts: str) -> str:
    """The id an artist carries in the SVG: its role, then its panel, series and category."""
    return ":".join([parts[0], *(slug(p) for p in parts[1:])])


def caption(meta: Mapping[str, Any], width: int = 110) -> str:
    """The run's command, date and machine, as its figure's caption says them.

    A results file written by a bench carries ``command`` (its options, less where the output
    went) and ``date``; the machine is the one ``machine_info`` described. Results written
    by hand from a documented run's table say the same in the same keys.
    """
    command = meta.get("command") or "python -m bench " + " ".join(meta.get("argv", []))
    date = meta.get("date") or meta.get("started") or "date not recorded"
    machine = meta.get("machine") or _machine(meta)
    lines = textwrap.wrap(command, width, break_on_hyphens=False, subsequent_indent="    ")
    return "\n".join([*lines, f"{date}  ·  {machine}"])


def _machine(meta: Mapping[str, Any]) -> str:
    parts = [str(meta.get("cpu_model") or "unknown CPU")]
    if meta.get("cores"):
        parts.append(f"{meta['cores']} cores")
    if meta.get("python"):
        parts.append(f"Python {meta['python']}")
    return ", ".join(parts)
