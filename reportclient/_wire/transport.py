"""The HTTP seam: keystoneauth1, microversions, request ids and logging.

Nothing outside this module builds a header or reads a status line.
Writes are never replayed below the client: a replayed write would carry a
stale consumer generation, so every retry of a write belongs to the
client's policy, which re-reads before it writes again. keystoneauth's
retries are switched off for writes, and a requests transport adapter
whose urllib3 ``Retry`` would resend one is refused. Reads are harmless to
repeat and keep whatever retries the operator configured.
"""

from __future__ import annotations

import copy
import logging
import math
import re
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import requests
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import base as ks_identity

from reportclient._model.microversions import CONSUMER_GENERATION_VERSION, MAX_VERSION, Microversion
from reportclient._wire.failures import (
    Failure,
    Kind,
    TransportFailure,
    classify,
    redact,
    refuse_write_replays,
)
from reportclient._wire.negotiation import (
    choose,
    discovered_range,
    format_version,
    parse_version,
    root_range,
)
from reportclient._wire.responses import error_from_response
from reportclient.errors import (
    InvalidInput,
    MicroversionUnsupported,
    PlacementAuthError,
    PlacementEndpointError,
    PlacementError,
    PlacementUnavailable,
)

__all__ = [
    "DEFAULT_POOL_SIZE",
    "DEFAULT_TIMEOUT",
    "Reply",
    "Transport",
    "accepting_json",
    "size_pool",
    "validate_request_id",
    "validate_timeout",
]

#: One DEBUG line per request and per failure to get an answer.
LOG = logging.getLogger("reportclient.wire")

# Asked for on every request, as OpenStack's clients do: what comes back,
# errors included, is then JSON wherever the server (or webob beneath it)
# decides by the Accept header.
_ACCEPT = {"Accept": "application/json"}

#: (connect, read) seconds. A stalled server must not hold a scheduler
#: thread forever; the read timeout is generous because a write that times
#: out reading leaves its outcome unknown and costs a read to settle.
DEFAULT_TIMEOUT: tuple[float, float] = (5.0, 30.0)

#: Connections kept per host. requests' default (10) makes a burst of 64
#: threads sharing one client open 54 throwaway connections ("pool is full").
DEFAULT_POOL_SIZE = 64


