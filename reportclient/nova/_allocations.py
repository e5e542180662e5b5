"""The consumer calls of nova's ``SchedulerReportClient``, on reportclient's engine.

nova's signatures and return values are kept; the behaviour differs where
nova's is the bug (doc/source/nova_adapter.rst lists each difference):

- ``claim_resources`` re-reads the consumer on every attempt and computes
  the doubled-up move allocation from that read, so a consumer emptied
  between nova's read and its write (the shelve-offload / unshelve race) is
  claimed afresh with a ``null`` generation instead of failing with a
  consumer generation conflict.
- ``put_allocations`` sends the caller's body once per attempt and sends it
  again only when Placement's answer proves the consumer generation still
  held (a race between writers inside Placement); a consumer that moved on
  is the caller's ``AllocationUpdateFailed`` at once, never a replay of a
  body computed from a stale read.
- Every update (add, remove, remove a tree, delete) is a read-compute-write
  run again from a fresh read after a conflict, never a replay.
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
from reportclient.errors import (
    AllocationsNotHeld,
    CapacityExceeded,
    ConsumerChanged,
    GenerationConflict,
    NothingToMove,
    PlacementError,
)
from reportclient.nova._common import LOG, Base, ProviderAllocInfo, request_id
from reportclient.nova._errors import fail

__all__ = ["AllocationCalls", "doubled_up"]

#: The microversion nova reads a consumer's allocations at (nova's CONSUMER_GENERATION_VERSION).
NOVA_CONSUMER_VERSION = "1.28"
# nova's put_allocations sends a body up to four times (its @retries).
_PUT_ATTEMPTS = 4


def _resources(allocations: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """``{rp: {"resources": {...}}}`` (nova's shape) as ``{rp: {...}}``."""
    return {rp: dict(entry["resources"]) for rp, entry in allocations.items()}


def _nova_shape(allocations: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    return {rp: {"resources": dict(res)} for rp, res in allocations.items()}


def doubled_up(destination: Mapping[str, Mapping[str, int]]) -> Mutation:
    """nova's move claim, from the consumer's current state: keep it, add new providers.

    A provider the consumer already holds (a shared disk provider) keeps its
    current amounts, as nova's ``_move_operation_alloc_request`` does; an
    empty consumer simply gets ``destination``. Applying it to its own
    result changes nothing, so a lost answer can be settled by content.
    """
    wanted = {rp: dict(res) for rp, res in destination.items()}

    def compute(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
        out = {rp: dict(res) for rp, res in current.allocations.items()}
        for rp, res in wanted.items():
            out.setdefault(rp, dict(res))
        return out

    return Mutation(compute, idempotent=True, description="nova's doubled-up move claim")


class AllocationCalls(Base):
    """Claims, moves, updates and deletes of consumers' allocations, as nova calls them."""

    # -- reads ------------------------------------------------------------------
    def get_allocs_for_consumer(self, context: Any, consumer: str) -> dict[str, Any]:
        """``GET /allocations/{consumer}``'s body, as nova returns it.

        :raises ConsumerAllocationRetrievalFailed: Placement answered with an error.
        """
        try:
            # At nova's microversion, so the body has nova's keys (no consumer_type).
            answer = self._placement.request(
                "GET",
                routes.consumer(consumer),
                microversion=NOVA_CONSUMER_VERSION,
                global_request_id=request_id(context),
            )
        except PlacementError as exc:
            fail("ConsumerAllocationRetrievalFailed", exc, consumer_uuid=consumer, error=str(exc))
        return dict(answer.body or {})

    def get_allocations_for_consumer(self, context: Any, consumer: str) -> dict[str, Any]:
        """The consumer's ``allocations`` mapping (``{rp: {"resources": ...}}``); {} when none."""
        return dict(self.get_allocs_for_consumer(context, consumer).get("allocations") or {})

    def get_allocations_for_resource_provider(self, context: Any, rp_uuid: str) -> Any:
        """``ProviderAllocInfo(allocations={consumer: {"resources": ...}})`` for one provider.

        :raises ResourceProviderAllocationRetrievalFailed: Placement answered with an error.
        """
        try:
            answer = self._placement.request(
                "GET",
                routes.provider_allocations(rp_uuid),
                global_request_id=request_id(context),
            )
        except PlacementError as exc:
            fail("ResourceProviderAllocationRetrievalFailed", exc, rp_uuid=rp_uuid, error=str(exc))
        return ProviderAllocInfo(allocations=dict((answer.body or {}).get("allocations") or {}))

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
    ) -> bool:
        """Claim ``alloc_request`` for the consumer, doubling up when it already holds some.

        ``allocation_request_version`` and ``consumer_generation`` are
        accepted for nova's signature; the consumer's generation is read
        (again after every conflict) rather than trusted.

        :returns: True when the claim landed; False when the resources no
            longer fit or the writers' races outlasted the retry policy.
        :raises AllocationUpdateFailed: the consumer kept changing under the claim.
        """
        del allocation_request_version, consumer_generation  # read, never trusted
        rid = request_id(context)
        request = AllocationRequest.from_json(alloc_request)
        try:
            held = self._placement.get_allocations(consumer_uuid, global_request_id=rid)
            if not held.allocations and self._claim_new(
                consumer_uuid, request, project_id, user_id, rid
            ):
                return True
            # It holds allocations: nova's move (evacuate) claim doubles them
            # up, computed from every attempt's fresh read.
            self._placement.update_allocations(
                consumer_uuid,
                doubled_up(request.allocations),
                project_id=project_id,
                user_id=user_id,
                global_request_id=rid,
            )
        except CapacityExceeded as exc:
            LOG.warning("claim for consumer %s does not fit: %s", consumer_uuid, exc)
            return False
        except GenerationConflict as exc:
            if exc.consumer_conflict:
                fail("AllocationUpdateFailed", exc, consumer_uuid=consumer_uuid, error=str(exc))
            LOG.warning("claim for consumer %s lost every race: %s", consumer_uuid, exc)
            return False
        return True

    def _claim_new(
        self,
        consumer_uuid: str,
        request: AllocationRequest,
        project_id: str,
        user_id: str,
        rid: str | None,
    ) -> bool:
        """Claim a consumer read as empty, mappings included; False if it now holds some."""
        try:
            self._placement.claim(
                consumer_uuid,
                request,
                project_id=project_id,
                user_id=user_id,
                global_request_id=rid,
            )
        except ConsumerChanged:
            return False  # another writer came in since the read: double up from its state
        return True

    def put_allocations(self, context: Any, consumer_uuid: str, payload: Mapping[str, Any]) -> bool:
        """Write nova's ``PUT /allocations`` body at the generation it carries.

        :returns: True when written, False when Placement refused it for
            another reason than a conflict (capacity, a missing provider).
        :raises AllocationUpdateFailed: the consumer is no longer at the
            body's ``consumer_generation``.
        """
        rid = request_id(context)
        allocations = _resources(payload.get("allocations") or {})
        for attempt in range(1, _PUT_ATTEMPTS + 1):
            try:
                self._placement.put_allocations(
                    consumer_uuid,
                    allocations,
                    consumer_generation=payload.get("consumer_generation"),
                    project_id=payload["project_id"],
                    user_id=payload["user_id"],
                    consumer_type=payload.get("consumer_type"),
                    mappings=payload.get("mappings"),
                    global_request_id=rid,
                )
                return True
            except GenerationConflict as exc:
                if exc.consumer_conflict or exc.consumer_moved or attempt == _PUT_ATTEMPTS:
                    fail("AllocationUpdateFailed", exc, consumer_uuid=consumer_uuid, error=str(exc))
                # The generation still held: Placement's own writers raced; same body again.
            except (CapacityExceeded, PlacementError) as exc:
                if exc.status is None:
                    fail("PlacementAPIConnectFailure", exc)
                LOG.warning("allocations of consumer %s refused: %s", consumer_uuid, exc)
                return False
        return False  # pragma: no cover - the loop returns or raises

    # -- moves --------------------------------------------------------------------
    def move_allocations(
        self, context: Any, source_consumer_uuid: str, target_consumer_uuid: str
    ) -> bool:
        """Move everything the source holds to the target in one ``POST /allocations``.

        As nova, an empty source means the move already happened (True), and
        a target holding allocations has them replaced by the source's.

        :raises AllocationMoveFailed: a consumer kept changing under the move.
        """
        rid = request_id(context)
        try:
            target = self._placement.get_allocations(target_consumer_uuid, global_request_id=rid)
            if not target.allocations:
                self._placement.move_allocations(
                    source_consumer_uuid, target_consumer_uuid, global_request_id=rid
                )
                return True
            source = self._placement.get_allocations(source_consumer_uuid, global_request_id=rid)
            if not source.allocations:
                return True
            LOG.debug("overwriting the allocations of consumer %s", target_consumer_uuid)
            self._placement.write_many(
                {source_consumer_uuid: {}, target_consumer_uuid: dict(source.allocations)},
                project_id=source.project_id or "",
                user_id=source.user_id or "",
                overwrite=True,
                global_request_id=rid,
            )
        except NothingToMove:
            return True
        except (ConsumerChanged, GenerationConflict) as exc:
            fail(
                "AllocationMoveFailed",
                exc,
                source_consumer=source_consumer_uuid,
                target_consumer=target_consumer_uuid,
                error=str(exc),
            )
        except CapacityExceeded as exc:
            LOG.warning("move to consumer %s does not fit: %s", target_consumer_uuid, exc)
            return False
        return True

    # -- updates --------------------------------------------------------------------
    def _owner(self, consumer_uuid: str, rid: str | None) -> ConsumerAllocations:
        return self._placement.get_allocations(consumer_uuid, global_request_id=rid)

    def _update(self, context: Any, consumer_uuid: str, mutate: Mutation) -> None:
        rid = request_id(context)
        current = self._owner(consumer_uuid, rid)
        try:
            self._placement.update_allocations(
                consumer_uuid,
                mutate,
                project_id=current.project_id or "",
                user_id=current.user_id or "",
                global_request_id=rid,
            )
        except (AllocationsNotHeld, GenerationConflict, CapacityExceeded) as exc:
            fail("AllocationUpdateFailed", exc, consumer_uuid=consumer_uuid, error=str(exc))

    def add_resources_to_instance_allocation(
        self, context: Any, consumer_uuid: str, resources: Mapping[str, Any]
    ) -> None:
        """Add ``{rp: {"resources": {...}}}`` to what the consumer holds.

        :raises AllocationUpdateFailed: the resources do not fit or races outlasted the policy.
        """
        if resources:
            self._update(context, consumer_uuid, add_allocations(_resources(resources)))

    def remove_resources_from_instance_allocation(
        self, context: Any, consumer_uuid: str, resources: Mapping[str, Any]
    ) -> None:
        """Subtract ``{rp: {"resources": {...}}}`` from what the consumer holds.

        :raises AllocationUpdateFailed: it does not hold that much; nothing is written.
        """
        if resources:
            self._update(context, consumer_uuid, subtract_allocations(_resources(resources)))

    def remove_provider_tree_from_instance_allocation(
        self, context: Any, consumer_uuid: str, root_rp_uuid: str
    ) -> bool:
        """Drop every provider of ``root_rp_uuid``'s tree from the consumer's allocations.

        :returns: True (also when the consumer held nothing there).
        """
        rid = request_id(context)
        tree = [
            rp.uuid
            for rp in self._placement.providers.list_providers(
                in_tree=root_rp_uuid, global_request_id=rid
            )
        ]
        if not self._owner(consumer_uuid, rid).allocations or not tree:
            return True
        self._update(context, consumer_uuid, remove_providers(tree))
        return True

    def delete_allocation_for_instance(
        self, context: Any, uuid: str, consumer_type: str = "instance", force: bool = False
    ) -> bool:
        """Remove every allocation of the consumer.

        Without ``force`` the removal is guarded by the consumer generation
        and recovers from races, but refuses to remove allocations written
        after it looked; ``force`` is Placement's unguarded ``DELETE``.

        :returns: True when allocations were removed, False when it held none.
        :raises AllocationDeleteFailed: without ``force``, another writer
            changed the consumer's allocations meanwhile; nothing was removed.
        """
        rid = request_id(context)
        try:
            if force:
                return self._placement.force_release(uuid, global_request_id=rid)
            if not self._owner(uuid, rid).allocations:
                return False
            self._placement.release(uuid, global_request_id=rid)
        except (ConsumerChanged, GenerationConflict) as exc:
            fail("AllocationDeleteFailed", exc, consumer_uuid=uuid, error=str(exc))
        LOG.debug("deleted the allocations of %s %s", consumer_type, uuid)
        return True
