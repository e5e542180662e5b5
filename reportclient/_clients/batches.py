"""Several consumers in one all-or-nothing ``POST /allocations``: moves and batches.

A move (a migration's doubled-up allocations handed to its record, a
revert) and a batch of claims, updates and releases are one request each,
guarded by every consumer's generation; a conflict on any of them writes
nothing and re-reads all (:class:`~reportclient._engine.batch_write.BatchWrite`).
Part of :class:`~reportclient.PlacementClient`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import tenacity

from reportclient._clients.core import Core
from reportclient._engine.attempts import run_attempts
from reportclient._engine.batch_write import BatchWrite, Part, Plan
from reportclient._engine.moves import WriteSpec, plan_many, plan_move
from reportclient._model.consumers import Allocations, ConsumerAllocations
from reportclient._model.moves import Move
from reportclient._model.validation import validate_owner
from reportclient._wire.transport import validate_request_id

__all__ = ["BatchesClient"]


class BatchesClient:
    """Moves and batches of consumers' allocations (part of ``PlacementClient``)."""

    _core: Core

    def move_allocations(
        self,
        source_uuid: str,
        target_uuid: str,
        *,
        expect_target: Allocations | None = None,
        target_consumer_type: str | None = None,
        source_allocations: Allocations | None = None,
        replace_target: bool = False,
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
        :param replace_target: the target ends holding exactly what the
            source held, whatever it held (nova's revert of a resize: the
            instance takes back what its migration record holds); still one
            POST guarded by both generations. Not with ``expect_target``.
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
            replace_target=replace_target,
        )
        states = self._run_many(
            move.parts,
            move.plan,
            idempotent=False,
            overwrite=replace_target,
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
        policy = self._core.policy(retry)
        write = BatchWrite(
            self._core.gateway,
            parts,
            plan,
            idempotent=idempotent,
            overwrite=overwrite,
            by_content=by_content,
            request_id=validate_request_id(request_id),
            memory=self._core.contention,
            default_type=self._core.default_type,
        )
        return run_attempts(write, policy)
