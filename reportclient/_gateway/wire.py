"""The seam between the gateway and the wire: what the gateway needs of a transport.

The gateway sends requests and asks which microversion is in use; it never
sees HTTP, keystoneauth1 or requests. :class:`reportclient._wire.transport.Transport`
is the implementation; tests may give the engine anything with this shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reportclient._model.microversions import Microversion

__all__ = ["Answer", "Wire"]


class Answer(Protocol):
    """A successful answer: its status and JSON body (None when it had none)."""

    @property
    def status(self) -> int: ...

    @property
    def body(self) -> Any: ...

    @property
    def request_id(self) -> str | None: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


class Wire(Protocol):
    """One request at a time to Placement, with typed errors for every failure.

    The two methods restate :class:`~reportclient._wire.transport.Transport`'s
    signatures: that is what a structural type is (the gateway may not import
    the wire), and mypy checks the two stay the same.

    ``request`` raises a :class:`~reportclient.errors.PlacementError` subclass
    for anything but a 2xx: :class:`~reportclient.errors.GenerationConflict`
    for a conflict, :class:`~reportclient.errors.PlacementUnavailable` (with
    ``outcome_unknown``) when a write may have landed unseen.
    """

    @property
    def microversion(self) -> Microversion: ...

    def supports(self, version: Microversion) -> bool: ...

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        consumer_uuid: str | None = None,
        global_request_id: str | None = None,
        at_most: Microversion | None = None,
    ) -> Answer: ...

    def send_raw(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        version: Microversion | None = None,
        global_request_id: str | None = None,
        timeout: tuple[float, float] | None = None,
    ) -> Answer: ...
