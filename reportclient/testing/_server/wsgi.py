"""A single-threaded loopback WSGI server plus request and log recording for Placement.

Single-threaded on purpose: SQLite allows one writer, and every multi-threaded server tried
against Placement+SQLite returned 500 "database is locked" under concurrent writes. The server
speaks HTTP/1.0 (wsgiref's default), so every connection carries exactly one request and an idle
keep-alive client can never starve the single serving thread.
"""

from __future__ import annotations

import logging
import socketserver
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from reportclient.testing._app import WSGIApp

__all__ = [
    "LISTEN_BACKLOG",
    "LogCaptureHandler",
    "LogLine",
    "LoopbackWSGIServer",
    "RecordingMiddleware",
    "RequestRecord",
    "current_request_ids",
    "make_loopback_server",
]

LOG = logging.getLogger("reportclient.testing")

#: Listen backlog; the socketserver default of 5 drops connections when a test client fires
#: a burst of concurrent requests at the single serving thread.
LISTEN_BACKLOG = 128

# WSGI environ keys set by oslo.middleware's request-id middleware and Placement's microversion
# middleware; read after the app ran to learn what Placement itself accepted.
_ENV_GLOBAL_REQUEST_ID = "openstack.global_request_id"
_ENV_REQUEST_ID = "openstack.request_id"
_ENV_MICROVERSION = "placement.microversion"


@dataclass(frozen=True)
class RequestRecord:
    """One HTTP request as the Placement server saw it on the wire."""

    method: str
    path: str
    query: str
    status: int
    #: ``X-Openstack-Request-Id`` header the client sent (any format), or None.
    sent_request_id: str | None
    #: Global request id Placement accepted from that header (``req-<uuid>`` only), or None.
    global_request_id: str | None
    #: Placement's own ``openstack-request-id`` response header.
    response_request_id: str | None
    #: Microversion Placement used for the request (``"1.0"`` when none was asked for).
    microversion: str | None


@dataclass(frozen=True)
class LogLine:
    """One log record emitted by a ``placement.*`` logger while serving."""

    logger: str
    level: str
    message: str
    #: Placement's local request id (``req-<uuid>``) of the request being served, if any.
    request_id: str | None
    #: Global request id Placement attached to that request, if any.
    global_request_id: str | None


class _QuietHandler(WSGIRequestHandler):
    """Request handler that does not print an access-log line per request to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        """Drop the per-request access line; RecordingMiddleware keeps a structured copy."""


class LoopbackWSGIServer(WSGIServer):
    """wsgiref server with a large backlog and no reverse-DNS lookup at bind time."""

    request_queue_size = LISTEN_BACKLOG
    # Lets restart() rebind the same port while old connections sit in TIME_WAIT.
    allow_reuse_address = True

    def server_bind(self) -> None:
        """Bind without ``socket.getfqdn`` (HTTPServer's default), which can stall on DNS."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)
        self.setup_environ()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Log socket-level errors (e.g. a client reset) instead of printing to stderr."""
        LOG.debug("error while serving %s", client_address, exc_info=True)


def make_loopback_server(app: WSGIApp, host: str = "127.0.0.1", port: int = 0) -> WSGIServer:
    """Bind a single-threaded WSGI server for ``app`` on ``host:port`` (0 = a free port)."""
    server = LoopbackWSGIServer((host, port), _QuietHandler)
    server.set_app(app)
    return server


def _header(headers: Iterable[tuple[str, str]], name: str) -> str | None:
    wanted = name.lower()
    for key, value in headers:
        if key.lower() == wanted:
            return value
    return None


class RecordingMiddleware:
    """WSGI middleware calling ``sink`` with a :class:`RequestRecord` for every request.

    The record is emitted once Placement has produced its status line and before the body is
    written to the socket, so by the time a client has its response the record is visible.
    """

    def __init__(self, app: WSGIApp, sink: Callable[[RequestRecord], None]) -> None:
        """Wrap ``app``; ``sink`` must be cheap and thread-safe."""
        self._app = app
        self._sink = sink

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        """Run the wrapped app and record what it answered."""
        sent_id = environ.get("HTTP_X_OPENSTACK_REQUEST_ID")
        seen: dict[str, Any] = {}

        def recording_start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            seen["status"] = int(status.split(None, 1)[0])
            seen["request_id"] = _header(headers, "openstack-request-id") or _header(
                headers, "x-openstack-request-id"
            )
            return start_response(status, headers, exc_info)

        result = self._app(environ, recording_start_response)
        microversion = environ.get(_ENV_MICROVERSION)
        self._sink(
            RequestRecord(
                method=environ.get("REQUEST_METHOD", ""),
                path=environ.get("PATH_INFO", ""),
                query=environ.get("QUERY_STRING", ""),
                status=seen.get("status", 0),
                sent_request_id=sent_id,
                global_request_id=environ.get(_ENV_GLOBAL_REQUEST_ID),
                response_request_id=seen.get("request_id"),
                microversion=str(microversion) if microversion is not None else None,
            )
        )
        return result


def current_request_ids() -> tuple[str | None, str | None]:
    """Return (request_id, global_request_id) of the oslo.context of the current thread."""
    from oslo_context import context

    ctx = context.get_current()
    if ctx is None:
        return None, None
    return getattr(ctx, "request_id", None), getattr(ctx, "global_request_id", None)


class LogCaptureHandler(logging.Handler):
    """Logging handler that keeps Placement's log lines as :class:`LogLine` records.

    Only records emitted by ``thread`` are kept, so lines logged by unrelated code in the test
    process (which shares the ``placement`` logger tree) do not pollute the capture.
    """

    def __init__(self, sink: Callable[[LogLine], None], level: int = logging.INFO) -> None:
        """Send each captured line to ``sink``."""
        super().__init__(level)
        self._sink = sink
        self.thread: threading.Thread | None = None

    def emit(self, record: logging.LogRecord) -> None:
        """Convert and forward one record; never raise into Placement."""
        if self.thread is not None and record.thread != self.thread.ident:
            return
        try:
            request_id, global_id = current_request_ids()
            self._sink(
                LogLine(
                    logger=record.name,
                    level=record.levelname,
                    message=record.getMessage(),
                    request_id=request_id,
                    global_request_id=global_id,
                )
            )
        except Exception:  # logging handlers must not break the code that logs
            self.handleError(record)
