"""keystoneauth's view of an answer, rebuilt from the library's answer or typed error.

nova's and neutron-lib's clients talk to Placement through keystoneauth:
their callers read a ``requests.Response`` (nova's raw calls, neutron-lib's
``get_trait`` and ``update_trait``) or catch keystoneauth's exceptions (an
``HttpError`` subclass per status, ``ConnectFailure``, ``ConnectTimeout``).
The adapters send every request through the library's gateway, where an
answer of 400 or more is a typed :class:`~reportclient.errors.PlacementError`
and a failure with no answer keeps only the names of the transport's
exceptions (never the objects, which may hold a session and its token). This
module rebuilds what keystoneauth would have handed the host: the status,
Placement's error document (``{"errors": [{"status", "title", "detail",
"code", "request_id"}]}``, ``code`` from microversion 1.23) and the request
id header.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

import requests
from keystoneauth1 import exceptions as ks_exc
from requests.structures import CaseInsensitiveDict

from reportclient.errors import PlacementAuthError, PlacementEndpointError, PlacementError

__all__ = [
    "REQUEST_ID_HEADER",
    "chain_names",
    "error_body",
    "host_module",
    "http_error",
    "keystoneauth_error",
    "response_of",
]

REQUEST_ID_HEADER = "x-openstack-request-id"

_KS_BY_NAME = {
    "ConnectFailure": ks_exc.ConnectFailure,
    "ConnectTimeout": ks_exc.ConnectTimeout,
    "SSLError": ks_exc.SSLError,
    "UnknownConnectionError": ks_exc.UnknownConnectionError,
}


def host_module(name: str) -> Any:
    """Import one of the host project's modules when a call needs it (never at import).

    :raises ImportError: the host project is not installed.
    """
    return importlib.import_module(name)


def chain_names(exc: BaseException) -> tuple[str, ...]:
    """The names of the transport failures under ``exc`` (the wire keeps names, never objects).

    Followed down the causes and contexts: an ``OutcomeUnknown`` is raised
    from the lost answer's error, itself from the transport's failure.
    """
    names: list[str] = []
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        names.extend(name.rpartition(".")[2] for name in getattr(at, "chain", ()))
        at = at.__cause__ or at.__context__
    return tuple(names)


def keystoneauth_error(exc: PlacementError) -> Exception:
    """The keystoneauth exception the host's client would have met where no answer came.

    Auth and endpoint errors carry keystoneauth's own exception (cut loose of
    any credential) as their cause; for the transport's failures the wire kept
    only type names, so one of the same type is made with the error's message.
    """
    cause = exc.__cause__
    if isinstance(exc, (PlacementAuthError, PlacementEndpointError)) and isinstance(
        cause, ks_exc.ClientException
    ):
        return cause
    for name in chain_names(exc):
        kind = _KS_BY_NAME.get(name)
        if kind is not None:
            found: Exception = kind(exc.message)
            return found
    failure: Exception = ks_exc.ConnectFailure(exc.message)
    return failure


def error_body(exc: PlacementError, status: int | None = None) -> dict[str, Any]:
    """Placement's error document for the answer ``exc`` was made from (``status``: its own)."""
    error: dict[str, Any] = {
        "status": exc.status if status is None else status,
        "title": exc.title or "",
        "detail": exc.detail or exc.message,
    }
    if exc.code:
        error["code"] = exc.code
    if exc.request_id:
        error["request_id"] = exc.request_id
    return {"errors": [error]}


def response_of(
    status: int,
    body: Any,
    headers: Mapping[str, str],
    request_id: str | None,
    url: str,
) -> requests.Response:
    """A ``requests.Response`` with ``status``, ``body`` as JSON (None: empty) and ``headers``."""
    resp = requests.Response()
    resp.status_code = status
    resp.url = url
    resp.headers = CaseInsensitiveDict(dict(headers))
    if request_id and REQUEST_ID_HEADER not in resp.headers:
        resp.headers[REQUEST_ID_HEADER] = request_id
    if body is None:
        resp._content = b""
    else:
        resp._content = json.dumps(body).encode("utf-8")
        resp.headers.setdefault("content-type", "application/json")
    resp.encoding = "utf-8"
    return resp


def http_error(exc: PlacementError, status: int | None = None) -> Exception:
    """What keystoneauth's Session (``raise_exc=True``) raises for the request ``exc`` records.

    An answer becomes keystoneauth's ``HttpError`` subclass for its status
    (``NotFound``, ``Conflict``...), with the rebuilt response, ``details``
    and ``request_id``, as ``keystoneauth1.exceptions.from_response`` makes
    it; a failure with no answer, :func:`keystoneauth_error`.

    :param status: the status to answer with instead of ``exc``'s (an
        adapter answering input the library refused before the wire as
        Placement's 400).
    """
    status = exc.status if status is None else status
    if status is None:
        return keystoneauth_error(exc)
    url = exc.url or ""
    response = response_of(status, error_body(exc, status), {}, exc.request_id, url)
    built: Exception = ks_exc.from_response(response, exc.method or "GET", url)
    return built
