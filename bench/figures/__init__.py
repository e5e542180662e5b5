"""The benchmarks' figures: drawn from the results a bench prints and saves, never from its text.

Each comparing bench (``run``, ``surface``, ``claims``, ``fleet``, ``saturation``,
``overlap``) writes its results as JSON (``{"meta": ..., "results": ...}``; ``overlap``:
``{"meta", "overlap", "requests"}``) and prints its tables from the same values.
``--plot DIR`` draws the figures from those values as the run ends; ``python -m bench plot
RESULTS.json --plot DIR`` draws them again from the file, with no run, which is how the
documentation's figures are made (``doc/source/figures``: each SVG beside the JSON it was
drawn from).

A module per bench turns its results into :class:`~bench.figures.spec.Figure` values (pure,
no matplotlib); :mod:`bench.figures.render` alone draws them (matplotlib, the ``plot``
extra, imported only then). A bench that starts comparing clients gets a module here and a
line in :data:`BENCHES`: the neutron scenarios, once they exist, will be ``"neutron"``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.figures import claims, fleet, overlap, run, saturation, surface
from bench.figures.spec import Figure

__all__ = ["BENCHES", "bench_of", "figures_for", "load", "save"]

Results = Mapping[str, Any]
#: The bench a results file came from -> its figures, from the file's meta and results.
BENCHES: dict[str, Callable[[Results, Any], list[Figure]]] = {
    "run": run.figures,
    "claims": claims.figures,
    "fleet": fleet.figures,
    "saturation": saturation.figures,
    "overlap": overlap.figures,
    "surface": surface.figures,
    # Issue 55's hook for the neutron scenarios (no bench yet): a bench/figures/neutron.py
    # whose figures(meta, results) draws their requests, registered here as "neutron", and
    # the bench's main() taking output_options() and calling save_results(), as claims does.
}


def bench_of(data: Results) -> str:
    """The bench that wrote ``data``: its ``meta["bench"]``, or the shape of older files."""
    meta = data.get("meta", {})
    if meta.get("bench"):
        return str(meta["bench"])
    if "overlap" in data:
        return "overlap"
    if "results" in data:
        return "run"
    raise ValueError("not a benchmark's results: no meta.bench, no results")


def figures_for(data: Results) -> list[Figure]:
    """Every figure the results can draw (none for a bench that draws none)."""
    name = bench_of(data)
    if name not in BENCHES:
        raise ValueError(f"no figures for bench {name!r} (figures: {', '.join(BENCHES)})")
    body = data["overlap"] if name == "overlap" else data["results"]
    return BENCHES[name](data.get("meta", {}), body)


def load(path: Path) -> dict[str, Any]:
    """A results file as a bench wrote it."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def save(data: Results, directory: Path, stem: str) -> list[Path]:
    """Draw every figure of ``data`` into ``directory``; return the files written.

    One figure is ``STEM.svg``; several are ``STEM-NAME.svg``, so the results file
    ``fleet-mariadb.json`` draws ``fleet-mariadb.svg`` (or ``fleet-mariadb-starvation.svg``
    beside it) and the file says which results it shows.
    """
    from bench.figures.render import draw

    drawn = figures_for(data)
    return [
        draw(
            figure, directory / (f"{stem}.svg" if len(drawn) == 1 else f"{stem}-{figure.name}.svg")
        )
        for figure in drawn
    ]
