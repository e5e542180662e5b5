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
import functools
import logging
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import tenacity
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc

from reportclient._budget import GiveUp, Operation, current, operation
from reportclient._model.microversions import CONSUMER_GENERATION_VERSION, MAX_VERSION, Microversion
from reportclient._model.raw import RawRequest
from reportclient._wire.ambient import ambient_request_id
from reportclient._wire.failures import (
    READS,
    Failure,
    Kind,
    TransportFailure,
    classify,
    failure_error,
    read_again,
    refuse_write_replays,
)
from reportclient._wire.negotiation import (
    choose,
    discovered_range,
    format_version,
    parse_version,
    root_range,
)
from reportclient._wire.request_values import (
    DEFAULT_POOL_SIZE,
    DEFAULT_TIMEOUT,
    size_pool,
    validate_request_id,
    validate_timeout,
)
from reportclient._wire.responses import error_from_response
from reportclient.errors import (
    InvalidInput,
    MicroversionUnsupported,
    PlacementError,
    PlacementOverloaded,
    PlacementUnavailable,
)
from reportclient.retry import RetryBudget

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
#: Each read sent again.
RETRY_LOG = logging.getLogger("reportclient.retry")

# Asked for on every request, as OpenStack's clients do: what comes back,
# errors included, is then JSON wherever the server (or webob beneath it)
# decides by the Accept header.
_ACCEPT = {"Accept": "application/json"}

# Response headers every answer keeps (requests' header lookup ignores case).
_TIME_HEADERS = ("date", "last-modified")
# Response headers a raw answer never carries: they can hold a credential.
_UNSAFE_HEADERS = frozenset({"set-cookie", "x-subject-token", "x-auth-token"})


def _verb(adapter: ks_adapter.Adapter, method: str) -> Any:
    """The Adapter's method for ``method`` (``adapter.put``...), else ``adapter.request``.

    keystoneauth's ``get``/``put``/``post``/``delete`` are ``request`` with the
    method filled in; sending through them is what nova's report client does,
    so what nova's functional tests do to it (``mock.patch`` on
    ``keystoneauth1.adapter.Adapter.put``, to make Placement answer a 409)
    reaches this client too, and a drop-in is judged on the same wire.
    """
    send = getattr(adapter, method.lower(), None)
    if method in _VERBS and callable(send):
        return send
    return functools.partial(adapter.request, method=method)


