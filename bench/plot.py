"""Draw a bench's figures again from its saved results, without running it.

Usage: ``python -m bench plot RESULTS.json [RESULTS.json ...] [--plot DIR]``; a directory
stands for every ``*.json`` in it. Each file draws ``STEM.svg`` (``STEM-NAME.svg`` when it
has several figures) into ``--plot DIR``, by default beside the file. The documentation's
figures are made this way (``tox -e figures`` redraws every one under
``doc/source/figures``), so each can be checked against the JSON beside it and redrawn
after a change to how figures look, with the run's numbers untouched.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import figures

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """``python -m bench plot``'s options."""
    parser = argparse.ArgumentParser(
        prog="python -m bench plot", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("results", nargs="+", type=Path, help="results JSON, or a directory")
    parser.add_argument(
        "--plot", type=Path, metavar="DIR", help="where to write the SVGs (default: beside each)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Draw every figure of every results file named; exit 1 when one cannot be drawn."""
    args = build_parser().parse_args(argv)
    paths: list[Path] = []
    for given in args.results:
        paths += sorted(given.glob("*.json")) if given.is_dir() else [given]
    if not paths:
        print("python -m bench plot: no results file found", file=sys.stderr)
        return 1
    failed = 0
    for path in paths:
        try:
            written = figures.save(figures.load(path), args.plot or path.parent, path.stem)
        except (OSError, ValueError, KeyError) as exc:
            print(f"{path}: cannot draw: {exc!r}", file=sys.stderr)
            failed += 1
            continue
        for svg in written:
            print(f"{path} -> {svg}")
    return 1 if failed else 0
