"""neutron-lib's allocation calls: a port's QoS change on the library's consumer engine.

``update_qos_allocation(consumer_uuid, alloc_diff)`` is neutron's QoS plugin
changing a bound port's minimum bandwidth or packet rate on the instance
nova allocated for. neutron-lib reads the consumer, adds the signed amounts
and writes the body back, ten times at most and without a pause, then
raises ``PlacementAllocationGenerationConflict``, which the QoS plugin does
not catch: ten writes by nova in between and the port's new bandwidth is
never allocated. Here it is :meth:`reportclient.PlacementClient.update_allocations`:
each attempt re-reads the consumer and recomputes neutron's diff from what
it read, the write carries that read's generation, and the client's retry
policy (backoff between conflicts, a deadline, the retry budget) decides
when to give up. What nova wrote in between is kept; a consumer deleted in
between stays deleted (``PlacementAllocationRemoved``), as a write never
creates one; a provider over capacity is keystoneauth's ``Conflict`` as
neutron-lib raises it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from reportclient._gateway import routes
from reportclient._model.consumers import ConsumerAllocations
from reportclient._model.validation import is_uuid
from reportclient.errors import InvalidInput, PlacementError
from reportclient.neutron._common import CONSUMER_GENERATIONS, Base, text
from reportclient.neutron._errors import answer, fail

__all__ = ["AllocationCalls", "NotAllocated", "apply_diff"]


class NotAllocated(InvalidInput):
    """``alloc_diff`` names a provider the consumer holds nothing on; nothing was written."""

    def __init__(self, message: str, *, provider: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.provider = provider


def apply_diff(
    held: Mapping[str, Mapping[str, int]], alloc_diff: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    """neutron-lib's arithmetic: each amount plus its signed diff; 0 or less drops the class.

    A provider left with no class is dropped (an empty result deletes the
    consumer, as neutron-lib's write does).

    :raises NotAllocated: a provider in ``alloc_diff`` the consumer holds nothing on.
    """
    out = {rp: dict(resources) for rp, resources in held.items()}
    for rp, diff in alloc_diff.items():
        if rp not in out:
            raise NotAllocated(f"the consumer holds nothing on provider {rp}", provider=rp)
        for rc, value in diff.items():
            new = out[rp].get(rc, 0) + value
            if new > 0:
                out[rp][rc] = new
            else:
                out[rp].pop(rc, None)
    return {rp: resources for rp, resources in out.items() if resources}


class AllocationCalls(Base):
    """A consumer's allocations (neutron-lib's methods)."""

    def list_allocations(self, consumer_uuid: Any) -> Any:
        """``GET /allocations/{consumer}``: the body at neutron's version."""
        consumer = text(consumer_uuid, "consumer_uuid")
        return self._raw("GET", routes.consumer(consumer), what="list_allocations").body

    def update_allocation(self, consumer_uuid: Any, allocations: Mapping[str, Any]) -> None:
        """``PUT /allocations/{consumer}`` with neutron's body, sent once (its compare-and-swap).

        Not under neutron-lib's decorator: any 4xx is keystoneauth's exception.
        """
        consumer = text(consumer_uuid, "consumer_uuid")
        self._raw("PUT", routes.consumer(consumer), allocations, what="update_allocation")

    def update_qos_allocation(
        self, consumer_uuid: Any, alloc_diff: Mapping[Any, Mapping[str, int]]
    ) -> None:
        """Add ``alloc_diff``'s signed amounts to what the consumer holds (module docstring).

        :raises PlacementAllocationRemoved: the consumer holds nothing.
        :raises PlacementAllocationRpNotExists: it holds nothing on a provider of the diff.
        :raises PlacementAllocationGenerationConflict: conflicts outlasted the retry policy.
        :raises keystoneauth1.exceptions.Conflict: a provider lacks the capacity.
        """
        consumer = text(consumer_uuid, "consumer_uuid")
        diff = {text(rp, "resource provider"): dict(d) for rp, d in alloc_diff.items()}
        if not is_uuid(consumer):
            # Placement reads a malformed consumer as one holding nothing, and
            # neutron-lib says so; the library would refuse it as input.
            gone = InvalidInput(f"no consumer can be {consumer!r}", consumer_uuid=consumer)
            fail("PlacementAllocationRemoved", gone, consumer=consumer)
        if self._version < CONSUMER_GENERATIONS:
            self._qos_once(consumer, diff)
            return

        def mutate(current: ConsumerAllocations) -> dict[str, dict[str, int]]:
            return apply_diff(current.allocations, diff)

        placement = self._built()
        try:
            placement.update_allocations(consumer, mutate)
        except NotAllocated as exc:
            _not_held(exc, consumer)
        except PlacementError as exc:
            answer("update_qos_allocation", exc, consumer=consumer)

    def _qos_once(self, consumer: str, diff: dict[str, dict[str, int]]) -> None:
        """Below 1.28 there is no consumer generation to guard with: one read, one write."""
        body = self.list_allocations(consumer)
        if not body.get("allocations"):
            fail(
                "PlacementAllocationRemoved",
                InvalidInput("the consumer holds nothing", consumer_uuid=consumer),
                consumer=consumer,
            )
        held = {rp: a.get("resources", {}) for rp, a in body["allocations"].items()}
        try:
            new = apply_diff(held, diff)
        except NotAllocated as exc:
            _not_held(exc, consumer)
        body["allocations"] = {rp: {"resources": r} for rp, r in new.items()}
        self.update_allocation(consumer, body)


def _not_held(exc: NotAllocated, consumer: str) -> NoReturn:
    """neutron-lib's answer to a diff naming a provider the consumer holds nothing on."""
    fail("PlacementAllocationRpNotExists", exc, resource_provider=exc.provider, consumer=consumer)
