"""The gateway's allocation routes: one consumer, a batch, a reshape.

Every answer with a state is stored in the consumer cache under the ticket
taken before its request was sent; a conflict or a lost answer forgets the
consumer (:meth:`.sending.Sending._forgetting`). Placement answers an
allocation write with 204 and no body, so the state it made is computed by
:func:`written_state`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reportclient._gateway import routes
from reportclient._gateway.sending import Sending
from reportclient._model.consumers import AllocationWrite, ConsumerAllocations
from reportclient._model.microversions import LEAN_VERSION, MAPPINGS_VERSION, Microversion
from reportclient.errors import PlacementError

__all__ = ["ConsumerRoutes", "written_state"]

#: Placement's 404 detail for a DELETE of a consumer that holds nothing.
_NO_ALLOCATIONS = "No allocations for consumer"


def _nothing_to_delete(exc: PlacementError) -> bool:
    """Placement's 404 for deleting a consumer that holds nothing.

    Told apart by its wording (the 404 has no code): any other 404, a
    wrong endpoint say, is an error, not an empty consumer.
    """
    return exc.status == 404 and _NO_ALLOCATIONS in (exc.detail or "")


def written_state(
    write: AllocationWrite, send_type: bool, kept_type: str | None
) -> ConsumerAllocations:
    """The state an acknowledged allocation write made.

    Placement answers 204 without a body; its generation rule is new
    consumer -> 1, every write +1, and an empty write deletes the consumer.
    A wrong guess costs a retry.
    """
    if not write.allocations:
        return ConsumerAllocations.missing(write.consumer_uuid)
    return ConsumerAllocations(
        write.consumer_uuid,
        {rp: dict(res) for rp, res in write.allocations.items()},
        (write.consumer_generation or 0) + 1,
        write.project_id,
        write.user_id,
        write.consumer_type if send_type and write.consumer_type else kept_type,
    )


def _allocation_body(write: AllocationWrite, send_type: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "allocations": {rp: {"resources": dict(res)} for rp, res in write.allocations.items()},
        "consumer_generation": write.consumer_generation,
        "project_id": write.project_id,
        "user_id": write.user_id,
    }
    if send_type and write.consumer_type is not None:
        body["consumer_type"] = write.consumer_type
    return body


class ConsumerRoutes(Sending):
    """``/allocations/{consumer}``, ``POST /allocations`` and ``POST /reshaper``."""

    def read_consumer(
        self, consumer: str, request_id: str | None, at_most: Microversion | None = None
    ) -> ConsumerAllocations:
        """``GET /allocations/{consumer}``, stored by the ordering rule."""
        ticket = self._consumers.ticket()
        reply = self._wire.request(
            "GET",
            routes.consumer(consumer),
            consumer_uuid=consumer,
            global_request_id=request_id,
            at_most=at_most,
        )
        state = ConsumerAllocations.from_json(consumer, reply.body or {})
        self._consumers.put(state, sent=ticket)
        return state

    def put_consumer(
        self,
        write: AllocationWrite,
        *,
        send_type: bool,
        kept_type: str | None,
        mappings: Mapping[str, Sequence[str]] | None,
        request_id: str | None,
    ) -> ConsumerAllocations:
        """``PUT /allocations/{consumer}`` once; the state it made, stored.

        A write without a type goes at ``LEAN_VERSION`` so Placement keeps
        the consumer's own type. A conflict or a lost answer forgets the
        consumer; a refusal changes nothing.
        """
        body = _allocation_body(write, send_type)
        if mappings and write.allocations and self._wire.supports(MAPPINGS_VERSION):
            body["mappings"] = {group: list(rps) for group, rps in mappings.items()}
        ticket = self._consumers.ticket()
        with self._forgetting(consumers=(write.consumer_uuid,)):
            self._wire.request(
                "PUT",
                routes.consumer(write.consumer_uuid),
                json=body,
                consumer_uuid=write.consumer_uuid,
                global_request_id=request_id,
                at_most=(
                    None
                    if "consumer_type" in body
                    else MAPPINGS_VERSION
                    if "mappings" in body
                    else LEAN_VERSION
                ),
            )
        new = written_state(write, send_type, kept_type)
        self._consumers.put(new, sent=ticket, written=True)
        return new

    def post_allocations(
        self,
        writes: Sequence[tuple[AllocationWrite, str | None]],
        consumers: Iterable[str],
        *,
        send_type: bool,
        request_id: str | None,
    ) -> dict[str, ConsumerAllocations]:
        """``POST /allocations``, all or nothing; every consumer's state afterwards, stored.

        :param writes: each write with the type its consumer keeps when none is sent.
        :param consumers: every consumer of the operation; one without a write
            is missing afterwards (it had nothing and was left out).
        """
        named = list(consumers)
        body = {w.consumer_uuid: _allocation_body(w, send_type) for w, _kept in writes}
        ticket = self._consumers.ticket()
        with self._forgetting(consumers=named):
            self._wire.request("POST", routes.ALLOCATIONS, json=body, global_request_id=request_id)
        by_consumer = {w.consumer_uuid: (w, kept) for w, kept in writes}
        result = {}
        for consumer in named:
            sent = by_consumer.get(consumer)
            if sent is None:
                new = ConsumerAllocations.missing(consumer)
            else:
                # A POST writes at 1.28+ without a type unless one is sent.
                new = written_state(sent[0], send_type, sent[1] if send_type else None)
            self._consumers.put(new, sent=ticket, written=True)
            result[consumer] = new
        return result

    def delete_consumer(self, consumer: str, request_id: str | None) -> bool:
        """``DELETE /allocations/{consumer}``, unguarded; whether it held allocations.

        Stored as missing once answered (204, or Placement's 404 for a
        consumer holding nothing); forgotten when the answer is lost.
        """
        ticket = self._consumers.ticket()
        try:
            with self._forgetting(consumers=(consumer,)):
                self._wire.request(
                    "DELETE",
                    routes.consumer(consumer),
                    consumer_uuid=consumer,
                    global_request_id=request_id,
                )
        except PlacementError as exc:
            if not _nothing_to_delete(exc):
                raise
            deleted = False
        else:
            deleted = True
        self._consumers.put(ConsumerAllocations.missing(consumer), sent=ticket, written=True)
        return deleted

    def reshape(
        self,
        body: Mapping[str, Any],
        writes: Sequence[tuple[AllocationWrite, str | None]],
        providers: Iterable[str],
        consumers: Iterable[str],
        *,
        send_type: bool,
        request_id: str | None,
    ) -> None:
        """``POST /reshaper``; the consumers' new states stored, the providers' fields forgotten."""
        named_rps, named_consumers = list(providers), list(consumers)
        ticket = self._consumers.ticket()
        try:
            with self._forgetting(consumers=named_consumers):
                self._wire.request(
                    "POST", routes.RESHAPER, json=dict(body), global_request_id=request_id
                )
        finally:
            # Placement answers the reshape without the new generations.
            for rp in named_rps:
                self._providers.forget(rp)
        for write, kept in writes:
            self._consumers.put(written_state(write, send_type, kept), sent=ticket, written=True)
