"""``python -m bench <subcommand> [options]``: dispatch to the subcommand's own ``main``.

Each subcommand parses its own options (``python -m bench <subcommand> --help``), so they are
exactly what the entry had as a script. Entries are imported only when chosen: ``model``
needs nothing but the library, ``run`` needs Placement and its database drivers.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

#: Subcommand: (module, one line for ``--help``).
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("bench.run", "workloads 1-7; --placement mariadb|postgresql, --shared, --galera"),
    "fleet": ("bench.fleet", "compute agents at fleet scale, and writers starved by claims"),
    "tracker": (
        "bench.tracker",
        "nova's resource tracker per period, nova's client beside the adapter",
    ),
    "surface": ("bench.surface", "moves, allocation candidates and reconcile beside nova"),
    "claims": (
        "bench.claims_nova",
        "fresh claims as nova's scheduler makes them, nova beside adapter",
    ),
    "saturation": ("bench.saturation", "claims at 0.5x-2x capacity beside provider writers (37)"),
    "overlap": ("bench.overlap", "two threads of one client overlap on a consumer (issue 35)"),
    "fake-vs-real": ("bench.fake_vs_real", "time per claim on the fake beside the real one"),
    "model": ("bench.model", "a model of N writers on one consumer, to try retry windows"),
    "memory": ("bench.memory", "the consumer cache's memory, one child measurement (run's 6)"),
    "plot": ("bench.plot", "draw a bench's figures again from its results JSON (--plot DIR)"),
}


def usage() -> str:
    """The top-level help: the subcommands and what each runs."""
    width = max(map(len, COMMANDS))
    lines = [
        "usage: python -m bench <subcommand> [options]",
        "",
        "reportclient's benchmarks; python -m bench <subcommand> --help for its options.",
        "",
        "subcommands:",
    ]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the subcommand named first in ``argv``; return its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        print(usage())
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"{usage()}\n\npython -m bench: unknown subcommand {name!r}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    status: int = module.main(rest)
    return status


if __name__ == "__main__":
    sys.exit(main())
