"""nova's raw requests answered as keystoneauth answers nova: a ``requests.Response``.

nova's ``SchedulerReportClient.get``/``put``/``post``/``delete`` hand back
keystoneauth's response whatever its status (``raise_exc=False``), and
nova's callers (nova-manage's heal and audit among them) read its
``status_code``, ``json()``, ``text`` and headers. The adapter sends those
requests through the client's gateway, where every answer of 400 or more is
a typed error; this rebuilds the response nova would have had from the
answer or the error: the status, Placement's error document
(``{"errors": [{"status", "title", "detail", "code", "request_id"}]}``, as
Placement words it from microversion 1.23) and the request id header.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import requests
from requests.structures import CaseInsensitiveDict

from reportclient.errors import PlacementError

__all__ = ["error_body", "response_of"]

REQUEST_ID_HEADER = "x-openstack-request-id"


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
