"""Each bench's figure, drawn from small fixed results and read back from the SVG.

What a reader takes from a figure is checked as a reader would see it: the legend names
every client, the axes say what they measure and in which unit, every bar and point stands
where its value puts it, and the caption names the run. A figure that dropped a variant,
swapped two series or showed another column would fail here.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from bench import figures
from bench.figures.spec import slug
from tests.support import bench_results as results
from tests.support.svg import Svg


def draw(data: Mapping[str, Any], tmp_path: Path, stem: str = "fig") -> list[Svg]:
    return [Svg(p) for p in figures.save(data, tmp_path, stem)]


def legend(svg: Svg) -> list[str]:
    return [svg.text(i) for i in svg.ids("legend:")]


def assert_bars(svg: Svg, panel: str, values: Mapping[tuple[str, str], float]) -> None:
    """Every (series, category) has its bar, and the bars' heights are as their values."""
    drawn = {i for i in svg.ids(f"bar:{panel}:")}
    expected = {f"bar:{panel}:{slug(s)}:{slug(c)}" for s, c in values}
    assert drawn == expected
    (s0, c0), v0 = next(iter(values.items()))
    unit = svg.bar_height(f"bar:{panel}:{slug(s0)}:{slug(c0)}") / v0
    for (series, category), value in values.items():
        height = svg.bar_height(f"bar:{panel}:{slug(series)}:{slug(category)}")
        assert height == pytest.approx(value * unit, rel=1e-3), (series, category)


def assert_lines(
    svg: Svg, panel: str, values: Mapping[str, Sequence[float | None]], log_y: bool = False
) -> None:
    """Each series' line passes through its values, on one scale for the whole panel.

    The scale is found from two points (the SVG holds pixels, not data); every other point
    must then fall where its value puts it, to a tenth of a pixel.
    """
    assert set(svg.ids(f"line:{panel}:")) == {f"line:{panel}:{slug(s)}" for s in values}
    f = math.log10 if log_y else float
    pairs = []
    for series, ys in values.items():
        points = svg.points(f"line:{panel}:{slug(series)}")
        shown = [y for y in ys if y is not None]
        assert len(points) == len(shown), series
        xs = [x for x, _ in points]
        assert xs == sorted(xs), f"{series}: points out of order"
        pairs += [(f(v), py) for v, (_, py) in zip(shown, points, strict=True)]
    (v_low, p_low), (v_high, p_high) = min(pairs), max(pairs)
    scale = (p_high - p_low) / (v_high - v_low)
    assert scale < 0, "larger values must be drawn higher (SVG y grows downwards)"
    for value, pixel in pairs:
        assert pixel == pytest.approx(p_low + (value - v_low) * scale, abs=0.1)


def test_fleet_figure_shows_requests_and_cpu_per_phase_and_variant(tmp_path: Path) -> None:
    (svg,) = draw(results.FLEET, tmp_path)
    assert legend(svg) == ["rc agent", "nova", "nova on reportclient"]
    rows = results.FLEET["results"]["fleet"]
    for measure, field in (
        ("requests", "requests_per_agent_period"),
        ("cpu", "placement_cpu_ms_per_agent_period"),
    ):
        assert_bars(
            svg, f"{measure}-create",
            {(r["variant"], "create"): r[field] for r in rows if r["phase"] == "create"},
        )  # fmt: skip
        assert_bars(
            svg, f"{measure}-periods",
            {(r["variant"], r["phase"]): r[field] for r in rows if r["phase"] != "create"},
        )  # fmt: skip
    assert svg.text("ylabel:requests-periods") == "requests per agent-period"
    assert svg.text("ylabel:cpu-periods") == "Placement CPU ms per agent-period"
    assert svg.text("xlabel:cpu-periods") == "phase"


def test_fleet_figure_leaves_out_the_bar_of_a_variant_not_run_in_a_phase(
    tmp_path: Path,
) -> None:
    (svg,) = draw(results.FLEET, tmp_path)
    assert "bar:requests-periods:nova:steady" in svg.by_id
    assert "bar:requests-periods:nova:claims" not in svg.by_id


