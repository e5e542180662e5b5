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
from typing import Any, Generic

from reportclient._engine.contention import ContentionMemory
from reportclient._engine.fate import Evidence
from reportclient._engine.guarded_write import Done, GuardedWrite, request_fields
from reportclient._gateway.gateway import Field, Gateway
from reportclient._model.providers import ProviderTraits, ProviderWrite
from reportclient.errors import (
    GenerationConflict,
    OutcomeUnknown,
    PlacementUnavailable,
    ProviderChanged,
)

__all__ = ["TRAITS_RACE_500", "Field", "FieldWrite", "traits_race"]

#: What Placement's fault wrapper answers (500) when a traits write's
#: generation bump matched no row: ``ResourceProviderConcurrentUpdateDetected``,
#: which ``PUT .../traits`` does not catch (16.0.0, and master as of 2026-12),
#: raised inside the transaction that writes the traits, which therefore
#: rolls back. The other field routes answer the same race with 409
#: ``placement.concurrent_update`` (doc/source/placement_behaviour.rst).
TRAITS_RACE_500 = (
    "Another thread concurrently updated the resource provider data. Please retry your update"
)


def traits_race(exc: PlacementUnavailable) -> GenerationConflict | None:
    """The conflict a traits write's 500 stands for, when its words prove nothing was written.

    Only Placement's own 500 with exactly that detail: any other 5xx (a
    proxy's, a database error's) may follow a commit and stays a lost answer.
    """
    if exc.status != 500 or exc.detail != TRAITS_RACE_500:
        return None
    return GenerationConflict(exc.message, **request_fields(exc))


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
    :param base: a three-way write (a tree view's flush): the value the
        caller computed its change from. Whenever the field, as read or
        re-read after a conflict, holds neither ``base`` nor what the change
        asks for, another writer changed it since: the write ends at once in
        :class:`~reportclient.errors.ProviderChanged` (carrying the conflict
        that led to the re-read), never overwriting it. :data:`NO_BASE`: an
        ordinary field change.
    """

    def __init__(
        self,
        gateway: Gateway,
        kind: type[Field],
        uuid: str,
        compute: Callable[[Any], Any],
        *,
        idempotent: bool,
        request_id: str | None = None,
        start: Field | None = None,
        start_read: bool = True,
        memory: ContentionMemory | None = None,
        base: Any = None,
    ) -> None:
        super().__init__(idempotent=idempotent, memory=memory)
        self._base = base
        self._conflict: GenerationConflict | None = None
        self._gateway = gateway
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
        state = self._gateway.read_field(self._kind, self.uuid, self._request_id)
        self._cached = False
        return state

    def start(self) -> tuple[Field, bool]:
        """The caller's snapshot, a trusted cached one, else a read."""
        if self._start_with is not None:
            start, self._start_with = self._start_with, None
            return start, self._start_read
        entry = self._gateway.fields.trusted_entry(self.uuid, self._kind)
        if entry is not None and isinstance(entry[0], self._kind):
            self._cached = True
            return entry[0], False
        return self.fresh(), True

    def plan(self, current: Field, fresh: bool) -> FieldSent[Field] | Done[Field]:
        """The write to send from ``current``, or ``current`` when it already holds the change."""
        desired = self._compute(current.value)
        self._check_base(current, desired)
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
        """PUT the field with the generation it was computed from.

        :raises GenerationConflict: also for Placement's 500 that a traits
            write lost the in-server race (:func:`traits_race`).
        """
        self.requests += 1
        try:
            new = self._gateway.put_field(self._kind, sent.write, self._request_id)
        except PlacementUnavailable as exc:
            race = traits_race(exc) if self._kind is ProviderTraits else None
            if race is None:
                raise
            raise race from exc
        self.wrote = True
        return new

    def _check_base(self, current: Field, desired: Any) -> None:
        """A three-way write's rule: ``current`` must hold its base, or already the change."""
        if self._base is None or current.holds(self._base) or current.holds(desired):
            return
        conflict = self._conflict
        where = {} if conflict is None else request_fields(conflict)
        raise ProviderChanged(
            f"provider {self.uuid}'s {self._kind.ROUTE} changed since they were read "
            f"({_show(self._base)}); Placement now holds {_show(current.value)} at generation "
            f"{current.generation}. Nothing was written: read again and recompute",
            state=current,
            known=self._base,
            **where,
        )

    def conflicted(self, sent: FieldSent[Field], exc: GenerationConflict) -> None:
        """Keep the conflict: a three-way write that ends on it names its request."""
        self._conflict = exc

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
        self._check_base(state, sent.asked)
        return state, not state.holds(sent.premise.value)

    def forget(self) -> None:
        """A write of ours may still land: the field is in doubt."""
        self._gateway.forget_field(self.uuid, self._kind)

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
            url=lost.url if lost is not None else None,
        )


def _show(value: Any) -> str:
    """A field's value for a message: names sorted, inventories as totals."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(value)) + "}" if value else "nothing"
    if isinstance(value, dict):
        totals = ", ".join(
            f"{rc}: {getattr(inv, 'total', inv)}" for rc, inv in sorted(value.items())
        )
        return "{" + totals + "}" if totals else "nothing"
    return repr(value)
