"""Draw :class:`~bench.figures.spec.Figure` values as SVG, the same bytes every time.

The only module of the benchmarks that imports matplotlib (the ``plot`` extra), and only when
a figure is drawn, so a bench run without ``--plot`` needs none of it.

Why it looks as it does:

* **One file reads on a light and a dark page**: the background is transparent, text and axes
  are one neutral grey (``#767676``: 4.5:1 against white and against black, WCAG AA on both)
  and the series are the mid-tone Okabe-Ito colours, told apart by marker too.
* **Text stays text** (``svg.fonttype = none``): labels are searchable, and a test reads them
  back; every artist carries an id (:func:`~bench.figures.spec.gid`).
* **Deterministic**: ids are hashed with a fixed salt and the metadata carries no date or
  matplotlib version, so a checked-in figure changes only when its numbers do.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bench.figures.spec import Figure, Panel, gid

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["INK", "PALETTE", "draw", "require"]

#: Text, axes and ticks: the grey that reads on white and on black alike.
INK = "#767676"
#: Okabe-Ito's colours without black and yellow (invisible on one of the two themes).
PALETTE = ("#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#D55E00", "#0072B2")
MARKERS = ("o", "s", "^", "D", "v", "P")
#: Inches: a figure as wide as the documentation's text column, each row this high.
WIDTH, ROW = 9.0, 3.2
#: Characters of a title line, and legend entries side by side, at that width.
TITLE_WIDTH, LEGEND_COLUMNS = 95, 4
_STYLE: dict[str, Any] = {
    "svg.hashsalt": "reportclient-bench",
    "svg.fonttype": "none",
    # Every point of a line stays in its path (a test reads them back).
    "path.simplify": False,
    "font.family": "sans-serif",
    "font.size": 9,
    "text.color": INK,
    "axes.labelcolor": INK,
    "axes.edgecolor": INK,
    "axes.titlecolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "axes.facecolor": "none",
    "figure.facecolor": "none",
    "savefig.facecolor": "none",
    "savefig.transparent": True,
    "axes.grid": True,
    "grid.color": INK,
    "grid.alpha": 0.25,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
}


def require() -> None:
    """Fail now, before a long run, when matplotlib (the ``plot`` extra) is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise SystemExit(
            "--plot needs matplotlib: pip install 'reportclient[plot]', or run the bench "
            "from its tox environment (tox -e bench-fleet ...), which installs it"
        ) from exc


@contextmanager
def _style() -> Iterator[None]:
    import matplotlib

    # rc_context's stubs want every key as a literal; the style's keys are all valid.
    with matplotlib.rc_context(cast(Any, _STYLE)):
        yield


def draw(figure: Figure, path: Path) -> Path:
    """Write ``figure`` to ``path`` as SVG; return the path.

    The panels are laid out by matplotlib's constrained layout inside a band of the page;
    the title and the legend above it and the caption below are placed by hand, since the
    layout's own "outside" legend and suptitle overlap once the band is narrowed.
    """
    require()
    from matplotlib.figure import Figure as Canvas
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    rows = math.ceil(len(figure.panels) / figure.columns)
    title = textwrap.wrap(figure.title, TITLE_WIDTH)
    names = figure.series_names()
    legend_rows = math.ceil(len(names) / LEGEND_COLUMNS)
    caption_lines = figure.caption.count("\n") + 1
    head = 0.15 + 0.22 * len(title) + 0.25 * legend_rows  # inches
    foot = 0.15 + 0.15 * caption_lines
    height = ROW * rows + head + foot
    with _style():
        band = (0, foot / height, 1, (height - head - foot) / height)  # left, bottom, w, h
        canvas = Canvas(figsize=(WIDTH, height), layout=ConstrainedLayoutEngine(rect=band))
        widths = [p.width for p in figure.panels[: figure.columns]]
        grid = canvas.add_gridspec(rows, len(widths), width_ratios=widths)
        colours = {name: i for i, name in enumerate(names)}
        handles: dict[str, Any] = {}
        for index, panel in enumerate(figure.panels):
            axes = canvas.add_subplot(grid[divmod(index, figure.columns)])
            drawn = (
                _bars(axes, panel, colours)
                if panel.kind == "bars"
                else _lines(axes, panel, colours)
            )
            for name, handle in drawn.items():
                handles.setdefault(name, handle)
            _label(axes, panel)
        top = 1 - 0.1 / height
        canvas.text(0.5, top, "\n".join(title), ha="center", va="top", fontsize=11, gid="suptitle")
        shown = [n for n in names if n in handles]
        legend = canvas.legend(
            [handles[n] for n in shown],
            shown,
            loc="upper center",
            bbox_to_anchor=(0.5, top - (0.05 + 0.22 * len(title)) / height),
            ncols=min(len(shown), LEGEND_COLUMNS),
        )
        for i, text in enumerate(legend.get_texts()):
            text.set_gid(gid("legend", str(i)))
        canvas.text(
            0.5, 0.08 / height, figure.caption, ha="center", va="bottom", fontsize=7,
            linespacing=1.4, gid="caption",
        )  # fmt: skip
        path.parent.mkdir(parents=True, exist_ok=True)
        canvas.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
    return path


