"""Child-process entry point: serve the real Placement on a file SQLite database.

Run as ``python -m reportclient.testing._server.serve --db PATH --port-file PATH [--port N]``.
:class:`~reportclient.testing.PlacementServer` starts this; it is not meant to be run by hand,
though doing so is harmless. Log lines go to stderr; one JSON object per served request is
appended to ``--requests-file`` when given.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
from types import FrameType
from typing import IO, TYPE_CHECKING

from reportclient.testing import _app
from reportclient.testing._process import watch_parent
from reportclient.testing._server.wsgi import (
    RecordingMiddleware,
    RequestRecord,
    current_request_ids,
    make_loopback_server,
)

if TYPE_CHECKING:
    from oslo_config import cfg

__all__ = ["main"]


class _RequestIdFilter(logging.Filter):
    """Add Placement's request ids to every record so the log can be grepped for them."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Attach ``request_id`` / ``global_request_id`` attributes; never drop a record."""
        request_id, global_id = current_request_ids()
        record.request_id = request_id or "-"
        record.global_request_id = global_id or "-"
        return True


def _setup_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_RequestIdFilter())
    handler.setFormatter(
        logging.Formatter(
            "%(asctime)s %(process)d %(levelname)s %(name)s "
            "[%(request_id)s %(global_request_id)s] %(message)s"
        )
    )
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    # INFO for placement only: its per-request log line is INFO, library chatter is not wanted.
    logging.getLogger("placement").setLevel(logging.INFO)
    logging.getLogger("reportclient.testing").setLevel(logging.INFO)


def _write_atomically(path: str, text: str) -> None:
    # The parent polls for this file; a rename means it never reads a half-written port.
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _prepare_database(conf: cfg.ConfigOpts) -> None:
    """Configure Placement's DB layer and bring the schema to head (``db sync`` equivalent)."""
    from placement import db_api
    from placement.db.sqlalchemy import migration

    db_api.configure(conf)
    # Alembic upgrade is idempotent, but skipping it on restart keeps restarts fast.
    if migration.version() is None:
        migration.upgrade("head")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # Turn SIGTERM into the same clean exit path as Ctrl-C (serve_forever unwinds).
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; return the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True, help="SQLite database file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", required=True, help="written once the port is bound")
    parser.add_argument("--requests-file", help="append one JSON line per request here")
    parser.add_argument("--parent-pid", type=int, help="exit when this process goes away")
    args = parser.parse_args(argv)

    _setup_logging()
    signal.signal(signal.SIGTERM, _interrupt)
    if args.parent_pid:
        threading.Thread(
            target=watch_parent, args=(args.parent_pid,), name="parent-watch", daemon=True
        ).start()
    log = logging.getLogger("reportclient.testing.serve")

    conf = _app.build_conf(f"sqlite:///{args.db}")
    _prepare_database(conf)
    # Runs the first-start trait/resource-class sync before the port is bound.
    app = _app.load_app(conf)

    requests_fh: IO[str] | None = None
    if args.requests_file:
        requests_fh = open(args.requests_file, "a", encoding="utf-8")

    def record(rec: RequestRecord) -> None:
        if requests_fh is not None:
            requests_fh.write(json.dumps(dataclasses.asdict(rec)) + "\n")
            # Flushed before the response is sent, so the parent sees it once answered.
            requests_fh.flush()

    server = make_loopback_server(RecordingMiddleware(app, record), args.host, args.port)
    try:
        _write_atomically(args.port_file, str(server.server_port))
        log.info("serving Placement on http://%s:%s", args.host, server.server_port)
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        log.info("stopping")
    finally:
        server.server_close()
        if requests_fh is not None:
            requests_fh.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
