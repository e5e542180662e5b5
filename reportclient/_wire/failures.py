"""Naming a failed request truthfully, and keeping secrets out of the name.

keystoneauth1 raises ``ConnectTimeout`` for every requests timeout, connect
or read, and ``ConnectFailure`` for refused and reset connections alike;
whether the request may have been applied is only told by the urllib3
exception at the bottom of the chain, so the chain is walked here.

The exceptions in that chain are not fit to travel: requests attaches the
PreparedRequest, and with it the ``X-Auth-Token`` header, to its
exceptions. What reaches the caller is a :class:`TransportFailure` built
from type names and redacted messages only, never the objects themselves.

Whether a failure leaves a write's outcome unknown is only worth telling if
nothing below the transport resends the write on its own; urllib3 would, if
a requests adapter were mounted with a ``Retry`` that allows it, so such an
adapter is refused here too.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import requests
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1.identity import base as ks_identity
from urllib3 import exceptions as urllib3_exc
from urllib3.util.retry import Retry

from reportclient.errors import (
    InvalidInput,
    PlacementAuthError,
    PlacementEndpointError,
    PlacementError,
    PlacementUnavailable,
)

__all__ = [
    "READS",
    "READ_ATTEMPTS",
    "READ_RETRY_STATUSES",
    "Failure",
    "Kind",
    "TransportFailure",
    "classify",
    "failure_error",
    "read_again",
    "redact",
    "refuse_write_replays",
]

#: Methods that change nothing, and are harmless to send again.
READS = frozenset({"GET", "HEAD"})
#: Most tries of one read, the first included.
READ_ATTEMPTS = 4
#: Answers a read is sent again after: a proxy with no server behind it
#: (502), a server that cannot serve now (503), a proxy that gave up
#: waiting (504). Placement's own 500 is not among them: it answers the
#: same request the same way (a value its database refuses, a bug).
READ_RETRY_STATUSES = frozenset({502, 503, 504})

# Headers that hold credentials, in the shapes they take in messages:
# ``X-Auth-Token: v``, ``'X-Auth-Token': 'v'``, ``x-auth-token=v``.
_SECRET_HEADER = re.compile(
    r"(?i)\b((?:x-auth-token|x-subject-token|x-service-token|(?:proxy-)?authorization"
    r"|set-cookie|cookie)['\"]?\s*[:=]\s*['\"]?)[^'\",\r\n}]*"
)
# ``http://user:password@host``: credentials in an endpoint URL.
_URL_USERINFO = re.compile(r"(?<=//)[^/@\s'\"]+@")
# Long enough for urllib3's nested messages, short enough for a log line.
_MAX_MESSAGE = 500
_WRITES = ("PUT", "POST", "DELETE")
# requests refuses these while preparing the request: nothing was sent.
_REFUSED_LOCALLY = (
    requests.exceptions.InvalidHeader,
    requests.exceptions.InvalidURL,
    requests.exceptions.InvalidSchema,
    requests.exceptions.MissingSchema,
)


class TransportFailure(Exception):
    """A failure below the transport, reduced to text that carries no secret.

    The cause of every PlacementError the transport raises for a failed
    request. ``chain`` holds the qualified type names of the original
    exceptions, outermost first; the message pairs them with their
    messages, header values and URL credentials redacted.
    """

    def __init__(self, message: str, chain: tuple[str, ...]) -> None:
        super().__init__(message)
        self.chain = chain


class Kind(Enum):
    """What a failure says about the request."""

    #: refused before the wire (a bad header, a Keystone 5xx)
    NOT_SENT = "not sent"
    #: not sent: no auth plugin, or Keystone refused the credentials
    AUTH = "auth"
    #: not sent: Placement is not in the catalog, or version discovery failed
    ENDPOINT = "endpoint"
    #: no connection was made: refused, connect timeout, bad certificate
    CONNECT = "connect"
    #: the request went out and no answer came in time
    READ_TIMEOUT = "read timeout"
    #: the connection broke after it was made (reset, protocol error)
    LOST = "lost"


@dataclass(frozen=True, slots=True)
class Failure:
    """A classified failure: its kind, the telling message, the safe cause.

    ``original`` is keystoneauth's own exception for the kinds callers
    already catch by type (auth, endpoint), cut loose from anything that
    reaches a credential (:func:`_detach`).
    """

    kind: Kind
    detail: str
    cause: TransportFailure
    original: BaseException | None = None

    @property
    def raised(self) -> BaseException:
        """What the typed error is raised from: keystoneauth's exception, or the safe text."""
        return self.original if self.original is not None else self.cause


# Failures keystoneauth raises before anything reaches Placement, by what
# the operator has to fix. A 4xx HttpError here can only be Keystone's
# answer to the auth plugin: Placement's own answers are never raised.
_ENDPOINT_FAILURES = (ks_exc.CatalogException, ks_exc.DiscoveryFailure)
_AUTH_FAILURES = (ks_exc.AuthPluginException, ks_exc.AuthorizationFailure, ks_exc.HTTPClientError)


# What a keystoneauth exception may keep: its words, status and request id.
_SAFE_ATTRIBUTES = frozenset({"http_status", "request_id", "method", "retry_after"})