def test_fleet_starvation_draws_a_second_figure_when_measured(tmp_path: Path) -> None:
    data = copy.deepcopy(results.FLEET)
    data["results"]["starvation"] = [
        {"claims_per_s": rate, "writer": writer, "success": success, "requests_per_write": req}
        for rate, writer, success, req in [
            (10, "set_inventory", 1.0, 2.8),
            (10, "nova set_inventory_for_provider", 0.01, 4.0),
            (100, "set_inventory", 0.5, 170.0),
            (100, "nova set_inventory_for_provider", 0.04, 3.9),
        ]
    ]
    _, starvation = draw(data, tmp_path, "run")
    assert (tmp_path / "run-fleet.svg").exists() and (tmp_path / "run-starvation.svg").exists()
    assert legend(starvation) == ["set_inventory", "nova set_inventory_for_provider"]
    assert_lines(
        starvation, "success",
        {"set_inventory": [100.0, 50.0], "nova set_inventory_for_provider": [1.0, 4.0]},
    )  # fmt: skip
    assert_lines(
        starvation, "requests",
        {"set_inventory": [2.8, 170.0], "nova set_inventory_for_provider": [4.0, 3.9]},
        log_y=True,
    )  # fmt: skip
    assert svg_unit(starvation, "success") == "writes reported done (%)"


def svg_unit(svg: Svg, panel: str) -> str:
    return svg.text(f"ylabel:{panel}")


def test_claims_figure_shows_rate_and_requests_against_threads(tmp_path: Path) -> None:
    (svg,) = draw(results.CLAIMS, tmp_path)
    assert legend(svg) == ["nova", "adapter"]
    assert_lines(svg, "rate", {"nova": [30.0, 50.0, 55.0], "adapter": [36.0, 59.0, 62.0]})
    assert_lines(svg, "requests", {"nova": [2.0, 2.0, 2.0], "adapter": [1.0, 1.0, 1.0]})
    assert svg_unit(svg, "rate") == "successful claims/s"
    assert svg_unit(svg, "requests") == "requests per claim"
    assert svg.text("xlabel:rate") == "threads sharing one client"
    # 1, 4 and 16 threads, evenly spaced: a log-2 axis.
    xs = [x for x, _ in svg.points("line:rate:nova")]
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.01)


def test_saturation_figure_shows_goodput_against_offered_load(tmp_path: Path) -> None:
    (svg,) = draw(results.SATURATION, tmp_path)
    assert legend(svg) == ["reportclient", "nova"]
    # One point per cell, from its first row: the agents' rows repeat the cell's goodput.
    assert_lines(svg, "mariadb", {"reportclient": [40.4, 72.2, 73.0], "nova": [38.7, 65.5, 62.8]})
    assert svg_unit(svg, "mariadb") == "goodput: successful claims and writes/s"
    assert svg.text("xlabel:mariadb") == "claims offered (x the measured capacity)"
    assert "capacity 75 claims/s" in svg.text("title:mariadb")


def test_overlap_figure_shows_the_wrong_share_of_judged_rounds(tmp_path: Path) -> None:
    (svg,) = draw(results.OVERLAP, tmp_path)
    assert legend(svg) == ["mariadb x2 workers"]
    # 4 of 10 at 0 ms; 1 of the 5 rounds judged at 2 ms (5 raised); none at 50 ms.
    assert_lines(svg, "claim", {"mariadb x2 workers": [40.0, 20.0, 0.0]})
    assert_lines(svg, "release", {"mariadb x2 workers": [30.0, 0.0, 0.0]})
    assert svg_unit(svg, "claim") == "rounds with a wrong cache (% of judged)"


def test_run_draws_fresh_claims_contention_and_mixed_on_the_production_shape(
    tmp_path: Path,
) -> None:
    claims, contention, mixed = draw(results.PRODUCTION, tmp_path, "production-mariadb")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "production-mariadb-contention.svg",
        "production-mariadb-fresh-claims.svg",
        "production-mariadb-mixed.svg",
    ]
    assert_lines(claims, "rate", {"reportclient": [38.3, 63.8], "nova": [32.2, 59.2]})
    assert_lines(claims, "cpu", {"reportclient": [19.7, 23.5], "nova": [22.6, 25.0]})
    assert svg_unit(claims, "cpu") == "Placement CPU ms per claim"
    assert_lines(contention, "rate", {"reportclient": [19.5, 10.9], "nova": [13.5, 8.7]})
    assert_lines(
        contention, "p99", {"reportclient": [959.0, 6106.0], "nova": [1781.0, 7249.0]},
        log_y=True,
    )  # fmt: skip
    assert svg_unit(contention, "p99") == "p99 latency (ms, log scale)"
    assert_bars(mixed, "pair", {("reportclient", "pair"): 2.68, ("nova", "pair"): 2.53})
    assert_bars(
        mixed, "claimers", {("reportclient", "claimers"): 67.46, ("nova", "claimers"): 66.5}
    )


