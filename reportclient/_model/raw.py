"""What a raw request returns: the answer to a route the library has not typed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RawAnswer"]


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