def _detach(exc: ks_exc.ClientException, safe: TransportFailure) -> ks_exc.ClientException:
    """``exc`` stripped of whatever can reach a credential, chained to ``safe``.

    A Keystone HttpError keeps the response to the token request, whose body
    holds the password; the traceback's frames and the implicit context
    reach requests' PreparedRequest and its token; a plugin may hang anything
    on its exception. Only the type, the redacted message and the
    attributes in ``_SAFE_ATTRIBUTES`` stay, so ``except keystoneauth1...``
    and reading ``http_status`` or ``request_id`` work as before.
    """
    text = _message(exc)
    url = getattr(exc, "url", None)
    for name in [name for name in vars(exc) if name not in _SAFE_ATTRIBUTES]:
        delattr(exc, name)
    if isinstance(url, str):
        setattr(exc, "url", redact(url))  # noqa: B010 - not every ClientException has one
    exc.args = (text,)
    exc.message = text
    exc.__traceback__ = None
    exc.__context__ = None
    exc.__cause__ = safe
    return exc


def redact(text: str) -> str:
    """``text`` with credential header values and URL user info removed."""
    text = _SECRET_HEADER.sub(r"\1<redacted>", text)
    return _URL_USERINFO.sub("<redacted>@", text)


def _name(exc: BaseException) -> str:
    cls = type(exc)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not hide the failure itself
        text = "<unprintable>"
    text = redact(" ".join(text.split()))
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def _walk(exc: BaseException, ambient: BaseException | None) -> list[BaseException]:
    """Every exception reachable from ``exc``, outermost first.

    Follows ``__cause__`` and ``__context__`` (keystoneauth raises inside
    ``except``, so its chain is implicit), urllib3's ``reason`` and
    ``original_error``, keystoneauth's ``original`` and exception args.
    Stops at ``ambient``, the exception the caller was handling when the
    request started: the innermost socket error takes it as its context,
    but it is no part of this failure.
    """
    order: list[BaseException] = []
    stack: list[object] = [exc]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if not isinstance(item, BaseException) or item is ambient or id(item) in seen:
            continue
        seen.add(id(item))
        order.append(item)
        linked = [
            item.__cause__,
            item.__context__,
            getattr(item, "reason", None),
            getattr(item, "original_error", None),
            getattr(item, "original", None),
            *item.args,
        ]
        stack.extend(reversed(linked))
    return order


def _kind(chain: list[BaseException]) -> tuple[Kind, BaseException]:
    """The kind of failure and the exception that tells it."""
    for item in chain:
        if isinstance(item, _REFUSED_LOCALLY):
            return Kind.NOT_SENT, item
    for item in chain:
        # NewConnectionError (refused, DNS) subclasses ConnectTimeoutError in
        # urllib3 2; certificates are checked in the handshake, before any
        # byte of the request; requests documents its ConnectTimeout as
        # "safe to retry".
        if isinstance(
            item,
            (
                urllib3_exc.ConnectTimeoutError,
                ssl.SSLCertVerificationError,
                requests.exceptions.ConnectTimeout,
            ),
        ):
            return Kind.CONNECT, item
    for item in chain:
        if isinstance(item, (urllib3_exc.ReadTimeoutError, requests.exceptions.ReadTimeout)):
            return Kind.READ_TIMEOUT, item
    # The innermost exception names the cause best ("Connection reset by peer").
    return Kind.LOST, chain[-1]


def classify(exc: BaseException, ambient: BaseException | None = None) -> Failure:
    """Classify what keystoneauth raised and reduce it to safe text.

    A keystoneauth ``ClientException`` that is not a ``ConnectionError``
    comes from the auth plugin or the endpoint lookup: not sent.

    :param ambient: the exception being handled when the request started
        (``sys.exc_info()[1]``), left out of the chain.
    """
    chain = _walk(exc, ambient)
    telling: BaseException
    if isinstance(exc, _ENDPOINT_FAILURES):
        kind, telling = Kind.ENDPOINT, exc
    elif isinstance(exc, _AUTH_FAILURES):
        kind, telling = Kind.AUTH, exc
    elif isinstance(exc, ks_exc.ClientException) and not isinstance(exc, ks_exc.ConnectionError):
        kind, telling = Kind.NOT_SENT, exc
    else:
        kind, telling = _kind(chain)
    detail = _message(telling)
    if kind in (Kind.NOT_SENT, Kind.AUTH, Kind.ENDPOINT):
        detail = f"{type(telling).__name__}: {detail}"
    parts: list[str] = []
    previous = None
    for item in chain:
        message = _message(item)
        # requests repeats urllib3's message word for word; say it once.
        parts.append(_name(item) if message in ("", previous) else f"{_name(item)}: {message}")
        previous = message
    cause = TransportFailure(" <- ".join(parts), tuple(_name(item) for item in chain))
    if kind in (Kind.AUTH, Kind.ENDPOINT) and isinstance(exc, ks_exc.ClientException):
        return Failure(kind, detail, cause, _detach(exc, cause))
    return Failure(kind, detail, cause)


