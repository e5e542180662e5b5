"""One reconcile call's field steps: each provider's inventories, traits and aggregates.

:class:`FieldSteps` is the half of :class:`~reportclient._engine.reconcile_run.Run`
that decides, per field, whether what this client last read or wrote may
stand in for a read (the agent setting's window, re-proven by a tree
listing, or the cache's ttl), reads what may not, and writes through the
engine's field change (:meth:`~reportclient._engine.provider_ops.ProviderOps.change`).
The run's other half, providers and prune, is in :mod:`.reconcile_run`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from reportclient._engine.prover import FieldProver
from reportclient._engine.provider_ops import ProviderOps
from reportclient._engine.reconcile_plan import (
    FieldPlan,
    Known,
    after_write,
    field_plans,
    needs_write,
    stand_in,
    to_ensure,
    young,
)
from reportclient._gateway.gateway import FIELD_KINDS, Snapshot, TreeListing
from reportclient._model.provider_tree import ProviderSpec
from reportclient._model.providers import (
    ProviderInventories,
    ResourceProvider,
)

__all__ = ["FieldSteps"]


class FieldSteps:
    """The field steps of one reconcile call, on the state :class:`~.reconcile_run.Run` holds."""

    client: ProviderOps
    merge: bool
    # Agent setting: a snapshot stands in for a read while it is within
    # max_staleness of this clock (the client's, as the cache's stamps
    # are), at the listed generation; strict: within the cache's ttl.
    max_staleness: float | None
    clock: Callable[[], float] | None
    request_id: str | None
    requests: int
    written: list[tuple[str, str]]
    generations: dict[str, int]
    ensured: set[str]
    # Each listed provider's tree listing (its server times).
    listed: dict[str, TreeListing]

    def fields(self, spec: ProviderSpec, rp: ResourceProvider, fresh: bool) -> None:
        """Bring each managed field of one provider to the description."""
        cache = self.client.cache
        now = self._now()
        known: dict[str, Known] = {}
        if self.max_staleness is not None:
            known = self._proven(spec, rp, now, self.max_staleness)
        else:
            for kind in FIELD_KINDS:
                # Strict: young by the cache's ttl, or created by this call.
                candidate = (
                    cache.entry(rp.uuid, kind)
                    if fresh
                    else cache.trusted_entry(rp.uuid, kind, rp.generation)
                )
                entry = stand_in(candidate, rp.generation)
                if entry is not None:
                    known[kind.ROUTE] = entry
        generation = rp.generation
        for plan in field_plans(spec, self.merge):
            kind = plan.kind
            held = known.get(kind.ROUTE)
            just_read = held is None
            if held is None:
                held = self._read(kind, rp.uuid)
            start = held[0]
            if needs_write(plan, start):
                self._ensure(plan, start)
            result, wrote = self._write(kind, rp.uuid, plan.compute, start, just_read)
            known = after_write(known, generation, result, wrote)
            if result is start:
                known[kind.ROUTE] = held  # nothing sent produced it: same age
            else:
                # The cycle cached its last read or write, stamped when it returned.
                known[kind.ROUTE] = (result, _taken_at(cache.entry(rp.uuid, kind), result))
            generation = result.generation
        # What our own writes carried to the final generation, the gateway
        # carried in the cache as they were answered (under its lock):
        # nothing is stored back from here, where another thread of this
        # client may have written or doubted the field since (issue 49).
        self.generations[rp.uuid] = generation

    def _proven(
        self, spec: ProviderSpec, rp: ResourceProvider, now: float, window: float
    ) -> dict[str, Known]:
        """The agent setting: what stands in for a read of each field past the tree's window.

        What the tree's listing (and the provider's own ``Last-Modified``, and
        the resource classes' listing, :class:`~.prover.FieldProver`) proves
        unchanged is proven again as of now, young or not: a field left at
        its old stamp would outlive the window the listing opens, and be
        read inside it (issue 49). Else a snapshot young by its own window,
        however the listing's generation vouches for it (a re-created
        provider can be back at it holding another writer's content). The
        steady agent's cost stays one listing per window, and a read of each
        field no listing can see (aggregates, unless assumed; issue 53).
        """
        cache = self.client.cache
        managed = [plan.kind for plan in field_plans(spec, self.merge)]
        young: dict[type[Snapshot], Known] = {}
        for kind in managed:
            entry = stand_in(cache.entry(rp.uuid, kind), rp.generation, now=now, max_age=window)
            if entry is not None:
                young[kind] = entry
        listing = self.listed.get(rp.uuid)
        kept: dict[type[Snapshot], Known] = {}
        if listing is not None:
            prover = FieldProver(self.client, now, window, self.request_id)
            kept = dict(prover.kept(rp, listing, managed, settled=set(young)) or {})
            self.requests += prover.requests
        return {
            kind.ROUTE: held
            for kind in managed
            if (held := kept.get(kind) or young.get(kind)) is not None
        }

    def _now(self) -> float:
        return self.clock() if self.clock is not None else 0.0

    def _read(self, kind: type[Snapshot], uuid: str) -> Known:
        """One field read, counted, with when the cache stamped it."""
        # The union of field types is not a value of the TypeVar: Any bridges it.
        any_kind: Any = kind
        self.requests += 1
        read = self.client.read(any_kind, uuid, self.request_id)
        return read, _taken_at(self.client.cache.entry(uuid, kind), read)

    def remembered(self, specs: Sequence[ProviderSpec]) -> bool:
        """Whether the cache holds every field ``specs`` manages (the window trusts those)."""
        cache = self.client.cache
        return all(
            cache.entry(spec.uuid, plan.kind) is not None
            for spec in specs
            for plan in field_plans(spec, self.merge)
        )

    def within_window(self, spec: ProviderSpec, window: float) -> None:
        """Bring one provider to ``spec`` from what this client last read or wrote, listing nothing.

        A field whose cached content is younger than ``window`` and already
        holds the description costs no request. One that differs is written
        at the cached generation: an allocation (or another writer) since
        then makes it a 409, which re-reads that field alone and recomputes.
        The other fields are not re-read for it: an allocation changes no
        inventory, trait or aggregate, and another writer's change is what
        the window accepts not seeing until it ends. A field whose content
        is older than ``window`` (proven before the tree's last listing,
        then trusted by it) is read first: no content stands in for a read
        longer than the window.
        """
        cache = self.client.cache
        now = self._now()
        for plan in field_plans(spec, self.merge):
            kind = plan.kind
            entry = cache.entry(spec.uuid, kind)
            assert entry is not None  # checked by remembered() before any write
            just_read = not young(entry[1], now, window)
            start = self._read(kind, spec.uuid)[0] if just_read else entry[0]
            if not needs_write(plan, start):
                continue
            self._ensure(plan, start)
            # Our write moved the provider by one and changed only its own
            # field: the gateway carried every other field it held at the
            # old generation to the new one, as old as its proof.
            self._write(kind, spec.uuid, plan.compute, start, just_read)
        generations = [
            entry[0].generation
            for kind in FIELD_KINDS
            if (entry := cache.entry(spec.uuid, kind)) is not None
        ]
        if generations:
            self.generations[spec.uuid] = max(generations)

    def _write(
        self,
        kind: type[Any],
        uuid: str,
        compute: Callable[[Any], Any],
        start: Snapshot,
        start_read: bool,
    ) -> tuple[Any, bool]:
        """One field change from ``start``, counted: the field afterwards, and whether it wrote."""
        result, sent, wrote = self.client.change(
            kind,
            uuid,
            compute,
            idempotent=True,
            start=start,
            start_read=start_read,
            global_request_id=self.request_id,
        )
        self.requests += sent
        if wrote:
            self.written.append((uuid, kind.ROUTE))
        return result, wrote

    def _ensure(self, plan: FieldPlan, start: Snapshot) -> None:
        """Create the custom classes or traits a write will name, unless the provider has them."""
        for name in to_ensure(plan, start, self.ensured):
            self.requests += 1
            if plan.kind is ProviderInventories:
                self.client.ensure_resource_class(name, global_request_id=self.request_id)
            else:
                self.client.ensure_trait(name, global_request_id=self.request_id)
            self.ensured.add(name)


def _taken_at(entry: tuple[Snapshot, float] | None, snap: Snapshot) -> float | None:
    """When ``snap`` was cached, if the cache ``entry`` still holds this very snapshot.

    Another thread of the same client may have cached a newer one since;
    then ``snap``'s age is unknown and it is not cached on.
    """
    return entry[1] if entry is not None and entry[0] is snap else None
