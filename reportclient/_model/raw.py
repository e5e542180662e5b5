"""A raw request and what it returns: a route the library has not typed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reportclient._model.microversions import Microversion

__all__ = ["RawAnswer", "RawRequest"]


@dataclass(frozen=True, slots=True)
class RawRequest:
    """A request to a route the library has not typed, its arguments already checked.

    Built once by :meth:`PlacementClient.request` and carried unchanged
    through the gateway (which forgets what it concerns) to the wire.

    :param method: the verb, upper case.
    :param path: the path and query under the Placement endpoint, from ``/``.
    :param json: the body of a PUT or POST, or None.
    :param version: send at exactly this microversion (None: the one in use).
    :param request_id: the global request id for this request (None: the client's).
    :param timeout: (connect, read) seconds for this request (None: the client's).
    """

    method: str
    path: str
    json: Any = None
    version: Microversion | None = None
    request_id: str | None = None
    timeout: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class RawAnswer:
    """A successful answer to :meth:`PlacementClient.request` (2xx; errors raise).

    :param status: the HTTP status (200, 201, 204...).
    :param body: the parsed JSON body, or None when there was none (204).
        It is Placement's document as sent, not a typed value: the caller
        owns its shape.
    :param headers: response headers, names in lower case, read-only;
        headers that can carry a credential (``Set-Cookie``) are left out.
    :param request_id: Placement's ``x-openstack-request-id``.
    :param microversion: the version the request was sent at.
    """

    status: int
    body: Any
    headers: Mapping[str, str]
    request_id: str | None
    microversion: str

    @property
    def location(self) -> str | None:
        """The ``Location`` header (a created provider's URL, for one), if any."""
        return self.headers.get("location")
