"""PlacementClient: read and claim a consumer's allocations, safely under races.

Every write is one read -> compute -> write cycle. The read is free when the
cache knows the consumer (or when it is assumed new); on a generation
conflict or a lost answer the next cycle reads from Placement, so a retry
never replays a body built from stale state.
"""

from __future__ import annotations

import logging
from typing import Any

import tenacity
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from reportclient.cache import DEFAULT_CACHE_SIZE, CacheStats, ConsumerCache
from reportclient.cycle import Mutator, WriteCycle
from reportclient.errors import GenerationConflict, PlacementUnavailable
from reportclient.models import (
    Allocations,
    ConsumerAllocations,
    validate_consumer_type,
    validate_owner,
    validate_uuid,
)
from reportclient.mutators import replace_allocations
from reportclient.retry import default_retry
from reportclient.transport import Transport, format_version, validate_request_id

__all__ = ["Mutator", "PlacementClient"]

LOG = logging.getLogger("reportclient")

_RETRIABLE = (GenerationConflict, PlacementUnavailable)


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
        return self.update_allocations(
            consumer_uuid,
            replace_allocations(allocations),
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
        """Run a write cycle's attempts under the retry policy."""
        cycle = WriteCycle(
            self._transport,
            self._cache,
            self._read_for_cycle,
            consumer,
            mutate,
            owner,
            ctype,
            request_id,
        )
        # Most writes land at once: the policy is only built (a measurable
        # share of a claim's CPU) after a first attempt has failed.
        try:
            return cycle.attempt(1)
        except _RETRIABLE as exc:
            first_failure = exc
        for attempt in self._policy(consumer):
            with attempt:
                number = attempt.retry_state.attempt_number
                if number == 1:
                    raise first_failure  # let the policy judge the attempt already made
                return cycle.attempt(number)
        raise AssertionError("unreachable: the retry policy neither returned nor raised")

    def _read_for_cycle(self, consumer: str, request_id: str | None) -> ConsumerAllocations:
        return self.get_allocations(consumer, global_request_id=request_id)

    def _policy(self, consumer: str) -> tenacity.Retrying:
        """The user's policy, deciding only when and how long; we decide what.

        A stale consumer generation on the first attempt means the cache (or
        the guess that the consumer is new) was wrong, not that writers are
        contending, so the re-read it calls for is not delayed.
        """
        user_hook = self._retry.before_sleep
        user_wait = self._retry.wait

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            if (
                state.attempt_number == 1
                and isinstance(exc, GenerationConflict)
                and exc.consumer_conflict
            ):
                return 0.0
            return float(user_wait(state))

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
            wait=wait,
            before_sleep=log_retry,
            reraise=True,
        )
