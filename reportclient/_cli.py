"""The ``reportclient`` console script."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reportclient", description="A conflict-safe client for the OpenStack Placement API."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="replay the shelve race and show reportclient recovering from it",
        description="Replay the shelve race (stale consumer generation after another "
        "writer deleted the consumer) and print each HTTP exchange.",
    )
    demo.add_argument(
        "--placement",
        choices=("embedded", "fake"),
        default="embedded",
        help="embedded: the real openstack-placement in this process (default; needs "
        "pip install 'reportclient[placement]'); fake: reportclient's in-memory fake "
        "(needs pip install 'reportclient[fixture]'); --url needs neither",
    )
    demo.add_argument("--url", help="an existing Placement root URL to use instead")
    demo.add_argument(
        "--token", default="admin", help="token for --url (noauth2: 'admin'; default: admin)"
    )
    demo.add_argument("-v", "--verbose", action="store_true", help="log reportclient's requests")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    args = _parser().parse_args(argv)
    root, retries = logging.getLogger("reportclient"), logging.getLogger("reportclient.retry")
    # Set for the demo only: a caller of main() (a test) keeps its own levels.
    saved = root.level, retries.level
    handler: logging.Handler | None = None
    if args.verbose:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.DEBUG)
    else:
        # The demo narrates each exchange itself; retry warnings would repeat
        # it, and so would the give-up of the story run without retries.
        root.setLevel(logging.ERROR)
        retries.setLevel(logging.CRITICAL)
    from reportclient._demo import run_demo

    try:
        return run_demo(args.placement, args.url, args.token)
    except RuntimeError as exc:
        print(f"reportclient demo: {exc}", file=sys.stderr)
        return 2
    finally:
        root.setLevel(saved[0])
        retries.setLevel(saved[1])
        if handler is not None:
            root.removeHandler(handler)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
