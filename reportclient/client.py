"""PlacementClient: read and claim a consumer's allocations, safely under races.

Every write is one read -> compute -> write cycle. The read is free when the
cache knows the consumer (or when it is assumed new); on a generation
conflict or a lost answer the next cycle reads from Placement, so a retry
never replays a body built from stale state.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable
from typing import Any

import tenacity
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from reportclient.cache import DEFAULT_CACHE_SIZE, CacheStats, ConsumerCache
from reportclient.errors import GenerationConflict, PlacementError, PlacementUnavailable
from reportclient.models import (
    Allocations,
    ConsumerAllocations,
    normalize_allocations,
    validate_consumer_type,
    validate_owner,
    validate_uuid,
)
from reportclient.retry import default_retry
from reportclient.transport import (
    CONSUMER_TYPE_VERSION,
    Transport,
    format_version,
    validate_request_id,
)

__all__ = ["Mutator", "PlacementClient"]

LOG = logging.getLogger("reportclient")

#: Given the consumer's current state, return the allocations it should hold.
Mutator = Callable[[ConsumerAllocations], Allocations]

_RETRIABLE = (GenerationConflict, PlacementUnavailable)
_DEFAULT_CONSUMER_TYPE = "INSTANCE"
_TYPE = re.compile(r"^[A-Z0-9_]+$")


class PlacementClient:
    """Conflict-safe access to consumers' allocations in Placement.

    Thread-safe: one client may serve many scheduler threads.

    :param adapter: a keystoneauth1 Adapter pointing at Placement.
    :param retry: a ``tenacity.Retrying`` deciding when and how long to
        retry; what is retried is always the client's decision.
    :param cache_size: consumers whose state is kept (LRU); 0 disables.
    :param microversion: pin a version instead of negotiating one.
    :param global_request_id: ``req-<uuid4>`` sent with every request.
    """

    def __init__(
        self,
        adapter: ks_adapter.Adapter,
        *,
        retry: tenacity.Retrying | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        microversion: str | None = None,
        global_request_id: str | None = None,
    ) -> None:
        self._transport = Transport(
            adapter, microversion=microversion, global_request_id=global_request_id
        )
        self._cache = ConsumerCache(cache_size)
        self._retry = retry if retry is not None else default_retry()

    @classmethod
    def from_session(
        cls,
        session: ks_session.Session,
        *,
        retry: tenacity.Retrying | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        microversion: str | None = None,
        global_request_id: str | None = None,
        **adapter_kwargs: Any,
    ) -> PlacementClient:
        """Build a client over a keystoneauth1 Session.

        ``adapter_kwargs`` go to the Adapter (``interface``,
        ``region_name``, ``endpoint_override``...).
        """
        adapter_kwargs.setdefault("service_type", "placement")
        adapter = ks_adapter.Adapter(session, **adapter_kwargs)
        return cls(
            adapter,
            retry=retry,
            cache_size=cache_size,
            microversion=microversion,
            global_request_id=global_request_id,
        )

    @classmethod
    def from_endpoint(cls, url: str, token: str | None = None, **kwargs: Any) -> PlacementClient:
        """Build a client for a Placement root URL and a fixed token.

        Without Keystone, as with Placement's ``noauth2`` strategy, the
        token is ``user[:project]`` (``"admin"`` for an administrator).
        """
        auth = token_endpoint.Token(url, token) if token is not None else None
        session = ks_session.Session(auth=auth)
        return cls.from_session(session, endpoint_override=url, **kwargs)

    def __repr__(self) -> str:
        stats = self._cache.stats()
        return f"<PlacementClient {self._transport!r} cache {stats.size}/{stats.maxsize}>"

    @property
    def microversion(self) -> str:
        """The microversion in use (negotiated on first use unless pinned)."""
        return format_version(self._transport.microversion)

    def cache_stats(self) -> CacheStats:
        """Hits, misses and evictions of the consumer cache."""
        return self._cache.stats()

    def cached(self, consumer_uuid: str) -> ConsumerAllocations | None:
        """What the cache holds for a consumer; None when nothing is cached."""
        return self._cache.get(validate_uuid(consumer_uuid))

    def get_allocations(
        self, consumer_uuid: str, *, global_request_id: str | None = None
    ) -> ConsumerAllocations:
        """Read a consumer from Placement and refresh the cache.

        A consumer Placement does not hold comes back with
        ``generation=None`` and no allocations.

        :param global_request_id: ``req-<uuid4>`` for this call, overriding
            the client's (every call below takes it too).
        """
        validate_uuid(consumer_uuid)
        reply = self._transport.request(
            "GET",
            f"/allocations/{consumer_uuid}",
            consumer_uuid=consumer_uuid,
            global_request_id=validate_request_id(global_request_id),
        )
        state = ConsumerAllocations.from_json(consumer_uuid, reply.body or {})
        self._cache.put(state)
        return state

    def claim(
        self,
        consumer_uuid: str,
        allocations: Allocations,
        *,
        project_id: str,
        user_id: str,
        consumer_type: str | None = None,
        global_request_id: str | None = None,
    ) -> ConsumerAllocations:
        """Make the consumer hold exactly ``allocations``.

        :raises InvalidInput: before any request, for malformed input.
        :raises CapacityExceeded: a provider lacks room; not retried.
        :raises GenerationConflict: conflicts outlasted the retry policy.
        """
        desired = normalize_allocations(allocations)
        return self.update_allocations(
            consumer_uuid,
            lambda _current: desired,
            project_id=project_id,
            user_id=user_id,
            consumer_type=consumer_type,
            global_request_id=global_request_id,
        )

    def update_allocations(
        self,
        consumer_uuid: str,
        mutate: Mutator,
        *,
        project_id: str,
        user_id: str,
        consumer_type: str | None = None,
        global_request_id: str | None = None,
    ) -> ConsumerAllocations:
        """Read-modify-write a consumer's allocations.

        ``mutate(current)`` is called on every attempt with the state the
        attempt starts from (cached, assumed new, or just read after a
        conflict) and returns what the consumer should hold.

        ``consumer_type`` (sent from microversion 1.38) defaults to the
        consumer's own type, or ``INSTANCE`` for a new consumer.

        :raises InvalidInput: before any request, for malformed input.
        :raises CapacityExceeded: a provider lacks room; not retried.
        :raises GenerationConflict: conflicts outlasted the retry policy.
        :raises PlacementUnavailable: Placement stayed unreachable.
        """
        validate_uuid(consumer_uuid)
        validate_owner(project_id, user_id)
        ctype = None if consumer_type is None else validate_consumer_type(consumer_type)
        request_id = validate_request_id(global_request_id)
        return self._run(consumer_uuid, mutate, (project_id, user_id), ctype, request_id)

    def release(self, consumer_uuid: str, *, global_request_id: str | None = None) -> None:
        """Remove all of a consumer's allocations, guarded by its generation.

        Unlike ``DELETE /allocations``, a concurrent writer is never
        overwritten blindly. A consumer that is already gone is not an error.
        """
        validate_uuid(consumer_uuid)
        request_id = validate_request_id(global_request_id)
        self._run(consumer_uuid, lambda _current: {}, None, None, request_id)

    def _run(
        self,
        consumer: str,
        mutate: Mutator,
        owner: tuple[str, str] | None,
        ctype: str | None,
        request_id: str | None,
    ) -> ConsumerAllocations:
        """The retry loop shared by claims, updates and releases.

        ``owner`` None means "keep the consumer's own owner" (a release,
        whose empty write is preceded by a read unless the cache knows the
        consumer exists).
        """
        cached = self._cache.get(consumer)
        need_read = False
        prefetched: ConsumerAllocations | None = None
        hint: int | None = None
        for attempt in self._policy(consumer):
            with attempt:
                number = attempt.retry_state.attempt_number
                # Negotiated once per client, outside the write's error
                # handling: a failed GET / proves nothing was written.
                send_type = self._transport.supports(CONSUMER_TYPE_VERSION)
                if prefetched is not None:
                    current, fresh, prefetched = prefetched, True, None
                elif need_read:
                    current, fresh = self._read(consumer, request_id, hint), True
                else:
                    known = cached if number == 1 else self._cache.get(consumer)
                    # Optimistic: a consumer nobody told us about is new.
                    current, fresh = known or ConsumerAllocations.missing(consumer), False
                desired = normalize_allocations(mutate(current))
                if not desired and not fresh and not current.exists:
                    # Emptying a consumer we believe missing: an empty write
                    # as a new consumer would leave Placement an invisible
                    # generation-0 record if it is, so look instead.
                    current, fresh = self._read(consumer, request_id, hint), True
                    desired = normalize_allocations(mutate(current))
                if owner is None and fresh and not current.allocations:
                    return current  # a release with nothing left to release
                write_owner = owner or _owner_of(current)
                if fresh and _already_holds(current, desired, write_owner, ctype):
                    return current
                try:
                    type_sent = _type_to_send(ctype, current) if send_type else None
                    return self._write(
                        current, desired, write_owner, type_sent, send_type, request_id
                    )
                except GenerationConflict as exc:
                    self._cache.discard(consumer)
                    need_read = True
                    hint = exc.server_generation
                    exc.attempts = number
                    raise
                except PlacementUnavailable as write_error:
                    if not write_error.outcome_unknown:
                        raise  # nothing reached Placement; what we knew still holds
                    # The write may have landed: look before writing again.
                    self._cache.discard(consumer)
                    need_read = True
                    try:
                        reread = self._read(consumer, request_id, hint)
                    except PlacementUnavailable:
                        # The caller's question is the write's fate, so the
                        # write's error is the one raised (the read's is its
                        # __context__).
                        raise write_error from write_error.__cause__
                    if reread.allocations == desired and reread.exists == bool(desired):
                        LOG.info("consumer %s: lost answer, but the write had landed", consumer)
                        return reread
                    prefetched = reread
                    raise
        raise AssertionError("unreachable: the retry policy neither returned nor raised")

    def _read(self, consumer: str, request_id: str | None, hint: int | None) -> ConsumerAllocations:
        """Read a consumer, trusting a conflict's "expected N" over an empty GET.

        Placement keeps a generation for a consumer that was written empty
        while it did not exist, yet GET shows that consumer as missing; only
        the conflict's detail reveals the generation it expects.
        """
        state = self.get_allocations(consumer, global_request_id=request_id)
        if hint is not None and not state.exists and not state.allocations:
            return dataclasses.replace(state, generation=hint)
        return state

    def _policy(self, consumer: str) -> tenacity.Retrying:
        user_hook = self._retry.before_sleep

        def log_retry(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            LOG.warning(
                "consumer %s: attempt %d failed: %s %s (request %s); retrying in %.3fs",
                consumer,
                state.attempt_number,
                type(exc).__name__,
                getattr(exc, "detail", None) or getattr(exc, "message", exc),
                getattr(exc, "request_id", None),
                state.upcoming_sleep,
            )
            if user_hook is not None:
                user_hook(state)

        return self._retry.copy(
            retry=tenacity.retry_if_exception_type(_RETRIABLE),
            before_sleep=log_retry,
            reraise=True,
        )

    def _write(
        self,
        current: ConsumerAllocations,
        desired: dict[str, dict[str, int]],
        owner: tuple[str, str],
        ctype: str | None,
        send_type: bool,
        request_id: str | None,
    ) -> ConsumerAllocations:
        consumer = current.consumer_uuid
        body: dict[str, Any] = {
            "allocations": {rp: {"resources": res} for rp, res in desired.items()},
            "consumer_generation": current.generation,
            "project_id": owner[0],
            "user_id": owner[1],
        }
        if send_type:
            body["consumer_type"] = ctype or _DEFAULT_CONSUMER_TYPE
        self._transport.request(
            "PUT",
            f"/allocations/{consumer}",
            json=body,
            consumer_uuid=consumer,
            global_request_id=request_id,
        )
        if desired:
            # Placement answers 204 without a body; its generation rule is
            # new consumer -> 1, every write +1. A wrong guess costs a retry.
            new = ConsumerAllocations(
                consumer_uuid=consumer,
                allocations=desired,
                generation=(current.generation or 0) + 1,
                project_id=owner[0],
                user_id=owner[1],
                consumer_type=body.get("consumer_type"),
            )
        else:
            # An empty write deletes the consumer.
            new = ConsumerAllocations.missing(consumer)
        self._cache.put(new)
        return new


def _type_to_send(requested: str | None, current: ConsumerAllocations) -> str:
    """The caller's type, else the consumer's own, else INSTANCE.

    Consumers written before 1.38 read back as ``unknown``, which Placement
    refuses on a write, so only a valid type is carried over.
    """
    if requested is not None:
        return requested
    if current.consumer_type is not None and _TYPE.match(current.consumer_type):
        return current.consumer_type
    return _DEFAULT_CONSUMER_TYPE


def _owner_of(state: ConsumerAllocations) -> tuple[str, str]:
    if state.project_id is None or state.user_id is None:
        raise PlacementError(
            "Placement did not report the consumer's project and user",
            consumer_uuid=state.consumer_uuid,
        )
    return state.project_id, state.user_id


def _already_holds(
    current: ConsumerAllocations,
    desired: dict[str, dict[str, int]],
    owner: tuple[str, str],
    ctype: str | None,
) -> bool:
    """Whether writing ``desired`` would change nothing Placement holds."""
    if not desired:
        return not current.exists
    return (
        current.exists
        and current.allocations == desired
        and (current.project_id, current.user_id) == owner
        and (ctype is None or current.consumer_type in (None, ctype))
    )
