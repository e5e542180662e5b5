"""Run the real Placement WSGI app in this process on a loopback port.

The database is an in-memory SQLite database. oslo.db creates ``sqlite://`` engines with a
``StaticPool`` (one connection shared by every thread, ``check_same_thread=False``); without
that every thread would get its own empty in-memory database. Placement's DB layer is a
process-wide ``enginefacade`` singleton, so only one :class:`EmbeddedPlacement` can run in a
process at a time; starting a second one raises instead of silently sharing or swapping DBs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, ClassVar

from reportclient.testing import _app
from reportclient.testing._server.base import SQLitePlacement
from reportclient.testing._server.wsgi import (
    LogCaptureHandler,
    LogLine,
    RecordingMiddleware,
    RequestRecord,
    make_loopback_server,
)

__all__ = ["EmbeddedPlacement"]

_JOIN_TIMEOUT = 10.0
# How often serve_forever checks for a shutdown request; bounds how long stop() takes.
_POLL_INTERVAL = 0.05


class EmbeddedPlacement(SQLitePlacement):
    """The real Placement (``noauth2``, in-memory SQLite) served from a daemon thread.

    Use as a context manager or call :meth:`start` / :meth:`stop`. Requests are served one at a
    time by a single thread because SQLite allows only one writer.
    """

    # Guards the process-wide Placement DB/policy globals; see the module docstring.
    _active_lock: ClassVar[threading.Lock] = threading.Lock()
    _active: ClassVar[EmbeddedPlacement | None] = None

    def __init__(self, host: str = "127.0.0.1", port: int = 0, log_level: int = logging.INFO):
        """Configure (but do not start) a server on ``host:port``; port 0 picks a free port.

        ``log_level`` is the lowest level of Placement's own log lines kept in
        :attr:`log_lines`; ``logging.INFO`` includes the one-line-per-request log.
        """
        self._host = host
        self._port = port
        self._log_level = log_level
        self._records_lock = threading.Lock()
        self._requests: list[RequestRecord] = []
        self._log_lines: list[LogLine] = []
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._engine: Any = None
        self._cleanups: list[Callable[[], None]] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> EmbeddedPlacement:
        """Create the DB, build the app, bind the port and start serving; return ``self``."""
        with EmbeddedPlacement._active_lock:
            if EmbeddedPlacement._active is self:
                raise RuntimeError("this EmbeddedPlacement is already running")
            if EmbeddedPlacement._active is not None:
                raise RuntimeError(
                    "another EmbeddedPlacement is running in this process; Placement's DB "
                    "layer is a process-wide singleton, stop the other one first"
                )
            EmbeddedPlacement._active = self
        return self._timed_start(self._start, self._run_cleanups)

    def _start(self) -> None:
        from oslo_db.sqlalchemy import engines  # type: ignore[import-untyped]
        from placement import db_api
        from placement.db.sqlalchemy import migration

        # Always release the "active" slot, whatever else failed.
        self._cleanups.append(self._release_slot)

        conf = _app.build_conf("sqlite://")
        engine = engines.create_engine("sqlite://")
        self._engine = engine
        self._cleanups.append(engine.dispose)
        if type(engine.pool).__name__ != "StaticPool":
            # Any other pool would hand the serving thread a different, empty memory DB.
            raise RuntimeError(f"in-memory SQLite needs a StaticPool, got {engine.pool!r}")
        migration.create_schema(engine)

        # enginefacade must be configured once per process before an engine can be patched in;
        # configure() is run-once and logs a warning when called again, hence the check.
        if not getattr(db_api.configure, "called", False):
            db_api.configure(conf)
        self._cleanups.append(db_api.placement_context_manager.patch_engine(engine))
        self._cleanups.append(_app.reset_process_globals)

        # Inserts standard traits/resource classes synchronously, before the port even exists.
        app = _app.load_app(conf)

        self._install_log_capture()
        self._server = make_loopback_server(
            RecordingMiddleware(app, self._add_request), self._host, self._port
        )
        self._cleanups.append(self._server.server_close)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": _POLL_INTERVAL},
            name=f"embedded-placement-{self.port}",
            daemon=True,
        )
        self._log_handler.thread = self._thread
        self._cleanups.append(self._shutdown_thread)
        self._thread.start()

    def _install_log_capture(self) -> None:
        placement_logger = logging.getLogger("placement")
        previous_level = placement_logger.level
        # Placement only writes its per-request INFO line when INFO is enabled for its logger.
        if placement_logger.getEffectiveLevel() > self._log_level:
            placement_logger.setLevel(self._log_level)
        handler = LogCaptureHandler(self._add_log_line, self._log_level)
        placement_logger.addHandler(handler)
        self._log_handler = handler

        def uninstall() -> None:
            placement_logger.removeHandler(handler)
            placement_logger.setLevel(previous_level)

        self._cleanups.append(uninstall)

    def _shutdown_thread(self) -> None:
        thread, server = self._thread, self._server
        if thread is None or server is None:
            return
        if thread.is_alive():
            # shutdown() waits for serve_forever to return, finishing any in-flight request.
            server.shutdown()
        thread.join(_JOIN_TIMEOUT)
        if thread.is_alive():
            raise RuntimeError(f"Placement server thread {thread.name} did not stop")

    def _release_slot(self) -> None:
        with EmbeddedPlacement._active_lock:
            if EmbeddedPlacement._active is self:
                EmbeddedPlacement._active = None

    def _run_cleanups(self) -> None:
        errors: list[BaseException] = []
        while self._cleanups:
            cleanup = self._cleanups.pop()
            try:
                cleanup()
            except Exception as exc:  # keep tearing down; report the first failure below
                errors.append(exc)
        self._server = None
        self._engine = None
        if errors:
            raise errors[0]

    def stop(self) -> None:
        """Stop serving, close the listening socket, join the thread and drop the DB.

        Safe to call more than once and after a failed :meth:`start`.
        """
        self._run_cleanups()

    # -- addresses ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while the serving thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def thread(self) -> threading.Thread | None:
        """The serving thread (kept after :meth:`stop` so tests can check it ended)."""
        return self._thread

    @property
    def port(self) -> int:
        """The bound TCP port."""
        return int(self._started(self._server).server_port)

    @property
    def wsgi_app(self) -> Any:
        """The WSGI application the server runs (with its request recording).

        The server answers one request at a time, so a test that makes
        another writer land *inside* a request (from a hook patched into
        Placement) calls this directly, in the serving thread.
        """
        return self._started(self._server).get_app()

    @property
    def max_microversion(self) -> str:
        """Highest microversion served, e.g. ``"1.39"``."""
        return _app.max_microversion()

    # -- what the server saw -----------------------------------------------------------------

    def _add_request(self, record: RequestRecord) -> None:
        with self._records_lock:
            self._requests.append(record)

    def _add_log_line(self, line: LogLine) -> None:
        with self._records_lock:
            self._log_lines.append(line)

    @property
    def requests_seen(self) -> list[RequestRecord]:
        """A snapshot of every request served since start or :meth:`clear_requests_seen`."""
        with self._records_lock:
            return list(self._requests)

    @property
    def log_lines(self) -> list[LogLine]:
        """A snapshot of Placement's own log lines captured while serving."""
        with self._records_lock:
            return list(self._log_lines)

    def clear_requests_seen(self) -> None:
        """Forget recorded requests and captured log lines (e.g. at the start of a test)."""
        with self._records_lock:
            self._requests.clear()
            self._log_lines.clear()

    def wire_count(self, method: str | None = None, path_prefix: str | None = None) -> int:
        """Count recorded requests, optionally only one HTTP method and/or path prefix."""
        return sum(
            1
            for r in self.requests_seen
            if (method is None or r.method == method.upper())
            and (path_prefix is None or r.path.startswith(path_prefix))
        )