def _colour(colours: dict[str, int], name: str) -> tuple[str, str]:
    index = colours[name]
    return PALETTE[index % len(PALETTE)], MARKERS[index % len(MARKERS)]


def _bars(axes: Axes, panel: Panel, colours: dict[str, int]) -> dict[str, Any]:
    """One group of bars per category, one bar per series; a missing value draws no bar."""
    count = len(panel.series)
    width = 0.8 / max(count, 1)
    handles: dict[str, Any] = {}
    for j, series in enumerate(panel.series):
        colour, _ = _colour(colours, series.name)
        for i, (category, value) in enumerate(zip(panel.x, series.values, strict=True)):
            if value is None or math.isnan(value):
                continue
            offset = (j - (count - 1) / 2) * width
            (bar,) = axes.bar(i + offset, value, width * 0.92, color=colour)
            bar.set_gid(gid("bar", panel.key, series.name, str(category)))
            handles.setdefault(series.name, bar)
    axes.set_xticks(range(len(panel.x)), [str(c) for c in panel.x])
    axes.grid(axis="x", visible=False)
    axes.set_ylim(bottom=0)
    return handles


def _lines(axes: Axes, panel: Panel, colours: dict[str, int]) -> dict[str, Any]:
    """A line with markers per series; a missing value breaks its line."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    categorical = any(isinstance(x, str) for x in panel.x)
    xs = list(range(len(panel.x))) if categorical else [float(x) for x in panel.x]
    handles: dict[str, Any] = {}
    for series in panel.series:
        colour, marker = _colour(colours, series.name)
        ys = [math.nan if v is None else v for v in series.values]
        if panel.log_y:
            ys = [y if y > 0 else math.nan for y in ys]
        (line,) = axes.plot(xs, ys, color=colour, marker=marker, markersize=5, linewidth=1.6)
        line.set_gid(gid("line", panel.key, series.name))
        handles[series.name] = line
    if panel.log_x and not categorical:
        axes.set_xscale("log", base=2)
    if panel.log_y:
        axes.set_yscale("log")
        # Plain numbers at 1, 2 and 5 of each decade: a p99 reads as "2000 ms", not 10^3.
        axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axes.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    else:
        axes.set_ylim(bottom=0)
    axes.set_xticks(xs, [x if isinstance(x, str) else f"{x:g}" for x in panel.x])
    axes.minorticks_off()
    return handles


def _label(axes: Axes, panel: Panel) -> None:
    axes.set_title(panel.title, fontsize=9.5).set_gid(gid("title", panel.key))
    axes.set_xlabel(panel.x_label).set_gid(gid("xlabel", panel.key))
    axes.set_ylabel(panel.y_label).set_gid(gid("ylabel", panel.key))