def _spent(count: object) -> bool:
    # False, 0 and negative counts end retrying at the next increment.
    return isinstance(count, int) and count <= 0


def _replays_writes(retry: object) -> bool:
    """Whether a urllib3 ``Retry`` would resend a PUT, POST or DELETE after sending it.

    The rules of ``urllib3.util.retry.Retry.increment`` and ``is_retry``
    this relies on:

    - ``max_retries`` that is not a Retry is turned into one by
      ``Retry.from_int``: None means ``Retry.DEFAULT`` (3 retries), an int
      means that many in total.
    - ``total`` of 0 or False ends retrying at the first failure
      (``total=False`` re-raises errors; a status retry exhausts it).
    - Connect errors (refused, connect timeout) happen before anything was
      sent; retrying them is harmless and not looked at.
    - Read errors (read timeout, reset, protocol error) and status retries
      (``status_forcelist``, or a Retry-After on 413/429/503 while
      ``total`` is truthy) apply only to methods in ``allowed_methods``;
      a falsy ``allowed_methods`` means every method. A ``read`` or
      ``status`` count of 0 or False stops them.
    - "Other" errors (an SSL error mid-exchange, for one) are retried for
      every method, whatever ``allowed_methods`` says, unless ``other`` is 0.
    """
    policy = retry if isinstance(retry, Retry) else Retry.from_int(retry)  # type: ignore[arg-type]
    if _spent(policy.total):
        return False
    methods = policy.allowed_methods
    write_retried = not methods or any(method in methods for method in _WRITES)
    retries_status = bool(policy.status_forcelist) or (
        bool(policy.total) and policy.respect_retry_after_header
    )
    return (
        (write_retried and not _spent(policy.read))
        or (write_retried and retries_status and not _spent(policy.status))
        or not _spent(getattr(policy, "other", None))
    )


def _write_replaying_mount(adapter: object) -> tuple[str, object] | None:
    """The first requests adapter under ``adapter`` that would replay a write."""
    requests_session = getattr(getattr(adapter, "session", None), "session", None)
    mounts = getattr(requests_session, "adapters", None)
    if not isinstance(mounts, Mapping):
        return None
    for prefix, mounted in mounts.items():
        # Test doubles and in-process adapters have no urllib3 underneath.
        if isinstance(mounted, requests.adapters.HTTPAdapter) and _replays_writes(
            mounted.max_retries
        ):
            return str(prefix), mounted.max_retries
    return None


def refuse_write_replays(adapter: object) -> None:
    """:raises InvalidInput: if a mounted transport adapter would replay a write."""
    found = _write_replaying_mount(adapter)
    if found is not None:
        prefix, retry = found
        raise InvalidInput(
            f"the requests transport adapter mounted at {prefix!r} retries with {retry!r}, "
            "which would resend a PUT, POST or DELETE that may already have been applied; "
            "reportclient retries writes itself, after re-reading. Mount it with a Retry that "
            "leaves PUT, POST and DELETE out of allowed_methods and sets other=0, e.g. "
            "Retry(total=3, allowed_methods={'GET'}, other=0), or that retries connects "
            "only: Retry(connect=3, read=0, status=0, other=0)"
        )


def read_again(*, status: int | None, kind: Kind | None, attempt: int, timeouts: int) -> bool:
    """Whether a read that failed is worth sending again (before the client's bounds).

    Connection failures (refused, reset, broken) and a 502, 503 or 504 are;
    a read timeout only once, since a server that could not answer within
    the read timeout is unlikely to within the next, and the caller waits
    for both.

    :param status: the error answer's status; None when no answer came.
    :param kind: what :func:`classify` made of a failure with no answer.
    :param attempt: the tries made so far, the failed one included.
    :param timeouts: of those, the tries that timed out reading.
    """
    if attempt >= READ_ATTEMPTS:
        return False
    if status is not None:
        return status in READ_RETRY_STATUSES
    if kind is Kind.READ_TIMEOUT:
        return timeouts <= 1
    return kind in (Kind.CONNECT, Kind.LOST)


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


def failure_error(
    failure: Failure,
    adapter: ks_adapter.Adapter,
    method: str,
    path: str,
    consumer_uuid: str | None,
    timeout: tuple[float, float],
) -> PlacementError:
    """The exception for a request that got no answer.

    A read that got none is never "may have been applied": a GET or HEAD
    changes nothing, whatever became of it.
    """
    where: dict[str, Any] = {"method": method, "url": path, "consumer_uuid": consumer_uuid}
    read = method in READS
    keystone = None
    if failure.kind in (Kind.CONNECT, Kind.READ_TIMEOUT, Kind.LOST, Kind.ENDPOINT):
        keystone = _authenticating_at(
            adapter, token_expiring=failure.kind in (Kind.CONNECT, Kind.ENDPOINT)
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
            f"no answer from Placement within {timeout[1]:g} s (read timeout)"
            + ("" if read else "; the request may have been applied"),
            outcome_unknown=not read,
            **where,
        )
    return PlacementUnavailable(
        f"connection to Placement lost: {failure.detail}"
        + ("" if read else ", the request may have been applied"),
        outcome_unknown=not read,
        **where,
    )
