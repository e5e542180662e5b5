"""Reshape: move inventories and allocations between providers of a tree, atomically.

``POST /reshaper`` (microversion 1.30+) replaces the inventories of some
providers and the allocations of some consumers in one transaction, guarded
by every provider generation and every consumer generation it carries. A
:class:`ReshapeCycle` reads all of them, lets the caller's ``compute``
describe the target from that state, and posts it; on
``placement.concurrent_update`` the next attempt re-reads everything and
recomputes, under the same :func:`~reportclient.retry.run_attempts` engine
as every other write.

``compute`` must describe the *target* (where each class and allocation
should be), not a delta: that makes the reshape idempotent, so after a lost
answer a re-read that already shows the target is success, and otherwise a
recomputed reshape is safe to send. A lost reshape carrying generations
that Placement still holds may still land; giving up then raises
:class:`OutcomeUnknown`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reportclient.errors import (
    GenerationConflict,
    InvalidInput,
    MicroversionUnsupported,
    OutcomeUnknown,
    PlacementError,
    PlacementUnavailable,
)
from reportclient.models import (
    ConsumerAllocations,
    is_valid_name,
    normalize_allocations,
    validate_uuid,
)
from reportclient.provider_cache import ProviderCache
from reportclient.provider_cycle import read_field
from reportclient.provider_models import (
    Inventory,
    ProviderInventories,
    ProviderWrite,
    inventories_from,
)
from reportclient.transport import CONSUMER_TYPE_VERSION, Microversion, Transport, format_version

__all__ = ["RESHAPER_VERSION", "Reshape", "ReshapeCycle", "ReshapeState"]

LOG = logging.getLogger("reportclient")

#: ``POST /reshaper`` exists.
RESHAPER_VERSION: Microversion = (1, 30)


@dataclass(frozen=True)
class ReshapeState:
    """What a reshape computes from: the providers' inventories and the consumers' allocations."""

    inventories: Mapping[str, ProviderInventories]
    allocations: Mapping[str, ConsumerAllocations]


@dataclass(frozen=True)
class Reshape:
    """The target: every named provider's inventories and every named consumer's allocations.

    A provider or consumer that ``compute`` leaves out is not touched.
    """

    inventories: Mapping[str, Mapping[str, Inventory]] = field(default_factory=dict)
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)


def _holds(state: ReshapeState, target: Reshape) -> bool:
    for rp, inventories in target.inventories.items():
        if dict(state.inventories[rp].inventories) != dict(inventories):
            return False
    for consumer, allocations in target.allocations.items():
        if dict(state.allocations[consumer].allocations) != normalize_allocations(allocations):
            return False
    return True


class ReshapeCycle:
    """The attempts of one reshape of the named providers and consumers."""

    def __init__(
        self,
        transport: Transport,
        cache: ProviderCache,
        providers: Iterable[str],
        consumers: Iterable[str],
        compute: Callable[[ReshapeState], Reshape],
        request_id: str | None = None,
    ) -> None:
        self._transport = transport
        self._cache = cache
        self._providers = sorted({validate_uuid(u, "provider") for u in providers})
        self._consumers = sorted({validate_uuid(c) for c in consumers})
        self._compute = compute
        self._request_id = request_id
        self._lost: PlacementUnavailable | None = None
        self._sent: dict[str, Any] | None = None
        self.pending: list[ProviderWrite] = []
        self.last_read: ReshapeState | None = None
        self.contended = False

    @property
    def subject(self) -> str:
        """What this operation writes, for logs."""
        return f"reshape of providers {', '.join(self._providers)}"

    def attempt(self, number: int) -> Reshape:
        """Read everything, compute the target, post it; return the target Placement now holds."""
        if not self._transport.supports(RESHAPER_VERSION):
            raise MicroversionUnsupported(
                f"POST /reshaper needs microversion {format_version(RESHAPER_VERSION)}"
            )
        state = self._read()
        if self.pending:
            self._settle(state)
        target = self._checked(self._compute(state))
        if _holds(state, target):
            self.pending.clear()
            return target
        body = self._body(state, target)
        try:
            self._transport.request(
                "POST", "/reshaper", json=body, global_request_id=self._request_id
            )
        except GenerationConflict as exc:
            self.contended = True
            exc.attempts = number
            raise
        except PlacementUnavailable as exc:
            if exc.outcome_unknown:
                self._lost = exc
                self.pending = [
                    ProviderWrite(rp, "reshaper", inv["resource_provider_generation"], body)
                    for rp, inv in body["inventories"].items()
                ]
                self.contended = False
            raise
        self.pending.clear()
        for rp in self._providers:
            self._cache.discard(rp)
        return target

    def _settle(self, state: ReshapeState) -> None:
        """A lost reshape can land only while every generation it carried still holds."""
        still = all(
            state.inventories[w.uuid].generation == w.generation
            for w in self.pending
            if w.uuid in state.inventories
        )
        if not still:
            self.pending.clear()  # a generation moved on: it can never land now

    def still_pending(self, exc: PlacementError) -> OutcomeUnknown:
        """The error for giving up while a lost reshape may still land."""
        return OutcomeUnknown(
            f"gave up ({exc.message}) while a reshape whose answer was lost may still land",
            sent=self.pending[-1],
            state=self.last_read,
            lost=self._lost,
            method="POST",
            url="/reshaper",
        )

    def _read(self) -> ReshapeState:
        inventories = {
            rp: read_field(self._transport, ProviderInventories, rp, self._request_id)
            for rp in self._providers
        }
        allocations = {}
        for consumer in self._consumers:
            reply = self._transport.request(
                "GET",
                f"/allocations/{consumer}",
                consumer_uuid=consumer,
                global_request_id=self._request_id,
            )
            allocations[consumer] = ConsumerAllocations.from_json(consumer, reply.body or {})
        self.last_read = ReshapeState(inventories, allocations)
        return self.last_read

    def _checked(self, target: object) -> Reshape:
        """The target with typed inventories, naming only what was read.

        :raises InvalidInput: ``compute`` returned something else; nothing is sent.
        """
        if not isinstance(target, Reshape):
            got = "None" if target is None else type(target).__name__
            raise InvalidInput(f"reshape's compute returned {got}, expected a Reshape")
        for member in ("inventories", "allocations"):
            value = getattr(target, member)
            if not isinstance(value, Mapping):
                got = "None" if value is None else type(value).__name__
                raise InvalidInput(
                    f"reshape's compute returned a Reshape whose {member} is {got}, "
                    "expected a mapping"
                )
        unknown = (set(target.inventories) - set(self._providers)) | (
            set(target.allocations) - set(self._consumers)
        )
        if unknown:
            raise InvalidInput(f"compute named providers or consumers not read: {sorted(unknown)}")
        return Reshape(
            {
                rp: inventories_from(invs, f"reshape's compute (inventories of provider {rp})")
                for rp, invs in target.inventories.items()
            },
            {c: normalize_allocations(a) for c, a in target.allocations.items()},
        )

    def _body(self, state: ReshapeState, target: Reshape) -> dict[str, Any]:
        send_type = self._transport.supports(CONSUMER_TYPE_VERSION)
        inventories = {
            rp: state.inventories[rp].body(invs) for rp, invs in target.inventories.items()
        }
        allocations: dict[str, Any] = {}
        for consumer, wanted in target.allocations.items():
            current = state.allocations[consumer]
            if not current.exists:
                raise InvalidInput(f"consumer {consumer} does not exist; a reshape only moves")
            entry: dict[str, Any] = {
                "allocations": {
                    rp: {"resources": dict(res)}
                    for rp, res in normalize_allocations(wanted).items()
                },
                "consumer_generation": current.generation,
                "project_id": current.project_id,
                "user_id": current.user_id,
            }
            if send_type:
                ctype = current.consumer_type
                entry["consumer_type"] = ctype if ctype and is_valid_name(ctype) else "INSTANCE"
            allocations[consumer] = entry
        return {"inventories": inventories, "allocations": allocations}