def size_pool(session: requests.Session, size: int) -> None:
    """Mount keystoneauth's keep-alive adapter with a pool of ``size`` on ``session``.

    :raises InvalidInput: unless ``size`` is an int of at least 1.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidInput(f"pool_size must be an int >= 1, got {size!r}")
    for scheme in ("http://", "https://"):
        session.mount(scheme, ks_session.TCPKeepAliveAdapter(pool_maxsize=size))


_GLOBAL_REQUEST_ID = re.compile(r"req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_READS = frozenset({"GET", "HEAD"})


def _positive(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def validate_timeout(value: object) -> tuple[float, float]:
    """Return ``value`` as a (connect, read) pair of seconds.

    :param value: a positive number (for both) or a pair of them.
    :raises InvalidInput: for anything else; no timeout is not an option.
    """
    pair = value if isinstance(value, tuple | list) else (value, value)
    if len(pair) == 2:
        connect, read = _positive(pair[0]), _positive(pair[1])
        if connect is not None and read is not None:
            return connect, read
    raise InvalidInput(
        f"timeout must be a positive number of seconds or a (connect, read) pair, got {value!r}"
    )


def validate_request_id(value: str | None) -> str | None:
    """Return ``value`` if it is None or a ``req-<uuid4>`` global request id.

    :raises InvalidInput: otherwise; Placement would silently ignore it.
    """
    if value is not None and (
        not isinstance(value, str) or not _GLOBAL_REQUEST_ID.fullmatch(value)
    ):
        raise InvalidInput(f"global_request_id must look like req-<uuid4>, got {value!r}")
    return value


# Response headers every answer keeps (requests' header lookup ignores case).
_TIME_HEADERS = ("date", "last-modified")
# Response headers a raw answer never carries: they can hold a credential.
_UNSAFE_HEADERS = frozenset({"set-cookie", "x-subject-token", "x-auth-token"})


def accepting_json(adapter: ks_adapter.Adapter) -> ks_adapter.Adapter:
    """``adapter``, or a shallow copy of it, that sends ``Accept: application/json``.

    keystoneauth adds an Adapter's ``additional_headers`` to each request, so
    no call builds the header. The caller's Adapter is copied rather than
    changed: an openstacksdk Connection's is shared with everything else it
    does. The copy shares the Session, the auth plugin and their state.
    """
    headers = adapter.additional_headers or {}
    if any(name.lower() == "accept" for name in headers):
        return adapter
    own = copy.copy(adapter)
    own.additional_headers = {**headers, **_ACCEPT}
    return own


def _authenticating_at(adapter: ks_adapter.Adapter, *, token_expiring: bool) -> str | None:
    """Keystone's URL when a request that failed must have failed on its way to Keystone.

    keystoneauth gets a token before it looks Placement up or sends it
    anything, so a failure while the identity plugin holds no token was
    Keystone's. With ``token_expiring``, a token about to be refreshed counts
    as none: fit for telling whom a connection failure was with, but not for
    a lost answer, where the token may have expired since the request went
    out and calling it Keystone's would wrongly say nothing reached Placement.
    """
    plugin = adapter.auth or adapter.session.auth
    if not isinstance(plugin, ks_identity.BaseIdentityPlugin):
        return None  # a fixed token (admin_token, noauth2): no Keystone involved
    ref = plugin.auth_ref
    if ref is not None and not (
        token_expiring and ref.will_expire_soon(plugin.MIN_TOKEN_LIFE_SECONDS)
    ):
        return None
    return redact(str(plugin.auth_url))


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful response: status, parsed JSON body (or None), request id.

    ``headers`` (names in lower case, credentials left out) are kept whole
    only for :meth:`Transport.send_raw`, whose callers read routes the
    library has not typed (a ``Location``); every other answer keeps only
    ``Date`` and ``Last-Modified``, the server's clock.
    """

    status: int
    body: Any
    request_id: str | None
    headers: Mapping[str, str] = field(default_factory=dict)


