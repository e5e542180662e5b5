"""Moves, several consumers in one write, allocation candidates and usages.

:class:`SchedulingOps` is the part of :class:`reportclient.PlacementClient`
a scheduler uses beyond one consumer's allocations; it is a mixin only to
keep ``client.py`` to one concern (a consumer's own reads and writes), and
shares the client's transport, cache and retry policy. The logic lives in
``moves.py``/``_engine/batch_write.py``, ``candidates.py`` and ``usages.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import tenacity

from reportclient._engine.batch_write import BatchWrite, Part, Plan
from reportclient._engine.guarded_write import run_attempts
from reportclient.cache import ConsumerCache
from reportclient.candidates import AllocationCandidates, CandidatesQuery
from reportclient.errors import InvalidInput, MicroversionUnsupported
from reportclient.models import Allocations, ConsumerAllocations, validate_owner, validate_uuid
from reportclient.moves import Move, WriteSpec, plan_many, plan_move
from reportclient.transport import (
    CONSUMER_TYPE_VERSION,
    Transport,
    format_version,
    validate_request_id,
)
from reportclient.usages import ProjectUsages, ProviderUsages, usages_query

__all__ = ["SchedulingOps"]


class SchedulingOps:
    """Moves, multi-consumer writes, candidates and usages, on the client's engine."""

    _transport: Transport
    _cache: ConsumerCache
    _retry: tenacity.Retrying

    def _read_for_cycle(self, consumer: str, request_id: str | None) -> ConsumerAllocations:
        raise NotImplementedError

    def move_allocations(
        self,
        source_uuid: str,
        target_uuid: str,
        *,
        expect_target: Allocations | None = None,
        target_consumer_type: str | None = None,
        source_allocations: Allocations | None = None,
        global_request_id: str | None = None,
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
            move.parts, move.plan, idempotent=False, by_content=True, request_id=global_request_id
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
        if self._transport.microversion < query.version():
            raise MicroversionUnsupported(
                f"this query needs placement {format_version(query.version())}; "
                f"the client speaks {format_version(self._transport.microversion)}"
            )
        reply = self._transport.request(
            "GET",
            f"/allocation_candidates?{query.query_string()}",
            global_request_id=validate_request_id(global_request_id),
        )
        return AllocationCandidates.from_json(reply.body or {})

    def get_provider_usages(
        self, provider_uuid: str, *, global_request_id: str | None = None
    ) -> ProviderUsages:
        """``GET /resource_providers/{uuid}/usages``: used amount per inventoried class.

        :raises PlacementError: status 404 for an unknown provider.
        """
        rp = validate_uuid(provider_uuid, "resource provider uuid")
        reply = self._transport.request(
            "GET",
            f"/resource_providers/{rp}/usages",
            global_request_id=validate_request_id(global_request_id),
        )
        return ProviderUsages.from_json(rp, reply.body or {})

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
        version = self._transport.microversion
        query = usages_query(project_id, user_id, consumer_type, version)
        reply = self._transport.request(
            "GET", f"/usages?{query}", global_request_id=validate_request_id(global_request_id)
        )
        grouped = version >= CONSUMER_TYPE_VERSION
        return ProjectUsages.from_json(project_id, user_id, reply.body or {}, grouped=grouped)

    def _run_many(
        self,
        parts: Sequence[Part],
        plan: Plan,
        *,
        idempotent: bool,
        overwrite: bool = False,
        by_content: bool = False,
        request_id: str | None,
    ) -> dict[str, ConsumerAllocations]:
        write = BatchWrite(
            self._transport,
            self._cache,
            self._read_for_cycle,
            parts,
            plan,
            idempotent=idempotent,
            overwrite=overwrite,
            by_content=by_content,
            request_id=validate_request_id(request_id),
        )
        return run_attempts(write, self._retry)
