"""One change to one provider field (inventories, traits or aggregates), on the attempt skeleton.

A provider's inventories, traits and aggregates each have their own route
but share one generation, so a field write reads exactly the field it writes
(the read answers with the generation), computes the new value from a copy
of what it read, and writes it back carrying that generation. On
``placement.concurrent_update`` the next attempt re-reads and recomputes:
whatever another writer changed (another resource class, another trait) is
in the re-read and survives, because ``compute`` only changes what the
caller asked for.

A lost answer is judged by the same fate rule as consumers': the field at
the carried generation must still hold what the write was computed from
(a provider deleted and re-created under its uuid restarts at generation 0
and may climb back to the same number with other content), and a missing
provider proves nothing. Every comparison of a field goes through its
``holds``, which compares inventories as Placement stores them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from reportclient._engine.contention import ContentionMemory
from reportclient._engine.fate import Evidence
from reportclient._engine.guarded_write import Done, GuardedWrite
from reportclient._engine.provider_cache import ProviderCache
from reportclient._engine.wire import Wire
from reportclient._model.providers import (
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ProviderWrite,
)
from reportclient.errors import GenerationConflict, OutcomeUnknown

__all__ = ["Field", "FieldWrite", "read_field"]

Field = TypeVar("Field", ProviderInventories, ProviderTraits, ProviderAggregates)


def read_field(
    transport: Wire, kind: type[Field], uuid: str, request_id: str | None = None
) -> Field:
    """``GET /resource_providers/{uuid}/{route}`` as a typed snapshot."""
    reply = transport.request(
        "GET", f"/resource_providers/{uuid}/{kind.ROUTE}", global_request_id=request_id
    )
    return kind.from_json(uuid, reply.body or {})


@dataclass(frozen=True, slots=True)
class FieldSent(Generic[Field]):
    """A field write as sent, with the snapshot it was computed from and the value it asked for."""

    write: ProviderWrite
    premise: Field
    asked: Any


class FieldWrite(GuardedWrite[Field, FieldSent[Field], Field]):
    """The attempts of one change to one field of a provider.

    :param kind: which field, as its snapshot type.
    :param compute: returns the field's new value from a copy of its
        current value (a dict of inventories, or a set of names); called
        again on every attempt, always on a state just read or trusted.
    :param idempotent: ``compute`` applied to its own result changes nothing
        (setting a class's inventory, adding a trait).
    :param start: a snapshot to compute the first attempt from instead of a read.
    :param start_read: ``start`` was just read; otherwise it is what the caller
        inferred (a provider it created, a field its own write left unchanged),
        and a conflict on it is a wrong guess, re-read at once, not contention.
    """

    def __init__(
        self,
        transport: Wire,
        cache: ProviderCache,
        kind: type[Field],
        uuid: str,
        compute: Callable[[Any], Any],
        *,
        idempotent: bool,
        request_id: str | None = None,
        start: Field | None = None,
        start_read: bool = True,
        memory: ContentionMemory | None = None,
    ) -> None:
        super().__init__(idempotent=idempotent, memory=memory)
        self._transport = transport
        self._cache = cache
        self._kind: type[Field] = kind
        self.uuid = uuid
        self._compute = compute
        self._request_id = request_id
        self._start_with: Field | None = start
        self._start_read = start_read
        self._cached = False
        #: Requests this operation sent (reads and writes), for reconcile's accounting.
        self.requests = 0
        #: Whether a write of this operation was acknowledged.
        self.wrote = False

    @property
    def subject(self) -> str:
        """What this operation writes, for logs."""
        return f"provider {self.uuid} {self._kind.ROUTE}"

    @property
    def turn(self) -> str:
        """This client's writers of the provider take turns, whatever field.

        Every field write moves the one provider generation, so two of them
        collide whichever fields they write.
        """
        return f"provider {self.uuid}"

    def read(self) -> Field:
        """Read the field (and cache it)."""
        self.requests += 1
        state = read_field(self._transport, self._kind, self.uuid, self._request_id)
        self._cache.put(state)
        self._cached = False
        return state

    def start(self) -> tuple[Field, bool]:
        """The caller's snapshot, a trusted cached one, else a read."""
        if self._start_with is not None:
            start, self._start_with = self._start_with, None
            return start, self._start_read
        cached = self._cache.trusted(self.uuid, self._kind)
        if isinstance(cached, self._kind):
            self._cached = True
            return cached, False
        return self.fresh(), True

    def plan(self, current: Field, fresh: bool) -> FieldSent[Field] | Done[Field]:
        """The write to send from ``current``, or ``current`` when it already holds the change."""
        desired = self._compute(current.value)
        if current.holds(desired) and self._cached:
            # A snapshot from the cache proves nothing about now (another
            # writer may have changed the field since): nothing to write is
            # reported only from a state Placement just returned.
            current = self.fresh()
            desired = self._compute(current.value)
        if current.holds(desired):
            return Done(current)
        write = ProviderWrite(
            self.uuid, self._kind.ROUTE, current.generation, current.body(desired)
        )
        return FieldSent(write, current, desired)

    def send(self, sent: FieldSent[Field]) -> Field:
        """PUT the field with the generation it was computed from."""
        self.requests += 1
        reply = self._transport.request(
            "PUT",
            f"/resource_providers/{self.uuid}/{sent.write.route}",
            json=dict(sent.write.body),
            global_request_id=self._request_id,
        )
        self.wrote = True
        # Placement answers with the field and its new generation: no guess.
        new = self._kind.from_json(self.uuid, reply.body or {})
        self._cache.put(new)
        return new

    def conflicted(self, sent: FieldSent[Field], exc: GenerationConflict) -> None:
        """The snapshot was stale: forget it."""
        self._cache.discard(self.uuid, self._kind)

    def look_after_conflict(self, sent: FieldSent[Field]) -> tuple[Field, bool] | None:
        """Re-read at once: a generation moved by allocations alone is no contention.

        Every allocation against a provider moves its generation, so under a
        scheduler's claims most conflicts of a field write say nothing about
        the field. When the re-read shows the field as the write found it,
        the next attempt goes at once from it; only a change to the field
        itself (another writer of inventories, traits or aggregates) waits
        under the policy.
        """
        state = self.fresh()
        return state, not state.holds(sent.premise.value)

    def forget(self) -> None:
        """The lost write may have changed the field."""
        self._cache.discard(self.uuid, self._kind)

    def evidence(self, sent: FieldSent[Field], state: Field) -> Iterator[Evidence]:
        """The provider's part of the fate rule."""
        yield Evidence(
            carried=sent.write.generation,
            seen=state.generation,
            as_premised=state.holds(sent.premise.value),
            as_written=state.holds(sent.asked),
        )

    def holds(self, sent: FieldSent[Field], state: Field, open_write: bool) -> Field | None:
        """``state`` if the change asked for is already there (recomputed from it)."""
        return state if state.holds(self._compute(state.value)) else None

    def unknown(self, sent: FieldSent[Field], state: Field | None, why: str) -> OutcomeUnknown:
        """The error for ``sent``, whose fate ``state`` (None: unread) cannot settle."""
        lost = self.lost
        now = "was not read" if state is None else f"is at generation {state.generation}"
        return OutcomeUnknown(
            f"{why}a {self._kind.ROUTE} write carrying provider generation "
            f"{sent.write.generation} may or may not have landed "
            f"({lost.message if lost else 'no answer'}); the provider {now}; "
            "nothing is written again",
            sent=sent.write,
            state=state,
            lost=lost,
            method="PUT",
            url=f"/resource_providers/{self.uuid}/{self._kind.ROUTE}",
        )
