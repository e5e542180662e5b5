"""A tiny Keystone on 127.0.0.1: enough of the v3 API for keystoneauth's password plugin.

It serves version discovery (``GET /`` and ``GET /v3``) and ``POST
/v3/auth/tokens``. One user, ``admin`` / :data:`PASSWORD` in the Default
domain, gets the token :data:`TOKEN` with a catalog holding one Placement
endpoint per interface in ``RegionOne``. The token is ``admin`` because the
real Placement in these tests runs ``noauth2``, which takes the token as the
user name; anything else answers 401 as Keystone words it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

USER = "admin"
PASSWORD = "correct horse battery staple"  # the stub's own test password
TOKEN = "admin"  # what noauth2 takes as the admin user
REGION = "RegionOne"
JOIN_TIMEOUT = 10.0


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""


def _v3(url: str) -> dict[str, Any]:
    return {
        "id": "v3.14",
        "status": "stable",
        "updated": "2020-04-07T00:00:00Z",
        "links": [{"rel": "self", "href": f"{url}/v3/"}],
        "media-types": [
            {"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}
        ],
    }


def _token(catalog: list[dict[str, Any]]) -> dict[str, Any]:
    domain = {"id": "default", "name": "Default"}
    return {
        "token": {
            "methods": ["password"],
            "expires_at": "2099-01-01T00:00:00.000000Z",
            "issued_at": "2026-01-01T00:00:00.000000Z",
            "user": {"id": "u-admin", "name": USER, "domain": domain},
            "project": {"id": "p-admin", "name": "admin", "domain": domain},
            "roles": [{"id": "r-admin", "name": "admin"}],
            "catalog": catalog,
        }
    }


class IdentityStub:
    """The stub's state: its URL once started, and what it was asked."""

    def __init__(self, placement_url: str) -> None:
        self.placement_url = placement_url
        self.url = ""
        #: (method, path) of every request, in order.
        self.seen: list[tuple[str, str]] = []
        #: password-auth bodies received, for asserting what was sent.
        self.auth_bodies: list[dict[str, Any]] = []

    def catalog(self) -> list[dict[str, Any]]:
        endpoints = [
            {"id": f"ep-{i}", "interface": i, "region": REGION, "region_id": REGION}
            | {"url": self.placement_url}
            for i in ("public", "internal", "admin")
        ]
        return [
            {
                "id": "svc-placement",
                "type": "placement",
                "name": "placement",
                "endpoints": endpoints,
            }
        ]

    def app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"].rstrip("/")
        self.seen.append((method, path or "/"))
        headers = [("Content-Type", "application/json")]
        if method == "GET" and path == "":
            status, body = "300 Multiple Choices", {"versions": {"values": [_v3(self.url)]}}
        elif method == "GET" and path == "/v3":
            status, body = "200 OK", {"version": _v3(self.url)}
        elif method == "POST" and path == "/v3/auth/tokens":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            sent = json.loads(environ["wsgi.input"].read(length) or b"{}")
            self.auth_bodies.append(sent)
            user = sent.get("auth", {}).get("identity", {}).get("password", {}).get("user", {})
            if user.get("name") == USER and user.get("password") == PASSWORD:
                status, body = "201 Created", _token(self.catalog())
                headers.append(("X-Subject-Token", TOKEN))
            else:
                status = "401 Unauthorized"
                body = {
                    "error": {
                        "code": 401,
                        "title": "Unauthorized",
                        "message": "The request you have made requires authentication.",
                    }
                }
        else:
            status, body = "404 Not Found", {"error": {"code": 404, "title": "Not Found"}}
        start_response(status, headers)
        return [json.dumps(body).encode()]


@contextmanager
def identity_stub(placement_url: str) -> Iterator[IdentityStub]:
    """Run an :class:`IdentityStub` on a free 127.0.0.1 port for the block."""
    stub = IdentityStub(placement_url)
    server: WSGIServer = make_server("127.0.0.1", 0, stub.app, handler_class=_QuietHandler)
    stub.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        thread.join(JOIN_TIMEOUT)
        server.server_close()
        assert not thread.is_alive()
