"""Every comparing bench takes ``--plot DIR`` and ``--quiet``; ``python -m bench plot`` redraws.

The argument parsers are checked without running a bench (each needs a cluster); the redraw
runs for real, from a results file, as the documentation's figures are made.
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bench import figures
from bench.__main__ import main as bench
from bench.support.common import command_line
from tests.support import bench_results as results
from tests.support.svg import Svg

#: The entries that compare clients, and a neutron scenario's place when it exists.
COMPARING = ["run", "claims_nova", "fleet", "saturation", "overlap", "surface"]


@pytest.mark.parametrize("entry", COMPARING)
def test_each_comparing_bench_accepts_plot_and_quiet(entry: str) -> None:
    build: Callable[[], argparse.ArgumentParser] = importlib.import_module(
        f"bench.{entry}"
    ).build_parser
    args = build().parse_args(["--plot", "figures", "--quiet"])
    assert args.plot == Path("figures")
    assert args.quiet is True
    defaults = build().parse_args([])
    assert defaults.plot is None and defaults.quiet is False


def test_the_caption_command_leaves_out_where_the_output_went() -> None:
    argv = ["--agents", "200", "--json", "out.json", "--plot=figs", "--quiet",
            "--variants", "rc agent,nova"]  # fmt: skip
    assert command_line("fleet", argv) == (
        'python -m bench fleet --agents 200 --variants "rc agent,nova"'
    )


def test_plot_redraws_the_figures_of_a_results_file_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "claims-mariadb.json"
    saved.write_text(json.dumps(results.CLAIMS), encoding="utf-8")
    assert bench(["plot", str(saved)]) == 0
    drawn = tmp_path / "claims-mariadb.svg"
    assert capsys.readouterr().out.strip() == f"{saved} -> {drawn}"
    assert Svg(drawn).text("ylabel:rate") == "successful claims/s"


def test_plot_of_a_directory_draws_every_results_file_into_plot_dir(tmp_path: Path) -> None:
    for name in ("fleet", "overlap"):
        data = getattr(results, name.upper())
        (tmp_path / f"{name}-x.json").write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "svg"
    assert bench(["plot", str(tmp_path), "--plot", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["fleet-x.svg", "overlap-x.svg"]


def test_plot_says_which_file_it_could_not_draw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "memory.json"
    bad.write_text(json.dumps({"meta": {"bench": "memory"}, "results": {}}), encoding="utf-8")
    assert bench(["plot", str(bad)]) == 1
    assert "no figures for bench 'memory'" in capsys.readouterr().err


def test_results_written_before_meta_named_their_bench_are_still_recognised() -> None:
    assert figures.bench_of({"meta": {}, "overlap": [], "requests": []}) == "overlap"
    assert figures.bench_of({"meta": {"mode": "full"}, "results": {}}) == "run"