class Transport:
    """Sends Placement requests through a keystoneauth1 Adapter.

    :param adapter: an Adapter whose endpoint is the Placement root.
    :param microversion: pin a version (``"1.28"`` .. ``"1.39"``) instead
        of negotiating it with the server.
    :param global_request_id: ``req-<uuid4>`` sent with every request so
        Placement's logs can be tied to the caller's.
    :param timeout: seconds, or (connect, read) seconds, for every request;
        it overrides a timeout set on the keystoneauth Session.
    :raises InvalidInput: for a malformed argument, or an adapter whose
        requests Session would replay writes (``_netfail._replays_writes``).
    """

    def __init__(
        self,
        adapter: ks_adapter.Adapter,
        *,
        microversion: str | None = None,
        global_request_id: str | None = None,
        timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
    ) -> None:
        self._timeout = validate_timeout(timeout)
        refuse_write_replays(adapter)
        self._adapter = accepting_json(adapter)
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
    def timeout(self) -> tuple[float, float]:
        """(connect, read) seconds allowed for every request."""
        return self._timeout

    @property
    def microversion(self) -> Microversion:
        """The version in use, negotiated on first use from Placement's root document."""
        if self._version is None:
            with self._lock:
                if self._version is None:
                    self._version = self._negotiate()
        return self._version

    def supports(self, version: Microversion) -> bool:
        """Whether the version in use is at least ``version``."""
        return self.microversion >= version

    def _negotiate(self) -> Microversion:
        """Ask keystoneauth's discovery, else ``GET /`` (see ``reportclient._wire.negotiation``)."""
        where: dict[str, Any] = {"method": "GET", "url": "/"}
        ambient = sys.exc_info()[1]  # sys.exception() is 3.11+
        failure: Failure | None = None
        try:
            offered = discovered_range(self._adapter)
        except ks_exc.ClientException as exc:
            failure = classify(exc, ambient)
        if failure is not None:
            raise self._failure_error(failure, "GET", "/", None) from failure.raised
        if offered is None:
            reply = self._send("GET", "/", version=None)
            where.update(status=reply.status, request_id=reply.request_id)
            try:
                offered = root_range(reply.body)
            except (KeyError, IndexError, TypeError, InvalidInput) as exc:
                raise PlacementError(
                    f"unrecognised version document: {reply.body!r}", **where
                ) from exc
        chosen = choose(*offered)
        if chosen is None:
            raise MicroversionUnsupported(
                f"Placement offers microversions {format_version(offered[0])} to "
                f"{format_version(offered[1])}; reportclient speaks "
                f"{format_version(CONSUMER_GENERATION_VERSION)} to {format_version(MAX_VERSION)}",
                **where,
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
        at_most: Microversion | None = None,
    ) -> Reply:
        """Send one request at the version in use.

        :param global_request_id: overrides the transport's for this request.
        :param at_most: send at no more than this version, for a request
            that needs nothing newer and costs Placement more at the newest
            (see ``LEAN_VERSION``).
        :raises PlacementError: (a subclass where one fits) for any answer
            of 400 or more, and for failures to reach the server.
        """
        version = self.microversion
        return self._send(
            method,
            path,
            version=version if at_most is None else min(version, at_most),
            json=json,
            consumer_uuid=consumer_uuid,
            global_request_id=global_request_id,
        )

    def send_raw(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        version: Microversion | None = None,
        global_request_id: str | None = None,
        timeout: tuple[float, float] | None = None,
    ) -> Reply:
        """Send one request the library has not typed, with its response headers.

        The same single path as every other request: writes are sent once,
        every failure is the same typed error. Method, path and arguments are
        the caller's to validate.

        :param version: send at exactly this version (default: the one in use).
        :param timeout: (connect, read) seconds for this request only.
        """
        return self._send(
            method,
            path,
            version=self.microversion if version is None else version,
            json=json,
            global_request_id=global_request_id,
            timeout=timeout,
            with_headers=True,
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
        timeout: tuple[float, float] | None = None,
        with_headers: bool = False,
    ) -> Reply:
        kwargs: dict[str, Any] = {"raise_exc": False, "timeout": timeout or self._timeout}
        if method not in _READS:
            # A write is sent once; whether to send it again is the client's call.
            kwargs["connect_retries"] = 0
            kwargs["status_code_retries"] = 0
            refuse_write_replays(self._adapter)  # a transport adapter may be mounted late
        if json is not None:
            kwargs["json"] = json
        if version is not None:
            kwargs["microversion"] = format_version(version)
            kwargs["microversion_service_type"] = "placement"
        request_id = global_request_id or self._global_request_id
        if request_id is not None:
            kwargs["global_request_id"] = request_id
        # The caller may be handling an exception (a lost answer being
        # checked); it is the context of what fails below, not its cause.
        ambient = sys.exc_info()[1]  # sys.exception() is 3.11+
        failure: Failure | None = None
        started = time.perf_counter()
        try:
            resp = self._adapter.request(path, method, **kwargs)
        except ks_exc.ClientException as exc:
            # Only text leaves this block: requests' exceptions hold the
            # PreparedRequest, and with it the token.
            failure = classify(exc, ambient)
        if failure is not None:
            elapsed = (time.perf_counter() - started) * 1000
            LOG.debug(
                "%s %s failed after %.1f ms: %s (%s)",
                method,
                path,
                elapsed,
                failure.kind.value,
                " <- ".join(name.rpartition(".")[2] for name in failure.cause.chain),
            )
            raise self._failure_error(
                failure, method, path, consumer_uuid, timeout or self._timeout
            ) from failure.raised
        elapsed = (time.perf_counter() - started) * 1000
        # Placement 16.0.0 sends only the x- spelling; proxies may rename it.
        request_id = resp.headers.get("x-openstack-request-id") or resp.headers.get(
            "openstack-request-id"
        )
        if LOG.isEnabledFor(logging.DEBUG):
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
        not_json: TransportFailure | None = None
        if resp.status_code != 204 and resp.content:
            try:
                body = resp.json()
            except ValueError as exc:
                not_json = classify(exc, ambient).cause
        if not_json is not None:
            raise PlacementError(
                "Placement answered with a body that is not JSON",
                status=resp.status_code,
                detail=resp.text[:500],
                request_id=request_id,
                method=method,
                url=path,
                consumer_uuid=consumer_uuid,
            ) from not_json
        if not with_headers:
            # Only the server's clock: when it answered, and when what it
            # answered about last changed (the agent setting's proof).
            kept = {name: resp.headers[name] for name in _TIME_HEADERS if name in resp.headers}
            return Reply(resp.status_code, body, request_id, kept)
        headers = {
            name.lower(): value
            for name, value in resp.headers.items()
            if name.lower() not in _UNSAFE_HEADERS
        }
        return Reply(resp.status_code, body, request_id, headers)

    def _failure_error(
        self,
        failure: Failure,
        method: str,
        path: str,
        consumer_uuid: str | None,
        timeout: tuple[float, float] | None = None,
    ) -> PlacementError:
        """The exception for a request that got no answer."""
        where: dict[str, Any] = {"method": method, "url": path, "consumer_uuid": consumer_uuid}
        keystone = None
        if failure.kind in (Kind.CONNECT, Kind.READ_TIMEOUT, Kind.LOST, Kind.ENDPOINT):
            keystone = _authenticating_at(
                self._adapter, token_expiring=failure.kind in (Kind.CONNECT, Kind.ENDPOINT)
            )
        # keystoneauth words an unreachable Keystone behind an auth_url with
        # no version as a discovery failure; the connection error is below it.
        unreachable = failure.kind is not Kind.ENDPOINT or any(
            name.endswith((".ConnectFailure", ".ConnectTimeout")) for name in failure.cause.chain
        )
        if keystone is not None and unreachable:
            # Retriable like Placement being down, but nothing reached Placement.
            return PlacementUnavailable(
                f"could not reach Keystone at {keystone} to authenticate "
                f"({failure.kind.value}: {failure.detail}); nothing was sent to Placement",
                outcome_unknown=False,
                **where,
            )
        if keystone is not None:
            return PlacementEndpointError(
                f"Keystone at {keystone} could not be used to authenticate: {failure.detail}",
                **where,
            )
        if failure.kind is Kind.AUTH:
            return PlacementAuthError(f"authentication failed: {failure.detail}", **where)
        if failure.kind is Kind.ENDPOINT:
            return PlacementEndpointError(f"no Placement endpoint: {failure.detail}", **where)
        if failure.kind is Kind.NOT_SENT:
            return PlacementError(f"request not sent: {failure.detail}", **where)
        if failure.kind is Kind.CONNECT:
            return PlacementUnavailable(
                f"could not connect to Placement: {failure.detail}", outcome_unknown=False, **where
            )
        if failure.kind is Kind.READ_TIMEOUT:
            return PlacementUnavailable(
                f"no answer from Placement within {(timeout or self._timeout)[1]:g} s "
                "(read timeout); "
                "the request may have been applied",
                outcome_unknown=True,
                **where,
            )
        return PlacementUnavailable(
            f"connection to Placement lost: {failure.detail}, the request may have been applied",
            outcome_unknown=True,
            **where,
        )