def test_run_on_sqlite_draws_workload_4_for_one_consumer_and_one_provider(
    tmp_path: Path,
) -> None:
    (svg,) = draw(results.SQLITE, tmp_path)
    assert legend(svg) == ["reportclient", "nova"]
    assert_lines(svg, "consumer-rate", {"reportclient": [49.0, 14.2], "nova": [49.4, 16.8]})
    assert_lines(svg, "provider-rate", {"reportclient": [64.1, 61.6], "nova": [52.0, 45.9]})
    assert_lines(
        svg, "consumer-p99", {"reportclient": [29.0, 4774.5], "nova": [31.7, 4399.3]},
        log_y=True,
    )  # fmt: skip
    assert svg_unit(svg, "consumer-rate") == "successful updates/s"
    assert svg_unit(svg, "provider-rate") == "successful claims/s"


def test_surface_figure_shows_requests_and_time_per_operation_and_client(
    tmp_path: Path,
) -> None:
    (svg,) = draw(results.SURFACE, tmp_path)
    assert legend(svg) == ["reportclient", "nova", "reportclient @1.28", "reportclient (ttl 60)"]
    assert_bars(
        svg, "requests",
        {("reportclient", "move"): 3.0, ("nova", "move"): 3.0, ("reportclient @1.28", "move"): 3.0,
         ("reportclient", "candidates"): 1.0, ("nova", "candidates"): 1.0,
         ("reportclient", "tree create"): 9.0, ("reportclient (ttl 60)", "tree create"): 9.0,
         ("nova", "tree create"): 10.0, ("reportclient", "tree unchanged"): 5.0,
         ("reportclient (ttl 60)", "tree unchanged"): 1.0, ("nova", "tree unchanged"): 0.0},
    )  # fmt: skip
    assert svg_unit(svg, "p50") == "median time per operation (ms)"
    assert svg.bar_height("bar:p50:nova:tree-create") == pytest.approx(
        svg.bar_height("bar:p50:reportclient:move") * 84.1 / 36.9, rel=1e-3
    )


@pytest.mark.parametrize(
    "data", [results.FLEET, results.CLAIMS, results.SATURATION, results.OVERLAP,
             results.PRODUCTION, results.SQLITE, results.SURFACE],
    ids=["fleet", "claims", "saturation", "overlap", "production", "sqlite", "surface"],
)  # fmt: skip
def test_every_figure_names_the_run_in_its_caption(data: Any, tmp_path: Path) -> None:
    for svg in draw(data, tmp_path):
        caption = svg.text("caption").replace("\n", " ")
        assert "python -m bench test --agents 3" in caption
        assert "2026-12-06T10:00:00+00:00" in caption
        assert "Test CPU 9000, 2 cores, Python 3.11.7" in caption


def test_a_figure_is_the_same_bytes_every_time_it_is_drawn(tmp_path: Path) -> None:
    first = figures.save(results.FLEET, tmp_path / "a", "fleet")[0].read_bytes()
    second = figures.save(results.FLEET, tmp_path / "b", "fleet")[0].read_bytes()
    assert first == second
    assert b"<dc:date>" not in first and b"Matplotlib v" not in first


def test_a_figure_reads_on_light_and_dark_pages(tmp_path: Path) -> None:
    """No background is painted, and every word is the grey that reads on white and black."""
    svg = Svg(figures.save(results.CLAIMS, tmp_path, "claims")[0])
    background = svg.by_id["patch_1"].find("{http://www.w3.org/2000/svg}path")
    assert background is not None and "fill: none" in background.get("style", "")
    texts = list(svg.root.iter("{http://www.w3.org/2000/svg}text"))
    assert texts
    assert {_fill(t.get("style", "")) for t in texts} == {"#767676"}


def _fill(style: str) -> str:
    return dict(p.split(": ", 1) for p in style.split("; "))["fill"]
