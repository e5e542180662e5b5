"""The HTTP seam: keystoneauth1, microversions, request ids and logging.

Nothing outside this module builds a header or reads a status line.
Transport-level retries are switched off on purpose: a replayed write
would carry a stale consumer generation, so every retry belongs to the
client's policy, which re-reads before it writes again.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from urllib3 import exceptions as urllib3_exc

from reportclient.errors import (
    InvalidInput,
    MicroversionUnsupported,
    PlacementError,
    PlacementUnavailable,
    error_from_response,
)

__all__ = [
    "CONSUMER_GENERATION_VERSION",
    "CONSUMER_TYPE_VERSION",
    "MAX_VERSION",
    "Microversion",
    "Reply",
    "Transport",
]

LOG = logging.getLogger("reportclient")

Microversion = tuple[int, int]

#: Consumer generations on PUT/POST /allocations; the floor we accept.
CONSUMER_GENERATION_VERSION: Microversion = (1, 28)
#: ``consumer_type`` becomes required on allocation writes.
CONSUMER_TYPE_VERSION: Microversion = (1, 38)
#: The newest version this client knows (openstack-placement 16.0.0).
MAX_VERSION: Microversion = (1, 39)

_VERSION = re.compile(r"^(\d+)\.(\d+)$")
_GLOBAL_REQUEST_ID = re.compile(
    r"^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)


def parse_version(value: str) -> Microversion:
    """Turn ``"1.39"`` into ``(1, 39)``.

    :raises InvalidInput: for anything else.
    """
    match = _VERSION.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise InvalidInput(f"microversion must look like '1.39', got {value!r}")
    return int(match.group(1)), int(match.group(2))


def format_version(version: Microversion) -> str:
    """Turn ``(1, 39)`` into ``"1.39"``."""
    return f"{version[0]}.{version[1]}"


def _never_sent(exc: BaseException) -> bool:
    """Whether a failure happened before the connection existed.

    urllib3 tells a refused or timed-out connect (nothing sent) apart from
    a reset or read timeout (the request may have been applied); the
    distinction sits somewhere in the chain of wrapped exceptions.
    """
    stack: list[object] = [exc]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        # NewConnectionError subclasses ConnectTimeoutError in urllib3 2.
        if isinstance(item, urllib3_exc.ConnectTimeoutError):
            return True
        stack.extend((item.__cause__, item.__context__, getattr(item, "reason", None)))
        stack.extend(item.args)
    return False


def validate_request_id(value: str | None) -> str | None:
    """Return ``value`` if it is None or a ``req-<uuid4>`` global request id.

    :raises InvalidInput: otherwise; Placement would silently ignore it.
    """
    if value is not None and (not isinstance(value, str) or not _GLOBAL_REQUEST_ID.match(value)):
        raise InvalidInput(f"global_request_id must look like req-<uuid4>, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful response: status, parsed JSON body (or None), request id."""

    status: int
    body: Any
    request_id: str | None