_VERBS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})


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
        Placement's logs can be tied to the caller's; without it, a request
        carries the current oslo.context's id when there is one
        (:mod:`._wire.ambient`).
    :param timeout: seconds, or (connect, read) seconds, for every request;
        it overrides a timeout set on the keystoneauth Session.
    :param reads: the policy whose wait, sleep and stop pace a read sent
        again (:meth:`request`); None sends every read once.
    :param budget: the client's retry budget: every request outside an
        operation is a first attempt of its own, and every read sent again
        spends from it (:mod:`reportclient._budget`).
    :param exact: send every request at the version in use, never at the
        leaner one a request asks for (``at_most``): a drop-in for another
        project's client owes Placement the version its caller named.
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
        reads: tenacity.Retrying | None = None,
        budget: RetryBudget | None = None,
        exact: bool = False,
    ) -> None:
        if not isinstance(exact, bool):
            raise InvalidInput(f"exact_microversion must be True or False, got {exact!r}")
        self._exact = exact
        self._timeout = validate_timeout(timeout)
        self._reads = reads
        self._budget = budget
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
            raise failure_error(
                failure, self._adapter, "GET", "/", None, self._timeout
            ) from failure.raised
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
            (see ``LEAN_VERSION``); ignored by an ``exact`` transport.
        :raises PlacementError: (a subclass where one fits) for any answer
            of 400 or more, and for failures to reach the server.
        :raises PlacementOverloaded: a read that failed was not sent again,
            the client's retry budget being spent.

        A GET or HEAD that failed in a way worth another try
        (:func:`~reportclient._wire.failures.read_again`: no connection, a
        reset, a 502/503/504, a first read timeout) is sent again after the
        policy's wait, unless the policy stops or the client's bounds refuse
        (:meth:`reportclient._budget.Operation.retry`); a try that succeeds
        after one failed gives its token back. A request outside any
        operation is one of its own: its first try deposits in the budget.
        A read inside one (a write's) is sent once: the engine retries the
        attempt it belongs to.
        """
        version = self.microversion
        sent = version if at_most is None or self._exact else min(version, at_most)
        if current() is not None or method not in READS or self._reads is None:
            # A write is sent once; a read inside an operation is the
            # engine's to retry, as a new attempt under the operation's policy.
            with operation(self._budget):
                return self._send(
                    method,
                    path,
                    version=sent,
                    json=json,
                    consumer_uuid=consumer_uuid,
                    global_request_id=global_request_id,
                )
        with operation(self._budget) as this:
            return self._read(this, self._reads, method, path, sent, global_request_id)

    def _read(
        self,
        this: Operation,
        policy: tenacity.Retrying,
        method: str,
        path: str,
        version: Microversion,
        global_request_id: str | None,
    ) -> Reply:
        """Send a read, and again while it is worth it and the bounds allow."""
        state = tenacity.RetryCallState(policy, None, (), {})
        timeouts = 0
        while True:
            failed: list[Kind] = []
            try:
                reply = self._send(
                    method,
                    path,
                    version=version,
                    global_request_id=global_request_id,
                    failed=failed,
                )
            except PlacementUnavailable as exc:
                kind = failed[-1] if failed else None
                timeouts += kind is Kind.READ_TIMEOUT
                if not read_again(
                    status=exc.status, kind=kind, attempt=state.attempt_number, timeouts=timeouts
                ):
                    raise
                state.set_exception((type(exc), exc, exc.__traceback__))
                why = this.retry(policy_stops=bool(policy.stop(state)), cost=1)
                if why is GiveUp.BUDGET:
                    raise PlacementOverloaded(
                        f"{method} {path} not sent again: {why.value} "
                        f"(Placement is overloaded; last answer: {exc.message})",
                        last=exc,
                    ) from exc
                if why is not None:
                    raise
                delay = float(policy.wait(state))
                RETRY_LOG.warning(
                    "%s %s: try %d failed: %s (request %s); sending again in %.3fs",
                    method,
                    path,
                    state.attempt_number,
                    exc.message,
                    exc.request_id,
                    delay,
                )
                policy.sleep(delay)
                state.prepare_for_next_attempt()
            else:
                this.succeeded(granted_before=0)
                return reply

    def send_raw(self, raw: RawRequest) -> Reply:
        """Send one request the library has not typed, with its response headers.

        The same single path as every other request: writes are sent once,
        every failure is the same typed error. Method, path and arguments are
        the caller's to validate (:class:`~reportclient._model.raw.RawRequest`).
        """
        sent = self.microversion if raw.version is None else raw.version
        with operation(self._budget):  # its own first attempt, unless the caller's loop is one
            return self._send(
                raw.method,
                raw.path,
                version=sent,
                json=raw.json,
                global_request_id=raw.request_id,
                timeout=raw.timeout,
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
        failed: list[Kind] | None = None,
    ) -> Reply:
        """Send one request; ``failed`` hears the kind of a failure that got no answer."""
        this = current()
        if this is not None:
            this.requests += 1
        kwargs: dict[str, Any] = {"raise_exc": False, "timeout": timeout or self._timeout}
        if method not in READS:
            # A write is sent once; whether to send it again is the client's call.
            kwargs["connect_retries"] = 0
            kwargs["status_code_retries"] = 0
            refuse_write_replays(self._adapter)  # a transport adapter may be mounted late
        if json is not None:
            kwargs["json"] = json
        if version is not None:
            kwargs["microversion"] = format_version(version)
            kwargs["microversion_service_type"] = "placement"
        # The call's id, the client's, else the oslo.context in force (_wire.ambient).
        request_id = global_request_id or self._global_request_id or ambient_request_id()
        if request_id is not None:
            kwargs["global_request_id"] = request_id
        # The caller may be handling an exception (a lost answer being
        # checked); it is the context of what fails below, not its cause.
        ambient = sys.exc_info()[1]  # sys.exception() is 3.11+
        failure: Failure | None = None
        started = time.perf_counter()
        try:
            resp = _verb(self._adapter, method)(path, **kwargs)
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
            if failed is not None:
                failed.append(failure.kind)
            raise failure_error(
                failure, self._adapter, method, path, consumer_uuid, timeout or self._timeout
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
