"""The documentation's figures: each drawn from a JSON beside it, whose numbers are its table's.

``doc/source/figures`` holds every figure the docs show and the results file it was drawn
from (``python -m bench plot`` redraws one from the other). Where the bench prints its
table from those results (the fleet and saturation tables), the table printed from the
checked-in JSON must be the one on the page: a re-run pasted into the docs without its JSON,
or a JSON edited away from its table, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import figures
from bench.fleet_report import render_fleet
from bench.saturation_report import render_database

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "doc" / "source"
FIGURES = DOCS / "figures"
PAGES = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.rst"))
BENCHMARKS = (DOCS / "benchmarks.rst").read_text(encoding="utf-8")


def _page_lines() -> set[str]:
    return {line.strip() for line in BENCHMARKS.splitlines()}


def test_every_figure_the_docs_show_is_checked_in_beside_the_json_it_was_drawn_from() -> None:
    shown = set(re.findall(r"\.\. figure:: figures/([\w.-]+\.svg)", PAGES))
    assert shown, "no figure in the docs"
    assert shown <= {p.name for p in FIGURES.glob("*.svg")}
    stems = {p.stem for p in FIGURES.glob("*.json")}
    for svg in shown:
        assert any(svg[: -len(".svg")] == s or svg.startswith(f"{s}-") for s in stems), svg


@pytest.mark.parametrize("path", sorted(FIGURES.glob("*.json")), ids=lambda p: p.stem)
def test_every_checked_in_results_file_draws_and_names_its_run(path: Path) -> None:
    data = figures.load(path)
    assert figures.figures_for(data)
    meta = data["meta"]
    assert meta["command"].startswith("python -m bench ") and meta["date"]


@pytest.mark.parametrize("path", sorted(FIGURES.glob("fleet-*.json")), ids=lambda p: p.stem)
def test_the_fleet_json_prints_the_fleet_table_on_the_page(path: Path) -> None:
    results = figures.load(path)["results"]
    table = render_fleet(results["fleet"], results["real_time"])
    assert {line.strip() for line in table} <= _page_lines()


@pytest.mark.parametrize("path", sorted(FIGURES.glob("saturation-*.json")), ids=lambda p: p.stem)
def test_the_saturation_json_prints_the_saturation_tables_on_the_page(path: Path) -> None:
    for db in figures.load(path)["results"]["databases"]:
        assert {line.strip() for line in render_database(db) if line} <= _page_lines()
