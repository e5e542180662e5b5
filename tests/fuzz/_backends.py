"""The two Placements a differential run talks to, both called in-process as WSGI apps.

Both sides get the very same WSGI environ (built once by webob from the same
method, path, headers and body), so what reaches each router is identical:
percent-decoding, Host, SCRIPT_NAME. No sockets: a request to the real
service costs a few milliseconds of SQLite, not a loopback round trip.

The real service is one :class:`~reportclient.testing.EmbeddedPlacement`
for the whole run (Placement's DB layer is a process-wide singleton, and
building it costs about a second). Between sequences its tables are emptied
with a few DELETEs instead, keeping the standard traits and resource classes
that the app inserted at its first start; Placement's attribute caches live
on the per-request context, so nothing else remembers the old rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import webob

from reportclient.fixture import FakePlacement
from reportclient.testing import EmbeddedPlacement

__all__ = ["HOST", "Answer", "FakeSide", "RealSide", "Request"]

#: The Host both sides see; Location headers are made absolute with it.
HOST = "placement.example"
# Children before parents (SQLite enforces no foreign keys here, but the order
# documents the schema); custom classes start at id 10000 and custom traits
# are the CUSTOM_ ones, the rest was seeded at start-up and stays.
_TRUNCATE = (
    "DELETE FROM allocations",
    "DELETE FROM consumers",
    "DELETE FROM consumer_types",
    "DELETE FROM projects",
    "DELETE FROM users",
    "DELETE FROM inventories",
    "DELETE FROM resource_provider_traits",
    "DELETE FROM resource_provider_aggregates",
    "DELETE FROM placement_aggregates",
    "DELETE FROM resource_providers",
    "DELETE FROM traits WHERE name LIKE 'CUSTOM\\_%' ESCAPE '\\'",
    "DELETE FROM resource_classes WHERE id >= 10000",
)


@dataclass(frozen=True)
class Request:
    """One request of a sequence, exactly as both sides receive it."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    #: what the generator meant, for the report (e.g. "PUT /allocations/{c}")
    route: str = ""
    microversion: str | None = None

    @classmethod
    def make(
        cls,
        method: str,
        path: str,
        *,
        route: str,
        microversion: str | None,
        json_body: Any = None,
        raw_body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Request:
        """A request with the usual headers: token, Accept, microversion, JSON body."""
        send = {"X-Auth-Token": "admin", "Accept": "application/json"}
        if microversion is not None:
            send["OpenStack-API-Version"] = f"placement {microversion}"
        body = raw_body
        if json_body is not None:
            body = json.dumps(json_body).encode()
        if body is not None:
            send["Content-Type"] = "application/json"
        send.update(headers or {})
        return cls(
            method,
            path,
            tuple((k, v) for k, v in send.items() if v is not None),
            body,
            route,
            microversion,
        )

    def describe(self) -> str:
        """One line for a report: method, path, microversion and body."""
        body = self.body.decode("utf-8", "replace") if self.body else ""
        extra = {k: v for k, v in self.headers if k not in ("X-Auth-Token",)}
        return f"{self.method} {self.path} {extra} {body}".rstrip()

    def environ(self) -> dict[str, Any]:
        """A fresh WSGI environ for this request (webob decodes the path once, for both)."""
        req = webob.Request.blank(
            self.path,
            method=self.method,
            headers=dict(self.headers),
            POST=None,
            environ={"HTTP_HOST": HOST, "SERVER_NAME": HOST, "SERVER_PORT": "80"},
        )
        if self.body is not None:
            req.body = self.body
        for key, value in self.headers:
            if key.lower() == "content-type":
                req.environ["CONTENT_TYPE"] = value
        return req.environ


@dataclass(frozen=True)
class Answer:
    """What one side answered."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def _call(app: Any, environ: dict[str, Any]) -> Answer:
    req = webob.Request(environ)
    resp = req.get_response(app)
    headers = {k.lower(): v for k, v in resp.headerlist}
    return Answer(resp.status_int, headers, resp.body)


class RealSide:
    """The real Placement: one embedded instance, emptied between sequences."""

    def __init__(self) -> None:
        self._server = EmbeddedPlacement()
        self._server.start()
        # Private by necessity: the app and engine are what make calls socket-free
        # and resets cheap; EmbeddedPlacement exposes neither.
        self._app = self._server._server.get_app()
        self._engine = self._server._engine

    def reset(self) -> None:
        """Empty every table but the seeded standard traits and resource classes."""
        with self._engine.begin() as conn:
            for statement in _TRUNCATE:
                conn.exec_driver_sql(statement)
        self._server.clear_requests_seen()

    def send(self, request: Request) -> Answer:
        """Serve one request."""
        return _call(self._app, request.environ())

    def close(self) -> None:
        """Stop the embedded service."""
        self._server.stop()


class FakeSide:
    """The fake: a new FakePlacement per sequence, served as WSGI like the real one."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self.fake = FakePlacement(**options)
        self._app = self.fake.wsgi_app()

    def reset(self) -> None:
        """A brand new fake."""
        self.fake = FakePlacement(**self._options)
        self._app = self.fake.wsgi_app()

    def send(self, request: Request) -> Answer:
        """Serve one request."""
        return _call(self._app, request.environ())
