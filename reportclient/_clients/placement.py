"""PlacementClient: read and claim a consumer's allocations, safely under races.

Every write is one operation on the engine's attempt skeleton
(:mod:`reportclient._engine.guarded_write`), under the invariants in
:mod:`reportclient._engine.consumer_write`: read -> compute -> write, where
the read is free for a consumer taken for new or cached within
``cache_ttl``; after a conflict or a lost answer the next attempt reads from
Placement, so a retry never replays a body built from stale state. Moves,
multi-consumer writes, allocation candidates and usages are here too: they
share the client's transport, consumer cache and retry policy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import tenacity
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from reportclient._clients.providers import ProviderClient
from reportclient._engine.batch_write import BatchWrite, Part, Plan
from reportclient._engine.consumer_write import (
    DEFAULT_CONSUMER_TYPE,
    ConsumerWrite,
    Kind,
)
from reportclient._engine.contention import ContentionMemory
from reportclient._engine.guarded_write import run_attempts
from reportclient._engine.moves import WriteSpec, plan_many, plan_move
from reportclient._gateway.gateway import (
    DEFAULT_CACHE_SIZE,
    DEFAULT_CACHE_TTL,
    CacheStats,
    Gateway,
)
from reportclient._model.candidate_results import AllocationCandidates, AllocationRequest
from reportclient._model.candidates import CandidatesQuery
from reportclient._model.consumers import Allocations, AllocationWrite, ConsumerAllocations
from reportclient._model.microversions import CONSUMER_TYPE_VERSION, LEAN_VERSION, Microversion
from reportclient._model.moves import Move
from reportclient._model.mutators import Mutator, is_idempotent
from reportclient._model.raw import RawAnswer
from reportclient._model.usages import ProjectUsages, ProviderUsages, usages_query
from reportclient._model.validation import (
    normalize_allocations,
    validate_consumer_type,
    validate_method,
    validate_owner,
    validate_path,
    validate_uuid,
)
from reportclient._wire.negotiation import format_version, parse_version
from reportclient._wire.transport import (
    DEFAULT_POOL_SIZE,
    DEFAULT_TIMEOUT,
    Transport,
    size_pool,
    validate_request_id,
    validate_timeout,
)
from reportclient.errors import (
    InvalidInput,
    MicroversionUnsupported,
    OutcomeUnknown,
    PlacementUnavailable,
)
from reportclient.retry import default_retry

__all__ = ["PlacementClient"]


#: Seconds per request: one number for both, or (connect, read).
Timeout = float | tuple[float, float]


_READS = frozenset({"GET", "HEAD"})


class PlacementClient:
    """Conflict-safe access to consumers' allocations in Placement.

    Thread-safe: one client may serve many scheduler threads.

    :param adapter: a keystoneauth1 Adapter pointing at Placement.
    :param retry: a ``tenacity.Retrying`` deciding when and how long to
        retry; what is retried is always the client's decision.
    :param cache_size: consumers whose state is kept (LRU); 0 disables.
    :param cache_ttl: seconds a cached state is trusted for the content and
        generation of a write; 0 (the default) trusts none, so every update
        reads first. See README.rst, "Cache".
    :param clock: monotonic seconds for ``cache_ttl``; tests pass a fake.
    :param microversion: pin a version instead of negotiating one.
    :param global_request_id: ``req-<uuid4>`` sent with every request.
    :param timeout: seconds per request, one number or (connect, read).
    :param default_consumer_type: the type (``^[A-Z0-9_]+$``) of a consumer
        a write creates when the caller names none: ``"INSTANCE"``, as nova
        writes; cyborg's claims may say ``"ACCELERATOR"``. A consumer that
        exists keeps its own type unless the caller names one.
    :param reconcile_max_staleness: the agent setting for every
        ``providers.reconcile`` that does not pass its own ``max_staleness``:
        None (strict, every write proven) or 300 (``ProviderClient.AGENT_MAX_STALENESS``,
        nova's association refresh) for a compute agent (README "The agent setting").
    """

    def __init__(
        self,
        adapter: ks_adapter.Adapter,
        *,
        retry: tenacity.Retrying | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        cache_ttl: float = DEFAULT_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
        microversion: str | None = None,
        global_request_id: str | None = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        default_consumer_type: str = DEFAULT_CONSUMER_TYPE,
        reconcile_max_staleness: float | None = None,
    ) -> None:
        self._default_type = validate_consumer_type(default_consumer_type)
        self._transport = Transport(
            adapter, microversion=microversion, global_request_id=global_request_id, timeout=timeout
        )
        # Every request below goes through the gateway, the only writer of both caches.
        try:
            self._gateway = Gateway.build(
                self._transport, cache_size=cache_size, cache_ttl=cache_ttl, clock=clock
            )
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        self._retry = _policy(retry) if retry is not None else default_retry()
        self._contention = ContentionMemory(clock)
        self._providers = ProviderClient(
            self._gateway,
            retry=self._retry,
            clock=clock,
            contention=self._contention,
            reconcile_max_staleness=reconcile_max_staleness,
        )

    @classmethod
    def from_session(
        cls,
        session: ks_session.Session,
        *,
        retry: tenacity.Retrying | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        cache_ttl: float = DEFAULT_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
        microversion: str | None = None,
        global_request_id: str | None = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        default_consumer_type: str = DEFAULT_CONSUMER_TYPE,
        reconcile_max_staleness: float | None = None,
        pool_size: int | None = None,
        **adapter_kwargs: Any,
    ) -> PlacementClient:
        """Build a client over a keystoneauth1 Session.

        ``adapter_kwargs`` go to the Adapter (``interface``,
        ``region_name``, ``endpoint_override``...).

        :param pool_size: connections kept per host; when given, the
            Session's transport adapters are replaced by keystoneauth's
            keep-alive adapter with that pool. None leaves the Session as is.
        """
        if pool_size is not None:
            size_pool(session.session, pool_size)
        adapter_kwargs.setdefault("service_type", "placement")
        return cls(
            ks_adapter.Adapter(session, **adapter_kwargs),
            retry=retry,
            cache_size=cache_size,
            cache_ttl=cache_ttl,
            clock=clock,
            microversion=microversion,
            global_request_id=global_request_id,
            timeout=timeout,
            default_consumer_type=default_consumer_type,
            reconcile_max_staleness=reconcile_max_staleness,
        )

    @classmethod
    def from_endpoint(
        cls,
        url: str,
        token: str | None = None,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        **kwargs: Any,
    ) -> PlacementClient:
        """Build a client for a Placement root URL and a fixed token.

        Without Keystone, as with Placement's ``noauth2`` strategy, the
        token is ``user[:project]`` (``"admin"`` for an administrator).

        :param pool_size: connections kept to Placement (default 64, so 64
            threads sharing the client open no connection beyond the pool).
        """
        auth = token_endpoint.Token(url, token) if token is not None else None
        # The Session's timeout is what bounds keystoneauth's version discovery.
        timeout = max(validate_timeout(kwargs.get("timeout", DEFAULT_TIMEOUT)))
        session = ks_session.Session(auth=auth, timeout=timeout)
        return cls.from_session(session, endpoint_override=url, pool_size=pool_size, **kwargs)

    def __repr__(self) -> str:
        stats = self._gateway.cache_stats()
        return f"<PlacementClient {self._transport!r} cache {stats.size}/{stats.maxsize}>"

    @property
    def providers(self) -> ProviderClient:
        """Resource providers, inventories, traits, aggregates, reconcile and reshape."""
        return self._providers

    @property
    def microversion(self) -> str:
        """The microversion in use (negotiated on first use unless pinned)."""
        return format_version(self._gateway.microversion)

    @property
    def default_consumer_type(self) -> str:
        """The type given to a consumer a write creates when the caller names none."""
        return self._default_type

    def cache_stats(self) -> CacheStats:
        """Hits, misses and evictions of the consumer cache."""
        return self._gateway.cache_stats()

    def cached(self, consumer_uuid: str, *, trusted: bool = False) -> ConsumerAllocations | None:
        """What the cache holds for a consumer, however old; None when nothing is cached.

        :param trusted: only a state the next write would compute from
            without reading first (within ``cache_ttl``, and not in doubt
            after an overlapping or lost answer); None otherwise.
        """
        found = self._gateway.consumer_entry(validate_uuid(consumer_uuid))
        if found is None or (trusted and not found[1]):
            return None
        return found[0]

    def get_allocations(
        self, consumer_uuid: str, *, global_request_id: str | None = None
    ) -> ConsumerAllocations:
        """Read a consumer from Placement and refresh the cache.

        A consumer Placement does not hold comes back with
        ``generation=None`` and no allocations.

        :param global_request_id: ``req-<uuid4>`` for this call, overriding
            the client's (every call below takes it too).
        """
        return self._read(validate_uuid(consumer_uuid), validate_request_id(global_request_id))

    def _read(
        self, consumer_uuid: str, request_id: str | None, at_most: Microversion | None = None
    ) -> ConsumerAllocations:
        return self._gateway.read_consumer(consumer_uuid, request_id, at_most)

    def claim(
        self,
        consumer_uuid: str,
        allocations: Allocations | AllocationRequest,
        *,
        project_id: str,
        user_id: str,
        consumer_type: str | None = None,
        overwrite: bool = False,
        mappings: Mapping[str, Sequence[str]] | None = None,
        global_request_id: str | None = None,
        retry: tenacity.Retrying | None = None,
    ) -> ConsumerAllocations:
        """Make the consumer hold exactly ``allocations``, creating it if needed.

        Replaces only what this client knew the consumer to hold (or nothing,
        for a consumer it never saw). After a lost answer the consumer is read:
        holding ``allocations`` is success; at the generation the write
        carried, as it was, the claim is written again; anything else (a new
        consumer still missing included: its create may have landed and been
        deleted since) is :class:`OutcomeUnknown`, never a second write.

        :param overwrite: replace whatever the consumer holds, even
            allocations this client never saw (last writer wins).
        :param allocations: may be an :class:`AllocationRequest` from
            :meth:`get_allocation_candidates`; its ``mappings`` go along.
        :param mappings: request group suffix -> providers (what a
            candidate's ``mappings`` says), sent from microversion 1.34.
        :param consumer_type: the consumer's type; None keeps an existing
            consumer's and gives a new one the client's
            ``default_consumer_type``.
        :param retry: a ``tenacity.Retrying`` for this call only, in place of
            the client's (every write below takes it too).
        :raises InvalidInput: before any request, for malformed input.
        :raises ConsumerChanged: another writer changed the consumer; nothing
            was overwritten.
        :raises CapacityExceeded: a provider lacks room; not retried.
        :raises GenerationConflict: conflicts outlasted the retry policy.
        :raises OutcomeUnknown: the policy gave up while a write may still land.
        :raises PlacementUnavailable: Placement stayed unreachable.
        """
        if isinstance(allocations, AllocationRequest):
            mappings = allocations.mappings if mappings is None else mappings
            allocations = allocations.allocations
        return self._run(
            consumer_uuid,
            normalize_allocations(allocations),
            Kind.CLAIM,
            idempotent=True,
            overwrite=overwrite,
            owner=(project_id, user_id),
            consumer_type=consumer_type,
            global_request_id=global_request_id,
            mappings=_mappings(mappings),
            retry=retry,
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
        retry: tenacity.Retrying | None = None,
    ) -> ConsumerAllocations:
        """Read-modify-write the allocations of an existing consumer.

        ``mutate(current)`` gets a copy of the state the write will replace (a
        state just read, or one cached within ``cache_ttl``) and returns what
        the consumer should hold; it runs again on every attempt. It is taken
        as not idempotent unless it says so (:func:`reportclient.idempotent`).

        ``consumer_type`` (sent from microversion 1.38) defaults to the
        consumer's own type.

        :raises InvalidInput: before any request, for malformed input.
        :raises ConsumerGone: the consumer does not exist; it is not created.
        :raises AllocationsNotHeld: :func:`reportclient.subtract_allocations`
            asked for more than the consumer holds; nothing was written.
        :raises CapacityExceeded: a provider lacks room; not retried.
        :raises OutcomeUnknown: a write's answer was lost and a mutation that
            is not idempotent cannot be proven landed or not; not re-applied.
        :raises GenerationConflict: conflicts outlasted the retry policy.
        :raises PlacementUnavailable: Placement stayed unreachable.
        """
        if not callable(mutate):
            raise InvalidInput(
                f"mutate must be a function of the consumer's current state, got "
                f"{type(mutate).__name__}; to set allocations use claim() or "
                "replace_allocations(...)"
            )
        return self._run(
            consumer_uuid,
            mutate,
            Kind.UPDATE,
            idempotent=is_idempotent(mutate),
            owner=(project_id, user_id),
            consumer_type=consumer_type,
            global_request_id=global_request_id,
            retry=retry,
        )

    def release(
        self,
        consumer_uuid: str,
        *,
        global_request_id: str | None = None,
        retry: tenacity.Retrying | None = None,
    ) -> None:
        """Remove all of a consumer's allocations, guarded by its generation.

        Unlike ``DELETE /allocations``, each write carries the generation just
        read (or cached within ``cache_ttl``), so a write racing with it is
        never lost unseen. It empties only what it saw first: when a
        conflict's re-read shows other allocations (another writer came in
        between), it raises :class:`ConsumerChanged` and writes nothing
        (:meth:`force_release` removes whatever is there). A consumer that is
        already gone is not an error.

        :raises ConsumerChanged: the consumer changed since the release read it.
        :raises OutcomeUnknown: a write's answer was lost and the consumer was
            then re-created or changed, so whether it landed is unknown.
        """
        self._run(
            consumer_uuid,
            {},
            Kind.RELEASE,
            idempotent=True,
            owner=None,
            consumer_type=None,
            global_request_id=global_request_id,
            retry=retry,
        )

    def force_release(self, consumer_uuid: str, *, global_request_id: str | None = None) -> bool:
        """Delete every allocation of a consumer at once, with no generation check.

        ``DELETE /allocations/{consumer}``: one request, for operators' cleanup
        tools and for callers that mean "whatever it holds, now" (nova does
        this on shelve-offload and instance delete). It removes allocations
        written by anyone, including any written after the caller last
        looked, and it is sent once: a DELETE whose answer is lost
        (``PlacementUnavailable`` with ``outcome_unknown``) may still land
        later and remove what was written after it. :meth:`release` is the
        safe default.

        :returns: True if Placement held allocations, False if it held none.
        """
        consumer = validate_uuid(consumer_uuid)
        return self._gateway.delete_consumer(consumer, validate_request_id(global_request_id))

    def put_allocations(
        self,
        consumer_uuid: str,
        allocations: Allocations | AllocationRequest,
        *,
        consumer_generation: int | None,
        project_id: str,
        user_id: str,
        consumer_type: str | None = None,
        mappings: Mapping[str, Sequence[str]] | None = None,
        global_request_id: str | None = None,
    ) -> ConsumerAllocations:
        """Compare-and-swap: one PUT carrying the caller's ``consumer_generation``, never retried.

        For callers that hold their own premise (neutron-lib's
        ``update_allocation``, nova's ``claim_resources(consumer_generation=)``):
        the write replaces whatever the consumer holds if, and only if, it is
        still at ``consumer_generation`` (None: the consumer must not exist).
        Nothing is read first and nothing is sent again: what to do after a
        conflict is the caller's decision, as the premise is the caller's.
        Prefer :meth:`update_allocations`, which re-reads and recomputes.

        A lost answer is :class:`OutcomeUnknown`, without a read to settle it:
        the fate rule compares the consumer's content at the carried
        generation with the write's premise, and here the premise is not
        known to the client, so a consumer still at ``consumer_generation``
        proves nothing (the write may still land) and one at
        ``consumer_generation + 1`` holding exactly what was sent may be
        another writer's identical write. Read with :meth:`get_allocations`
        and decide.

        ``consumer_type`` None gives a new consumer (``consumer_generation``
        None) the client's ``default_consumer_type`` and leaves an existing
        consumer's own type alone (the write then goes at a microversion
        without consumer types). Empty ``allocations`` at a generation
        deletes the consumer (Placement's rule).

        :returns: the consumer as the write left it (generation + 1; missing
            after an empty write), also put in the cache.
        :raises InvalidInput: before any request, for malformed input, or
            for empty ``allocations`` with ``consumer_generation`` None
            (there is nothing to delete).
        :raises GenerationConflict: the consumer is not at
            ``consumer_generation``; ``exc.server_generation`` is the one
            Placement holds (None: it holds no consumer), ``exc.detail``
            Placement's words. Nothing was written.
        :raises CapacityExceeded: a provider lacks room; nothing was written.
        :raises OutcomeUnknown: the answer was lost; the write may or may not
            have landed (``exc.sent``, ``exc.lost``).
        :raises PlacementUnavailable: no connection was made (``outcome_unknown``
            False): nothing was written, safe to call again.
        """
        consumer = validate_uuid(consumer_uuid)
        if isinstance(allocations, AllocationRequest):
            mappings = allocations.mappings if mappings is None else mappings
            allocations = allocations.allocations
        desired = normalize_allocations(allocations)
        if consumer_generation is not None and (
            isinstance(consumer_generation, bool)
            or not isinstance(consumer_generation, int)
            or consumer_generation < 0
        ):
            raise InvalidInput(
                f"consumer_generation must be None (a new consumer) or an int >= 0, "
                f"got {consumer_generation!r}"
            )
        if not desired and consumer_generation is None:
            raise InvalidInput(
                "empty allocations for a consumer expected not to exist: nothing to delete"
            )
        validate_owner(project_id, user_id)
        ctype = None if consumer_type is None else validate_consumer_type(consumer_type)
        if ctype is None and consumer_generation is None:
            ctype = self._default_type
        write = AllocationWrite(consumer, desired, consumer_generation, project_id, user_id, ctype)
        try:
            return self._gateway.put_consumer(
                write,
                send_type=self._gateway.supports(CONSUMER_TYPE_VERSION),
                kept_type=None,
                mappings=_mappings(mappings),
                request_id=validate_request_id(global_request_id),
            )
        except PlacementUnavailable as exc:
            if not exc.outcome_unknown:
                raise
            raise OutcomeUnknown(
                f"a write carrying generation {consumer_generation} may or may not have "
                f"landed ({exc.message}); it is not sent again and nothing was read: "
                "read the consumer and decide",
                sent=write,
                state=None,
                lost=exc,
                method="PUT",
                url=exc.url,
            ) from exc

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
        verb = validate_method(method, has_body=json is not None)
        where = validate_path(path)
        version = None if microversion is None else parse_version(microversion)
        seconds = None if timeout is None else validate_timeout(timeout)
        request_id = validate_request_id(global_request_id)
        policy = self._policy(retry)

        def send() -> RawAnswer:
            reply = self._gateway.raw(
                verb,
                where,
                json=json,
                version=version,
                request_id=request_id,
                timeout=seconds,
            )
            return RawAnswer(
                reply.status,
                reply.body,
                MappingProxyType(dict(reply.headers)),
                reply.request_id,
                format_version(version or self._gateway.microversion),
            )

        if verb not in _READS:
            return send()
        # A read is harmless to repeat; only an unreachable server is worth it.
        reads = policy.copy(
            retry=tenacity.retry_if_exception_type(PlacementUnavailable), reraise=True
        )
        answer: RawAnswer = reads(send)
        return answer

    def _run(
        self,
        consumer_uuid: str,
        mutate: Mutator | dict[str, dict[str, int]],
        kind: Kind,
        *,
        idempotent: bool,
        owner: tuple[str, str] | None,
        consumer_type: str | None,
        global_request_id: str | None,
        overwrite: bool = False,
        mappings: dict[str, tuple[str, ...]] | None = None,
        retry: tenacity.Retrying | None = None,
    ) -> ConsumerAllocations:
        """Validate, then run a write cycle's attempts under the retry policy."""
        policy = self._policy(retry)
        consumer = validate_uuid(consumer_uuid)
        if owner is not None:
            validate_owner(*owner)
        ctype = None if consumer_type is None else validate_consumer_type(consumer_type)
        write = ConsumerWrite(
            self._gateway,
            consumer,
            mutate,
            kind=kind,
            idempotent=idempotent,
            overwrite=overwrite,
            owner=owner,
            ctype=ctype,
            request_id=validate_request_id(global_request_id),
            mappings=mappings,
            memory=self._contention,
            default_type=self._default_type,
            # Without a type to compare, the cycle's reads need none either
            # (see LEAN_VERSION): they go at the lowest version that has generations.
            read_at_most=None if ctype is not None else LEAN_VERSION,
        )
        return run_attempts(write, policy)

    def move_allocations(
        self,
        source_uuid: str,
        target_uuid: str,
        *,
        expect_target: Allocations | None = None,
        target_consumer_type: str | None = None,
        source_allocations: Allocations | None = None,
        global_request_id: str | None = None,
        retry: tenacity.Retrying | None = None,
    ) -> Move:
        """Move everything the source consumer holds to the target, in one POST.

        Both consumers are read and written with their generations (the
        target as new, ``null``, when it does not exist), all or nothing; a
        conflict re-reads both and moves what the source holds then. A new
        target takes the source's project and user (and type, unless
        ``target_consumer_type`` is given), as a migration record does.

        :param expect_target: what the caller knows the target holds; the
            moved allocations are added to it. Default: nothing.
        :param source_allocations: what the source holds afterwards
            (default nothing): a migration moves the instance's allocations
            to its migration record and claims the destination for the
            instance in the same request.
        :raises NothingToMove: the source holds nothing; nothing was written.
        :raises ConsumerChanged: the target holds allocations the caller did
            not expect; nothing was written.
        :raises CapacityExceeded: a provider lacks room; not retried.
        :raises OutcomeUnknown: the POST's answer was lost and the
            generations cannot prove whether it landed; not re-sent.
        :raises GenerationConflict: conflicts outlasted the retry policy.
        """
        move = plan_move(
            source_uuid,
            target_uuid,
            expect_target=expect_target,
            target_consumer_type=target_consumer_type,
            source_allocations=source_allocations,
        )
        states = self._run_many(
            move.parts,
            move.plan,
            idempotent=False,
            by_content=True,
            request_id=global_request_id,
            retry=retry,
        )
        source, target = (part.consumer for part in move.parts)
        return Move(states[source], states[target], dict(move.moved))

    def write_many(
        self,
        writes: Mapping[str, WriteSpec],
        *,
        project_id: str,
        user_id: str,
        consumer_type: str | None = None,
        overwrite: bool = False,
        global_request_id: str | None = None,
        retry: tenacity.Retrying | None = None,
    ) -> dict[str, ConsumerAllocations]:
        """Write several consumers in one ``POST /allocations``: all land, or none.

        Each value says what its consumer should hold: allocations (a claim,
        creating the consumer if needed and replacing only what this client
        knew, as :meth:`claim`), ``{}`` (a release), or a ``mutate``
        function of its current state (an update of an existing consumer,
        as :meth:`update_allocations`). Every consumer is read on every
        attempt; a conflict on any of them writes nothing and re-reads all.

        :returns: every consumer's state after the write.
        :raises ConsumerChanged: a claimed consumer holds what this client
            never saw (unless ``overwrite``); nothing was written.
        :raises ConsumerGone: an updated consumer does not exist.
        :raises OutcomeUnknown: as for :meth:`update_allocations`, for the
            whole POST (``exc.writes``, ``exc.states``).
        """
        validate_owner(project_id, user_id)
        many = plan_many(writes, owner=(project_id, user_id), consumer_type=consumer_type)
        return self._run_many(
            many.parts,
            many.plan,
            idempotent=many.idempotent,
            overwrite=overwrite,
            request_id=global_request_id,
            retry=retry,
        )

    def get_allocation_candidates(
        self,
        query: CandidatesQuery | None = None,
        *,
        global_request_id: str | None = None,
        **query_kwargs: Any,
    ) -> AllocationCandidates:
        """``GET /allocation_candidates``: where the resources asked for fit.

        Pass a :class:`CandidatesQuery`, or its keywords
        (``get_allocation_candidates(resources={"VCPU": 1}, limit=5)``).

        :raises InvalidInput: a malformed query, before any request.
        :raises MicroversionUnsupported: the query needs a newer microversion
            than the one in use; nothing was sent.
        """
        if query is None:
            query = CandidatesQuery(**query_kwargs)
        elif query_kwargs:
            raise InvalidInput("pass a CandidatesQuery or its keywords, not both")
        if self._gateway.microversion < query.version():
            raise MicroversionUnsupported(
                f"this query needs placement {format_version(query.version())}; "
                f"the client speaks {format_version(self._gateway.microversion)}"
            )
        return self._gateway.candidates(
            query.query_string(), validate_request_id(global_request_id)
        )

    def get_provider_usages(
        self, provider_uuid: str, *, global_request_id: str | None = None
    ) -> ProviderUsages:
        """``GET /resource_providers/{uuid}/usages``: used amount per inventoried class.

        :raises PlacementError: status 404 for an unknown provider.
        """
        rp = validate_uuid(provider_uuid, "resource provider uuid")
        return self._gateway.provider_usages(rp, validate_request_id(global_request_id))

    def get_usages(
        self,
        project_id: str,
        *,
        user_id: str | None = None,
        consumer_type: str | None = None,
        global_request_id: str | None = None,
    ) -> ProjectUsages:
        """``GET /usages``: a project's (or one of its users') allocations, summed.

        :param consumer_type: only consumers of this type, or ``"all"`` /
            ``"unknown"`` (microversion 1.38+).
        """
        version = self._gateway.microversion
        query = usages_query(project_id, user_id, consumer_type, version)
        grouped = version >= CONSUMER_TYPE_VERSION
        return self._gateway.usages(
            project_id, user_id, query, grouped, validate_request_id(global_request_id)
        )

    def _run_many(
        self,
        parts: Sequence[Part],
        plan: Plan,
        *,
        idempotent: bool,
        overwrite: bool = False,
        by_content: bool = False,
        request_id: str | None,
        retry: tenacity.Retrying | None = None,
    ) -> dict[str, ConsumerAllocations]:
        policy = self._policy(retry)
        write = BatchWrite(
            self._gateway,
            parts,
            plan,
            idempotent=idempotent,
            overwrite=overwrite,
            by_content=by_content,
            request_id=validate_request_id(request_id),
            memory=self._contention,
            default_type=self._default_type,
        )
        return run_attempts(write, policy)

    def _policy(self, retry: tenacity.Retrying | None) -> tenacity.Retrying:
        """This call's policy: the one given, else the client's."""
        return self._retry if retry is None else _policy(retry)


def _policy(retry: object) -> tenacity.Retrying:
    """``retry`` if it is a policy the engine can copy and call.

    :raises InvalidInput: otherwise, before anything is sent.
    """
    if not isinstance(retry, tenacity.Retrying):
        raise InvalidInput(
            f"retry must be a tenacity.Retrying (see reportclient.default_retry), got {retry!r}"
        )
    return retry


def _mappings(given: Mapping[str, Sequence[str]] | None) -> dict[str, tuple[str, ...]] | None:
    """Validate a candidate's ``mappings``: group suffix -> provider uuids."""
    if not given:
        return None
    if not isinstance(given, Mapping):
        raise InvalidInput(f"mappings must map group suffixes to provider uuids, got {given!r}")
    return {
        str(group): tuple(validate_uuid(rp, "resource provider uuid") for rp in rps)
        for group, rps in given.items()
    }
