"""The consumer calls of nova's ``SchedulerReportClient``, on reportclient's engine.

nova's signatures, return values and exceptions are kept (:mod:`._errors`
says which for every failure); every request goes through the client's
gateway, and every id is checked before one is sent. What differs, on
purpose, is listed in doc/source/nova_adapter.rst:

- ``claim_resources`` is one ``PUT`` with generation ``null`` (nova reads
  first), whatever the client saw of the consumer before; one that holds
  allocations (an evacuation) is doubled up from the read its conflict
  made, and a consumer emptied meanwhile (the shelve race) is claimed
  afresh instead of failing.
- ``put_allocations`` sends the caller's body again only when Placement's
  answer proves the consumer generation still held (a race inside
  Placement); a consumer that moved on is ``AllocationUpdateFailed`` at once.
- ``move_allocations`` is nova's three requests, recomputed from a fresh
  read of both consumers after a conflict, never replayed.
- Deletes and updates carry the generation of the one read they act on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reportclient._gateway import routes
from reportclient._model.candidate_results import AllocationRequest
from reportclient._model.consumers import ConsumerAllocations
from reportclient._model.mutators import (
    Mutation,
    add_allocations,
    remove_providers,
    subtract_allocations,
)
from reportclient._model.validation import validate_uuid
from reportclient.errors import (
    ConsumerChanged,
    GenerationConflict,
    NothingToMove,
    PlacementError,
)
from reportclient.nova._common import LOG, Base, ProviderAllocInfo, request_id
from reportclient.nova._errors import answer

__all__ = ["AllocationCalls", "doubled_up"]

#: The microversion nova reads a consumer's allocations at (nova's CONSUMER_GENERATION_VERSION).
NOVA_CONSUMER_VERSION = "1.28"
# nova's put_allocations sends a body up to four times (its @retries).
_PUT_ATTEMPTS = 4


def _resources(allocations: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """``{rp: {"resources": {...}}}`` (nova's shape) as ``{rp: {...}}``."""
    return {rp: dict(entry["resources"]) for rp, entry in allocations.items()}


def doubled_up(destination: Mapping[str, Mapping[str, int]]) -> Mutation:
    """nova's move claim, from the consumer's current state: keep it, add new providers.

    A provider the consumer already holds (a shared disk provider) keeps its
    current amounts, as nova's ``_move_operation_alloc_request`` does; an
    empty consumer simply gets ``destination``. Applying it to its own
    result changes nothing, so a lost answer can be settled by content.
    """
    wanted = {rp: dict(res) for rp, res in destination.items()}

    def compute(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
        return _double(current.allocations, wanted)

    return Mutation(compute, idempotent=True, description="nova's doubled-up move claim")


def _double(
    held: Mapping[str, Mapping[str, int]], wanted: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    out = {rp: dict(res) for rp, res in held.items()}
    for rp, res in wanted.items():
        out.setdefault(rp, dict(res))
    return out


class AllocationCalls(Base):
    """Claims, moves, updates and deletes of consumers' allocations, as nova calls them."""

    # -- reads ------------------------------------------------------------------
    def _consumer_body(self, context: Any, consumer: str) -> dict[str, Any]:
        """``GET /allocations/{consumer}`` at nova's microversion (its keys, no consumer_type)."""
        answered = self._placement.request(
            "GET",
            routes.consumer(validate_uuid(consumer, "consumer uuid")),
            microversion=NOVA_CONSUMER_VERSION,
            global_request_id=request_id(context),
        )
        return dict(answered.body or {})

    def get_allocs_for_consumer(self, context: Any, consumer: str) -> dict[str, Any]:
        """``GET /allocations/{consumer}``'s body at nova's microversion, as nova returns it.

        :raises ConsumerAllocationRetrievalFailed: Placement answered with an
            error, or ``consumer`` is not a uuid (nothing is sent).
        """
        try:
            return self._consumer_body(context, consumer)
        except PlacementError as exc:
            failed: dict[str, Any] = answer("get_allocs_for_consumer", exc, consumer_uuid=consumer)
            return failed

    def get_allocations_for_consumer(self, context: Any, consumer: str) -> dict[str, Any] | None:
        """The consumer's ``allocations`` mapping (``{rp: {"resources": ...}}``); {} when none.

        As nova's: ``{}`` when Placement answered with an error, None when it
        could not be reached.
        """
        try:
            body = self._consumer_body(context, consumer)
        except PlacementError as exc:
            result: dict[str, Any] | None = answer(
                "get_allocations_for_consumer", exc, consumer_uuid=consumer
            )
            return result
        return dict(body.get("allocations") or {})

    def get_allocations_for_resource_provider(self, context: Any, rp_uuid: str) -> Any:
        """``ProviderAllocInfo(allocations={consumer: {"resources": ...}})`` for one provider.

        :raises ResourceProviderAllocationRetrievalFailed: Placement answered
            with an error, or ``rp_uuid`` is not a uuid (nothing is sent).
        """
        try:
            held = self._placement.request(
                "GET",
                routes.provider_allocations(validate_uuid(rp_uuid, "resource provider uuid")),
                global_request_id=request_id(context),
            )
        except PlacementError as exc:
            return answer("get_allocations_for_resource_provider", exc, rp_uuid=rp_uuid)
        return ProviderAllocInfo(allocations=dict((held.body or {}).get("allocations") or {}))

    # -- claims -------------------------------------------------------------------
    def claim_resources(
        self,
        context: Any,
        consumer_uuid: str,
        alloc_request: Mapping[str, Any],
        project_id: str,
        user_id: str,
        allocation_request_version: str | None = None,
        consumer_generation: int | None = None,
    ) -> bool | None:
        """Claim ``alloc_request`` for the consumer, doubling up when it already holds some.

        Without ``consumer_generation`` (nova's scheduler): one ``PUT`` with
        generation ``null``, whatever this client saw of the consumer before.
        One that holds allocations (an evacuation) answers with a conflict,
        whose read shows what it holds: the doubled-up claim is written at
        that read's generation (three requests), and recomputed from a fresh
        read if the consumer moved again. A consumer emptied between (the
        shelve race) is simply claimed. With a ``consumer_generation`` (or one in
        ``alloc_request``, nova's forced evacuation), the consumer is read
        and the claim (doubled up) written at that generation, once: a
        stale one is nova's ``AllocationUpdateFailed``.

        :returns: True when the claim landed; False as nova's (no room, a
            refusal, races inside Placement outlasting the retries); None
            when Placement is unreachable, as nova's ``safe_connect``.
        :raises AllocationUpdateFailed: a consumer generation conflict.
        """
        del allocation_request_version  # the body's shape is the client's microversion's
        rid = request_id(context)
        try:
            consumer = validate_uuid(consumer_uuid)
            request = AllocationRequest.from_json(alloc_request)
            given = alloc_request.get("consumer_generation", consumer_generation)
            if given is not None:
                self._claim_at(consumer, request, given, project_id, user_id, rid)
                return True
            try:
                # Generation null, whatever this client saw of the consumer
                # before: nova's scheduler claims an instance that is new, or
                # that a migration, a shelve-offload or a reschedule emptied
                # since (another service, usually), so "new" is the guess
                # that costs one request; what this client last saw is not.
                self._placement.claim(
                    consumer,
                    request,
                    project_id=project_id,
                    user_id=user_id,
                    start=ConsumerAllocations.missing(consumer),
                    global_request_id=rid,
                )
            except ConsumerChanged as exc:
                if exc.conflict is not None and not exc.conflict.explained:
                    # A 409 worded as none of Placement's (a proxy's, a test
                    # double's): nothing says a second write would fare
                    # better, and nova's claim fails on its first 409.
                    raise
                # It holds allocations (an evacuation): double up from the read
                # the conflict made, at its generation.
                self._double_up(consumer, request, exc.state, project_id, user_id, rid)
        except PlacementError as exc:
            LOG.warning("claim for consumer %s failed: %s", consumer_uuid, exc)
            result: bool | None = answer("claim_resources", exc, consumer_uuid=consumer_uuid)
            return result
        return True

    def _claim_at(
        self,
        consumer: str,
        request: AllocationRequest,
        generation: int,
        project_id: str,
        user_id: str,
        rid: str | None,
    ) -> None:
        """nova's claim at the caller's consumer generation: read, double up, one write."""
        held = self._placement.get_allocations(consumer, global_request_id=rid)
        wanted = _double(held.allocations, request.allocations)
        self._placement.put_allocations(
            consumer,
            wanted,
            consumer_generation=generation,
            project_id=project_id,
            user_id=user_id,
            consumer_type=held.consumer_type,
            mappings=request.mappings or None,
            global_request_id=rid,
        )

    def _double_up(
        self,
        consumer: str,
        request: AllocationRequest,
        held: ConsumerAllocations,
        project_id: str,
        user_id: str,
        rid: str | None,
    ) -> None:
        try:
            self._placement.put_allocations(
                consumer,
                _double(held.allocations, request.allocations),
                consumer_generation=held.generation,
                project_id=project_id,
                user_id=user_id,
                consumer_type=held.consumer_type,
                mappings=request.mappings or None,
                global_request_id=rid,
            )
        except GenerationConflict as exc:
            if not exc.consumer_conflict:
                raise
            # It moved again since that read: recompute from a fresh one.
            self._placement.update_allocations(
                consumer,
                doubled_up(request.allocations),
                project_id=project_id,
                user_id=user_id,
                global_request_id=rid,
            )

    def put_allocations(self, context: Any, consumer_uuid: str, payload: Mapping[str, Any]) -> bool:
        """Write nova's ``PUT /allocations`` body at the generation it carries.

        :returns: True when written, False when Placement refused it for
            another reason than a consumer conflict (as nova's).
        :raises AllocationUpdateFailed: the consumer is no longer at the
            body's ``consumer_generation``.
        :raises PlacementAPIConnectFailure: Placement could not be reached.
        """
        rid = request_id(context)
        for attempt in range(1, _PUT_ATTEMPTS + 1):
            try:
                self._placement.put_allocations(
                    validate_uuid(consumer_uuid),
                    _resources(payload.get("allocations") or {}),
                    consumer_generation=payload.get("consumer_generation"),
                    project_id=payload.get("project_id"),  # type: ignore[arg-type]
                    user_id=payload.get("user_id"),  # type: ignore[arg-type]
                    consumer_type=payload.get("consumer_type"),
                    mappings=payload.get("mappings"),
                    global_request_id=rid,
                )
                return True
            except GenerationConflict as exc:
                if exc.consumer_conflict or exc.consumer_moved or attempt == _PUT_ATTEMPTS:
                    result: bool = answer("put_allocations", exc, consumer_uuid=consumer_uuid)
                    return result
                # The generation still held: Placement's own writers raced; same body again.
            except PlacementError as exc:
                LOG.warning("allocations of consumer %s refused: %s", consumer_uuid, exc)
                refused: bool = answer("put_allocations", exc, consumer_uuid=consumer_uuid)
                return refused
        return False  # pragma: no cover - the loop returns

    # -- moves --------------------------------------------------------------------
    def move_allocations(
        self, context: Any, source_consumer_uuid: str, target_consumer_uuid: str
    ) -> bool | None:
        """Move everything the source holds to the target in one ``POST /allocations``.

        As nova's: the target ends holding what the source held (whatever it
        held before), an empty source means the move already happened
        (True), and it costs nova's three requests. A conflict reads both
        again and moves what the source holds then.

        :raises AllocationMoveFailed: a consumer generation conflict.
        """
        rid = request_id(context)
        where = {"source_consumer": source_consumer_uuid, "target_consumer": target_consumer_uuid}
        try:
            self._placement.move_allocations(
                validate_uuid(source_consumer_uuid),
                validate_uuid(target_consumer_uuid, "target consumer uuid"),
                replace_target=True,
                global_request_id=rid,
            )
        except NothingToMove:
            return True
        except PlacementError as exc:
            result: bool | None = answer("move_allocations", exc, **where)
            return result
        return True

    # -- updates --------------------------------------------------------------------
    def _update(self, method: str, context: Any, consumer_uuid: str, mutate: Mutation) -> None:
        """nova's GET and PUT: one read-modify-write of an existing consumer, its owner kept."""
        try:
            self._placement.update_allocations(
                validate_uuid(consumer_uuid), mutate, global_request_id=request_id(context)
            )
        except PlacementError as exc:
            answer(method, exc, consumer_uuid=consumer_uuid)

    def add_resources_to_instance_allocation(
        self, context: Any, consumer_uuid: str, resources: Mapping[str, Any]
    ) -> None:
        """Add ``{rp: {"resources": {...}}}`` to what the consumer holds.

        :raises ConsumerAllocationRetrievalFailed: the consumer could not be read.
        :raises AllocationUpdateFailed: the consumer holds nothing, the
            resources do not fit, or races outlasted the policy.
        """
        if resources:
            mutate = add_allocations(_resources(resources))
            self._update("add_resources_to_instance_allocation", context, consumer_uuid, mutate)

    def remove_resources_from_instance_allocation(
        self, context: Any, consumer_uuid: str, resources: Mapping[str, Any]
    ) -> None:
        """Subtract ``{rp: {"resources": {...}}}`` from what the consumer holds.

        :raises ConsumerAllocationRetrievalFailed: the consumer could not be read.
        :raises AllocationUpdateFailed: it does not hold that much, or holds
            nothing; nothing is written.
        """
        if resources:
            mutate = subtract_allocations(_resources(resources))
            self._update(
                "remove_resources_from_instance_allocation", context, consumer_uuid, mutate
            )

    def remove_provider_tree_from_instance_allocation(
        self, context: Any, consumer_uuid: str, root_rp_uuid: str
    ) -> bool:
        """Drop every provider of ``root_rp_uuid``'s tree from the consumer's allocations.

        :returns: as nova's: False when the consumer holds nothing (or the
            write was refused), True otherwise (also when it held nothing in
            that tree).
        """
        rid = request_id(context)
        try:
            consumer = validate_uuid(consumer_uuid)
            current = self._placement.get_allocations(consumer, global_request_id=rid)
        except PlacementError as exc:
            answer(
                "remove_provider_tree_from_instance_allocation read",
                exc,
                consumer_uuid=consumer_uuid,
            )
            return False
        if not current.allocations:
            LOG.error("Expected to find current allocations for %s, but found none.", consumer)
            return False
        try:
            tree = [
                rp.uuid
                for rp in self._placement.providers.list_providers(
                    in_tree=root_rp_uuid, global_request_id=rid
                )
            ]
        except PlacementError as exc:
            answer("remove_provider_tree_from_instance_allocation tree", exc, rp_uuid=root_rp_uuid)
            return False
        if not set(tree) & set(current.allocations):
            return True
        try:
            self._placement.update_allocations(
                consumer, remove_providers(tree), start=current, global_request_id=rid
            )
        except PlacementError as exc:
            result: bool = answer(
                "remove_provider_tree_from_instance_allocation write",
                exc,
                consumer_uuid=consumer_uuid,
            )
            return result
        return True

    def delete_allocation_for_instance(
        self, context: Any, uuid: str, consumer_type: str = "instance", force: bool = False
    ) -> bool | None:
        """Remove every allocation of the consumer.

        Without ``force``: one read, then the consumer emptied at that read's
        generation (nova's ``GET`` and ``PUT``): allocations written after
        the read are never removed unseen, and are nova's
        ``AllocationDeleteFailed``. With ``force``: Placement's unguarded
        ``DELETE``.

        :returns: True when allocations were removed, False when it held none.
        :raises AllocationDeleteFailed: another writer changed the consumer
            since the read (without ``force``), or Placement refused.
        """
        rid = request_id(context)
        try:
            consumer = validate_uuid(uuid)
            if force:
                removed = self._placement.force_release(consumer, global_request_id=rid)
                if removed:
                    LOG.info("Deleted allocations for %s %s", consumer_type, uuid)
                return removed
            held = self._placement.get_allocations(consumer, global_request_id=rid)
            if not held.allocations:
                return False
            self._placement.put_allocations(
                consumer,
                {},
                consumer_generation=held.generation,
                project_id=held.project_id or "",
                user_id=held.user_id or "",
                consumer_type=held.consumer_type,
                global_request_id=rid,
            )
        except PlacementError as exc:
            result: bool | None = answer("delete_allocation_for_instance", exc, consumer_uuid=uuid)
            return result
        LOG.info("Deleted allocation for %s %s", consumer_type, uuid)
        return True
