"""One consumer's allocations: claim, update, release, and the consumer cache.

Every write is one operation on the engine's attempt skeleton
(:mod:`reportclient._engine.guarded_write`), under the invariants in
:mod:`reportclient._engine.consumer_write`: read -> compute -> write, where
the read is free for a consumer taken for new or cached within
``cache_ttl``; after a conflict or a lost answer the next attempt reads from
Placement, so a retry never replays a body built from stale state. Moves
and batches of several consumers in one request are :mod:`.batches`. Part
of :class:`~reportclient.PlacementClient`, whose :class:`~.core.Core` it uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import tenacity

from reportclient._clients.core import Core
from reportclient._engine.attempts import run_attempts
from reportclient._engine.consumer_write import ConsumerWrite, Kind
from reportclient._gateway.gateway import CacheStats
from reportclient._model.candidate_results import AllocationRequest
from reportclient._model.consumers import Allocations, AllocationWrite, ConsumerAllocations
from reportclient._model.microversions import CONSUMER_TYPE_VERSION, LEAN_VERSION
from reportclient._model.mutators import Mutator, is_idempotent
from reportclient._model.validation import (
    normalize_allocations,
    validate_consumer_type,
    validate_generation,
    validate_owner,
    validate_uuid,
)
from reportclient._wire.transport import validate_request_id
from reportclient.errors import InvalidInput, OutcomeUnknown, PlacementUnavailable

__all__ = ["AllocationsClient"]


class AllocationsClient:
    """Consumers' allocations, read and written safely under races (part of ``PlacementClient``)."""

    _core: Core

    def cache_stats(self) -> CacheStats:
        """Hits, misses and evictions of the consumer cache."""
        return self._core.gateway.cache_stats()

    def cached(self, consumer_uuid: str, *, trusted: bool = False) -> ConsumerAllocations | None:
        """What the cache holds for a consumer, however old; None when nothing is cached.

        Also None while two overlapping answers left the entry in doubt (the
        ordering rule, doc/source/cache.rst): the client keeps one of them
        only to tell its own writes from another writer's, and reads before
        writing from it.

        :param trusted: only a state the next write would compute from
            without reading first (within ``cache_ttl``, and not in doubt);
            None otherwise.
        """
        consumer = validate_uuid(consumer_uuid)
        if not trusted:
            return self._core.gateway.consumer_cached(consumer)
        found = self._core.gateway.consumer_entry(consumer)
        return found[0] if found is not None and found[1] else None

    def get_allocations(
        self, consumer_uuid: str, *, global_request_id: str | None = None
    ) -> ConsumerAllocations:
        """Read a consumer from Placement and refresh the cache.

        A consumer Placement does not hold comes back with
        ``generation=None`` and no allocations.

        :param global_request_id: ``req-<uuid4>`` for this call, overriding
            the client's (every call below takes it too).
        """
        return self._core.gateway.read_consumer(
            validate_uuid(consumer_uuid), validate_request_id(global_request_id)
        )

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
        start: ConsumerAllocations | None = None,
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
        :param start: the consumer as the caller knows it, in place of what
            this client last knew: the first write goes at its generation,
            and only the allocations it shows may be replaced.
            ``ConsumerAllocations.missing(uuid)`` claims a consumer the
            caller takes for new (one ``PUT`` with generation null), whatever
            this client saw of it before (nova's scheduler: a migration or a
            shelve-offload elsewhere has usually emptied it since); one that
            turns out to hold allocations is :class:`ConsumerChanged`.
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
        _check_start(start, consumer_uuid)
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
            start=start,
        )

    def update_allocations(
        self,
        consumer_uuid: str,
        mutate: Mutator,
        *,
        project_id: str | None = None,
        user_id: str | None = None,
        consumer_type: str | None = None,
        start: ConsumerAllocations | None = None,
        global_request_id: str | None = None,
        retry: tenacity.Retrying | None = None,
    ) -> ConsumerAllocations:
        """Read-modify-write the allocations of an existing consumer.

        ``mutate(current)`` gets a copy of the state the write will replace (a
        state just read, or one cached within ``cache_ttl``) and returns what
        the consumer should hold; it runs again on every attempt. It is taken
        as not idempotent unless it says so (:func:`reportclient.idempotent`).

        ``consumer_type`` (sent from microversion 1.38) defaults to the
        consumer's own type, and ``project_id`` and ``user_id`` (both or
        neither) to its own owner.

        :param start: the consumer as the caller just read it through this
            client (``get_allocations``): the first attempt is computed from
            it instead of a second read. A stale one costs a conflict and a
            read, never a lost write: the write carries its generation.

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
        if (project_id is None) != (user_id is None):
            raise InvalidInput("update_allocations takes project_id and user_id both, or neither")
        _check_start(start, consumer_uuid)
        return self._run(
            consumer_uuid,
            mutate,
            Kind.UPDATE,
            idempotent=is_idempotent(mutate),
            owner=None if project_id is None or user_id is None else (project_id, user_id),
            consumer_type=consumer_type,
            global_request_id=global_request_id,
            retry=retry,
            start=start,
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
        return self._core.gateway.delete_consumer(consumer, validate_request_id(global_request_id))

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
        if consumer_generation is not None:
            validate_generation(consumer_generation, "consumer_generation (None: a new consumer)")
        if not desired and consumer_generation is None:
            raise InvalidInput(
                "empty allocations for a consumer expected not to exist: nothing to delete"
            )
        validate_owner(project_id, user_id)
        ctype = None if consumer_type is None else validate_consumer_type(consumer_type)
        if ctype is None and consumer_generation is None:
            ctype = self._core.default_type
        write = AllocationWrite(consumer, desired, consumer_generation, project_id, user_id, ctype)
        try:
            return self._core.gateway.put_consumer(
                write,
                send_type=self._core.gateway.supports(CONSUMER_TYPE_VERSION),
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
        start: ConsumerAllocations | None = None,
    ) -> ConsumerAllocations:
        """Validate, then run a write cycle's attempts under the retry policy."""
        policy = self._core.policy(retry)
        consumer = validate_uuid(consumer_uuid)
        if owner is not None:
            validate_owner(*owner)
        ctype = None if consumer_type is None else validate_consumer_type(consumer_type)
        write = ConsumerWrite(
            self._core.gateway,
            consumer,
            mutate,
            kind=kind,
            idempotent=idempotent,
            overwrite=overwrite,
            owner=owner,
            ctype=ctype,
            request_id=validate_request_id(global_request_id),
            mappings=mappings,
            memory=self._core.contention,
            default_type=self._core.default_type,
            # Without a type to compare, the cycle's reads need none either
            # (see LEAN_VERSION): they go at the lowest version that has generations.
            read_at_most=None if ctype is not None else LEAN_VERSION,
            start=start,
        )
        return run_attempts(write, policy)


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


def _check_start(start: ConsumerAllocations | None, consumer_uuid: str) -> None:
    """A caller's ``start`` must be a state of the consumer written."""
    if start is not None and (
        not isinstance(start, ConsumerAllocations)
        or start.consumer_uuid != validate_uuid(consumer_uuid)
    ):
        raise InvalidInput(f"start must be consumer {consumer_uuid}'s state, got {start!r}")
