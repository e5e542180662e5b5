"""The fake Placement as a WSGI application, for gabbi's in-process transport.

gabbi builds its WSGI app before any YAML fixture has run, while each YAML
file gets a fresh fake from its fixture. So the app is a thin forwarder to
whichever fake :func:`serve_fake` installed last, and it remembers whether
the fake answered 501 since :func:`reset_not_modelled` so that the runner
can tell "the fake does not model this" from "the fake got it wrong".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

from reportclient.fixture import FakePlacement
from reportclient.fixture._wsgi import environ_body, environ_headers

__all__ = ["FakeWSGIApp", "app_factory", "current_fake", "reset_not_modelled", "serve_fake"]

StartResponse = Callable[[str, list[tuple[str, str]]], Any]

_current: dict[str, Any] = {"fake": None, "not_modelled": []}


def serve_fake(fake: FakePlacement | None) -> None:
    """Route every following request to ``fake`` (None: none until the next one)."""
    _current["fake"] = fake


def current_fake() -> FakePlacement:
    """The fake the running YAML file talks to."""
    fake = _current["fake"]
    if fake is None:
        raise RuntimeError("no fake Placement installed; is the YAML fixture running?")
    return fake


def reset_not_modelled() -> list[str]:
    """Forget and return the requests answered 501 since the last call."""
    seen: list[str] = _current["not_modelled"]
    _current["not_modelled"] = []
    return seen


def _absolute(location: str, fake_url: str, environ: dict[str, Any]) -> str:
    # Placement sends its Location as a path and webob makes it absolute with
    # the host the request was sent to; the fake writes its own base URL.
    if not location.startswith(fake_url):
        return location
    host = environ.get("HTTP_HOST") or f"{environ['SERVER_NAME']}:{environ['SERVER_PORT']}"
    base = f"{environ.get('wsgi.url_scheme', 'http')}://{host}{environ.get('SCRIPT_NAME', '')}"
    return base + location[len(fake_url) :]


class FakeWSGIApp:
    """A WSGI callable answering from :func:`current_fake`."""

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        fake = current_fake()
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        query = environ.get("QUERY_STRING")
        url = fake.url + path + (f"?{query}" if query else "")
        method = environ["REQUEST_METHOD"]
        answer = fake.serve(method, url, environ_headers(environ), environ_body(environ))
        if answer.status == 501:
            _current["not_modelled"].append(f"{method} {path}")
        try:
            reason = HTTPStatus(answer.status).phrase
        except ValueError:
            reason = "Unknown"
        headers = [
            (k, _absolute(v, fake.url, environ) if k.lower() == "location" else v)
            for k, v in answer.headers.items()
            if k.lower() != "content-length"
        ]
        headers.append(("content-length", str(len(answer.body))))
        start_response(f"{answer.status} {reason}", headers)
        return [answer.body] if method != "HEAD" else []


def app_factory() -> FakeWSGIApp:
    """What gabbi's ``intercept=`` wants: a callable returning the WSGI app."""
    return FakeWSGIApp()
