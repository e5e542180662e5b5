"""A reshape (``POST /reshaper``) on the attempt skeleton.

Every attempt reads the named providers' inventories and consumers'
allocations, lets the caller's ``compute`` describe the target from them,
and posts it carrying every generation it read; a conflict re-reads
everything and recomputes. A lost answer is judged by the fate rule, subject
by subject (each provider's inventories and each consumer's allocations),
and combined: the reshape lands whole or not at all. Consumers' new states
go into the client's consumer cache like any other allocation write's, so
the same client's next claim of a reshaped consumer knows what it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from reportclient._engine.consumer_write import consumer_evidence
from reportclient._engine.contention import ContentionMemory
from reportclient._engine.fate import Evidence
from reportclient._engine.guarded_write import Done, GuardedWrite
from reportclient._gateway.gateway import Gateway
from reportclient._model.consumers import AllocationWrite
from reportclient._model.microversions import CONSUMER_TYPE_VERSION, RESHAPER_VERSION
from reportclient._model.providers import ProviderInventories, ProviderWrite
from reportclient._model.reshape import Reshape, ReshapeState, checked_target, target_holds
from reportclient._model.validation import is_valid_name, validate_uuid
from reportclient.errors import InvalidInput, MicroversionUnsupported, OutcomeUnknown

__all__ = ["ReshapeWrite"]


@dataclass(frozen=True, slots=True)
class ReshapeSent:
    """A reshape as sent: its body, the state it was computed from, and its target."""

    body: dict[str, Any]
    premise: ReshapeState
    target: Reshape
    writes: tuple[AllocationWrite, ...]


class ReshapeWrite(GuardedWrite[ReshapeState, ReshapeSent, Reshape]):
    """The attempts of one reshape of the named providers and consumers."""

    def __init__(
        self,
        gateway: Gateway,
        providers: Iterable[str],
        consumers: Iterable[str],
        compute: Callable[[ReshapeState], Reshape],
        request_id: str | None = None,
        *,
        memory: ContentionMemory | None = None,
    ) -> None:
        super().__init__(idempotent=True, memory=memory)  # a target, not a delta
        self._gateway = gateway
        self._providers = sorted({validate_uuid(u, "provider") for u in providers})
        self._consumers = sorted({validate_uuid(c) for c in consumers})
        self._compute = compute
        self._request_id = request_id

    @property
    def subject(self) -> str:
        """What this operation writes, for logs."""
        return f"reshape of providers {', '.join(self._providers)}"

    def read(self) -> ReshapeState:
        """Read every named provider's inventories and consumer's allocations."""
        if not self._gateway.supports(RESHAPER_VERSION):
            raise MicroversionUnsupported(
                "POST /reshaper needs microversion {}.{}".format(*RESHAPER_VERSION)
            )
        gateway, request_id = self._gateway, self._request_id
        inventories = {
            rp: gateway.read_field(ProviderInventories, rp, request_id) for rp in self._providers
        }
        allocations = {c: gateway.read_consumer(c, request_id) for c in self._consumers}
        return ReshapeState(inventories, allocations)

    def plan(self, state: ReshapeState, fresh: bool) -> ReshapeSent | Done[Reshape]:
        """The reshape to post from ``state``, or the target when Placement already holds it."""
        target = checked_target(self._compute(state), self._providers, self._consumers)
        if target_holds(state, target):
            return Done(target)
        send_type = self._gateway.supports(CONSUMER_TYPE_VERSION)
        inventories = {
            rp: state.inventories[rp].body(invs) for rp, invs in target.inventories.items()
        }
        allocations: dict[str, Any] = {}
        writes = []
        for consumer, wanted in target.allocations.items():
            current = state.allocations[consumer]
            if not current.exists or current.project_id is None or current.user_id is None:
                raise InvalidInput(f"consumer {consumer} does not exist; a reshape only moves")
            ctype = current.consumer_type
            ctype = ctype if ctype and is_valid_name(ctype) else "INSTANCE"
            write = AllocationWrite(
                consumer,
                {rp: dict(res) for rp, res in wanted.items()},
                current.generation,
                current.project_id,
                current.user_id,
                ctype if send_type else None,
            )
            writes.append(write)
            entry: dict[str, Any] = {
                "allocations": {rp: {"resources": dict(res)} for rp, res in wanted.items()},
                "consumer_generation": current.generation,
                "project_id": current.project_id,
                "user_id": current.user_id,
            }
            if send_type:
                entry["consumer_type"] = ctype
            allocations[consumer] = entry
        body = {"inventories": inventories, "allocations": allocations}
        return ReshapeSent(body, state, target, tuple(writes))

    def send(self, sent: ReshapeSent) -> Reshape:
        """POST the reshape; the target, now held."""
        self._gateway.reshape(
            sent.body,
            [(w, sent.premise.allocations[w.consumer_uuid].consumer_type) for w in sent.writes],
            self._providers,
            self._consumers,
            send_type=self._gateway.supports(CONSUMER_TYPE_VERSION),
            request_id=self._request_id,
        )
        return sent.target

    def forget(self) -> None:
        """A reshape of ours may still land: every provider and consumer it names is in doubt."""
        for rp in self._providers:
            self._gateway.forget_field(rp)
        for consumer in self._consumers:
            self._gateway.forget_consumer(consumer)

    def evidence(self, sent: ReshapeSent, state: ReshapeState) -> Iterator[Evidence]:
        """Each provider's inventories and each consumer's allocations, for the fate rule."""
        for rp, asked in sent.target.inventories.items():
            before, now = sent.premise.inventories[rp], state.inventories[rp]
            yield Evidence(
                carried=before.generation,
                seen=now.generation,
                as_premised=now.holds(before.value),
                as_written=now.holds(dict(asked)),
            )
        for write in sent.writes:
            premise = sent.premise.allocations[write.consumer_uuid].allocations
            yield consumer_evidence(write, premise, state.allocations[write.consumer_uuid])

    def holds(self, sent: ReshapeSent, state: ReshapeState, open_write: bool) -> Reshape | None:
        """The target, if Placement already holds it."""
        return sent.target if target_holds(state, sent.target) else None

    def unknown(self, sent: ReshapeSent, state: ReshapeState | None, why: str) -> OutcomeUnknown:
        """The error for ``sent``, whose fate ``state`` (None: unread) cannot settle."""
        lost = self.lost
        inventories = sent.body["inventories"]
        first = next(iter(inventories), "")
        generation = inventories[first]["resource_provider_generation"] if first else -1
        return OutcomeUnknown(
            f"{why}a reshape whose answer was lost may or may not have landed "
            f"({lost.message if lost else 'no answer'}); nothing is written again",
            sent=ProviderWrite(first, "reshaper", generation, sent.body),
            state=state,
            lost=lost,
            method="POST",
            url=lost.url if lost is not None else None,
        )
