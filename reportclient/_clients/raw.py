"""Requests to routes the library has not typed (part of ``PlacementClient``).

Sent through the gateway like every typed call, so a raw write forgets
whatever consumers and providers it concerns (a path the gateway cannot
read forgets everything): the typed call after it reads first.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import tenacity

from reportclient._budget import GiveUp, operation
from reportclient._clients.core import Core, Timeout
from reportclient._model.raw import RawAnswer, RawRequest
from reportclient._model.validation import validate_method, validate_path
from reportclient._wire.negotiation import format_version, parse_version
from reportclient._wire.transport import validate_request_id, validate_timeout
from reportclient.errors import PlacementOverloaded, PlacementUnavailable

__all__ = ["RawClient"]

_READS = frozenset({"GET", "HEAD"})


class RawClient:
    """``request()``: nova's ``get``/``put``/``post``/``delete`` on any route."""

    _core: Core

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        microversion: str | None = None,
        global_request_id: str | None = None,
        timeout: Timeout | None = None,
        retry: tenacity.Retrying | None = None,
    ) -> RawAnswer:
        """Send a request to a route the library has not typed (nova's ``get``/``put``...).

        The client's endpoint, token, request id and error path go with it:
        an answer of 400 or more raises the same typed
        :class:`PlacementError` subclass as every typed call (a 409
        ``placement.concurrent_update`` is a :class:`GenerationConflict`,
        and so on). Nothing here knows the route, so nothing is cached or
        recomputed: a PUT, POST or DELETE is sent exactly once, and a lost
        answer is :class:`PlacementUnavailable` with ``outcome_unknown``
        True, never re-sent. A GET or HEAD Placement did not answer is tried
        again under the retry policy. Prefer a typed method where there is
        one: it is what re-reads and recomputes under a conflict.

        :param method: GET, HEAD, PUT, POST or DELETE (any case).
        :param path: the path and query under the Placement endpoint,
            starting with ``/`` (``"/resource_providers?name=cn1"``); no
            scheme or host.
        :param json: the body of a PUT or POST.
        :param microversion: ``"1.14"`` for this request; default the
            client's (negotiated or pinned).
        :param timeout: seconds for this request, one number or (connect, read).
        :param retry: the policy for a GET or HEAD (default the client's);
            writes are never retried.
        :raises InvalidInput: before any request, for a method, path,
            microversion, timeout or request id that is malformed.
        :raises PlacementUnavailable: Placement was not reached, or (a write)
            the answer was lost: ``outcome_unknown`` says whether it may
            have landed.
        :raises PlacementError: (a subclass where one fits) for any answer
            of 400 or more.
        """
        raw = RawRequest(
            method=validate_method(method, has_body=json is not None),
            path=validate_path(path),
            json=json,
            version=None if microversion is None else parse_version(microversion),
            timeout=None if timeout is None else validate_timeout(timeout),
            request_id=validate_request_id(global_request_id),
        )
        policy = self._core.policy(retry)

        def send() -> RawAnswer:
            reply = self._core.gateway.raw(raw)
            return RawAnswer(
                reply.status,
                reply.body,
                MappingProxyType(dict(reply.headers)),
                reply.request_id,
                format_version(raw.version or self._core.gateway.microversion),
            )

        if raw.method not in _READS:
            return send()
        # A read is harmless to repeat; only an unreachable server is worth
        # it, and each try after the first spends from the client's budget
        # (given back if it succeeds).
        with operation(self._core.budget) as this:
            granted_before = this.granted  # an outer operation's retries are not this read's

            def stop(state: tenacity.RetryCallState) -> bool:
                return this.retry(policy_stops=bool(policy.stop(state)), cost=1) is not None

            reads = policy.copy(
                retry=tenacity.retry_if_exception_type(PlacementUnavailable),
                stop=stop,
                reraise=True,
            )
            try:
                answer: RawAnswer = reads(send)
            except PlacementUnavailable as exc:
                if this.refused is not GiveUp.BUDGET:
                    raise
                raise PlacementOverloaded(
                    f"{raw.method} {raw.path} not sent again: {GiveUp.BUDGET.value} "
                    f"(Placement is overloaded; last answer: {exc.message})",
                    last=exc,
                ) from exc
            if isinstance(answer, RawAnswer):  # not a retry_error_callback's value
                this.succeeded(granted_before=granted_before)  # a retry that landed
        return answer