class Transport:
    """Sends Placement requests through a keystoneauth1 Adapter.

    :param adapter: an Adapter whose endpoint is the Placement root.
    :param microversion: pin a version (``"1.28"`` .. ``"1.39"``) instead
        of negotiating it with the server.
    :param global_request_id: ``req-<uuid4>`` sent with every request so
        Placement's logs can be tied to the caller's.
    """

    def __init__(
        self,
        adapter: ks_adapter.Adapter,
        *,
        microversion: str | None = None,
        global_request_id: str | None = None,
    ) -> None:
        self._adapter = adapter
        self._lock = threading.Lock()
        self._version: Microversion | None = None
        if microversion is not None:
            pinned = parse_version(microversion)
            if not CONSUMER_GENERATION_VERSION <= pinned <= MAX_VERSION:
                raise InvalidInput(
                    f"microversion must be between {format_version(CONSUMER_GENERATION_VERSION)}"
                    f" and {format_version(MAX_VERSION)}, got {microversion}"
                )
            self._version = pinned
        self._global_request_id = validate_request_id(global_request_id)

    def __repr__(self) -> str:
        version = format_version(self._version) if self._version else "unnegotiated"
        return f"<Transport placement {version}>"

    @property
    def microversion(self) -> Microversion:
        """The version in use, negotiated with ``GET /`` on first use."""
        if self._version is None:
            with self._lock:
                if self._version is None:
                    self._version = self._negotiate()
        return self._version

    def supports(self, version: Microversion) -> bool:
        """Whether the version in use is at least ``version``."""
        return self.microversion >= version

    def _negotiate(self) -> Microversion:
        reply = self._send("GET", "/", version=None)
        try:
            root = reply.body["versions"][0]
            server_max = parse_version(root["max_version"])
            server_min = parse_version(root.get("min_version", "1.0"))
        except (KeyError, IndexError, TypeError, InvalidInput) as exc:
            raise PlacementError(
                f"unrecognised version document: {reply.body!r}",
                status=reply.status,
                request_id=reply.request_id,
                method="GET",
                url="/",
            ) from exc
        chosen = min(server_max, MAX_VERSION)
        if chosen < CONSUMER_GENERATION_VERSION or server_min > chosen:
            raise MicroversionUnsupported(
                f"Placement offers microversions {format_version(server_min)} to "
                f"{format_version(server_max)}; reportclient needs at least "
                f"{format_version(CONSUMER_GENERATION_VERSION)} for consumer generations",
                status=reply.status,
                request_id=reply.request_id,
                method="GET",
                url="/",
            )
        LOG.debug("negotiated placement microversion %s", format_version(chosen))
        return chosen

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        consumer_uuid: str | None = None,
        global_request_id: str | None = None,
    ) -> Reply:
        """Send one request at the version in use.

        :param global_request_id: overrides the transport's for this request.
        :raises PlacementError: (a subclass where one fits) for any answer
            of 400 or more, and for failures to reach the server.
        """
        return self._send(
            method,
            path,
            version=self.microversion,
            json=json,
            consumer_uuid=consumer_uuid,
            global_request_id=global_request_id,
        )

    def _send(
        self,
        method: str,
        path: str,
        *,
        version: Microversion | None,
        json: Any = None,
        consumer_uuid: str | None = None,
        global_request_id: str | None = None,
    ) -> Reply:
        kwargs: dict[str, Any] = {
            "raise_exc": False,
            "connect_retries": 0,
            "status_code_retries": 0,
        }
        if json is not None:
            kwargs["json"] = json
        if version is not None:
            kwargs["microversion"] = format_version(version)
            kwargs["microversion_service_type"] = "placement"
        request_id = global_request_id or self._global_request_id
        if request_id is not None:
            kwargs["global_request_id"] = request_id
        started = time.perf_counter()
        try:
            resp = self._adapter.request(path, method, **kwargs)
        except (ks_exc.ConnectionError, ks_exc.RetriableConnectionFailure) as exc:
            elapsed = (time.perf_counter() - started) * 1000
            LOG.debug("%s %s failed after %.1f ms: %s", method, path, elapsed, type(exc).__name__)
            never_sent = _never_sent(exc)
            raise PlacementUnavailable(
                "could not connect to Placement"
                if never_sent
                else f"no answer from Placement: {type(exc).__name__}",
                outcome_unknown=not never_sent,
                method=method,
                url=path,
                consumer_uuid=consumer_uuid,
            ) from exc
        except ks_exc.ClientException as exc:
            # Auth plugin and endpoint lookup failures: not Placement's answer.
            raise PlacementError(
                f"request not sent: {type(exc).__name__}: {exc}",
                method=method,
                url=path,
                consumer_uuid=consumer_uuid,
            ) from exc
        elapsed = (time.perf_counter() - started) * 1000
        # Placement 16.0.0 sends only the x- spelling; proxies may rename it.
        request_id = resp.headers.get("x-openstack-request-id") or resp.headers.get(
            "openstack-request-id"
        )
        LOG.debug(
            "%s %s -> %s (placement %s, %s, %.1f ms)",
            method,
            path,
            resp.status_code,
            format_version(version) if version else "-",
            request_id,
            elapsed,
        )
        if resp.status_code >= 400:
            raise error_from_response(
                status=resp.status_code,
                text=resp.text,
                request_id=request_id,
                method=method,
                url=path,
                consumer_uuid=consumer_uuid,
            )
        body = None
        if resp.status_code != 204 and resp.content:
            try:
                body = resp.json()
            except ValueError as exc:
                raise PlacementError(
                    "Placement answered with a body that is not JSON",
                    status=resp.status_code,
                    detail=resp.text[:500],
                    request_id=request_id,
                    method=method,
                    url=path,
                    consumer_uuid=consumer_uuid,
                ) from exc
        return Reply(resp.status_code, body, request_id)
