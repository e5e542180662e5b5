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

from reportclient._engine.provider_ops import ProviderOps
from reportclient._engine.reconcile_plan import (
    FieldPlan,
    Known,
    after_write,
    field_plans,
    needs_write,
    stand_in,
    to_ensure,
    unchanged_since,
    young,
)
from reportclient._engine.view_plan import Proof, ask_provider, field_proof
from reportclient._gateway.gateway import FIELD_KINDS, Snapshot, TreeListing
from reportclient._model.provider_tree import ProviderSpec
from reportclient._model.providers import (
    ProviderInventories,
    ResourceProvider,
)
from reportclient.errors import ProviderNotFound

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
        for kind in FIELD_KINDS:
            if self.max_staleness is not None:
                # The agent setting: what the listing proves unchanged is
                # proven again as of now, young or not (a field left at its
                # old stamp would outlive the window the listing opens, and
                # be read inside it); else a snapshot young by its own
                # window, however the listing's generation vouches for it
                # (a re-created provider can be back at it holding another
                # writer's content).
                entry = self._reproven(rp, kind, now) or stand_in(
                    cache.entry(rp.uuid, kind),
                    rp.generation,
                    now=now,
                    max_age=self.max_staleness,
                )
            else:
                # Strict: young by the cache's ttl, or created by this call.
                candidate = (
                    cache.entry(rp.uuid, kind)
                    if fresh
                    else cache.trusted_entry(rp.uuid, kind, rp.generation)
                )
                entry = stand_in(candidate, rp.generation)
            if entry is not None:
                known[kind.ROUTE] = entry
        if self.max_staleness is not None:
            unproven = [p.kind for p in field_plans(spec, self.merge) if p.kind.ROUTE not in known]
            known.update(self._by_own_time(rp, unproven, now))
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

    def _reproven(
        self, rp: ResourceProvider, kind: type[Snapshot], now: float
    ) -> tuple[Snapshot, float] | None:
        """A snapshot past the window that the tree's listing proves again, re-stamped; or None.

        The listing's ``Last-Modified`` predates the snapshot's proof: nothing
        in the tree changed since (:func:`unchanged_since`), so its content is
        proven as of the listing, for another window. The steady agent's
        cost stays one listing per window (issue 35: re-reading every field
        instead cost 1.16 requests per agent-period against 0.17).
        """
        cache = self.client.cache
        entry = cache.entry(rp.uuid, kind)
        listing = self.listed.get(rp.uuid)
        if (
            entry is None
            or listing is None
            or entry[0].generation != rp.generation
            or not unchanged_since(cache.proven(rp.uuid, kind), listing.modified)
        ):
            return None
        if not cache.reprove(entry[0], now, listing.answered):
            return None  # stored or doubted since it was taken: no longer what was proven
        return entry[0], now

    def _by_own_time(
        self, rp: ResourceProvider, kinds: Sequence[type[Snapshot]], now: float
    ) -> dict[str, Known]:
        """Fields the tree's listing could not prove, proven by the provider's own time.

        When the tree changed well after their proof (an allocation on a
        sibling, typically the compute node's root) while this provider
        stayed at its generation, one ``GET /resource_providers/{uuid}``
        (its own ``Last-Modified``) proves all of them at once: asked only
        when that saves reads (:func:`~.view_plan.ask_provider`), and a
        re-creation under the uuid still moves that time past the proof.
        A provider whose generation moved has its fields read: nothing
        Placement answers tells an allocation from a field write.
        """
        cache, listing = self.client.cache, self.listed.get(rp.uuid)
        if listing is None:
            return {}

        def cached(kind: type[Snapshot]) -> tuple[int, float | None] | None:
            entry = cache.entry(rp.uuid, kind)
            return None if entry is None else (entry[0].generation, cache.proven(rp.uuid, kind))

        proofs = {k: field_proof(cached(k), rp.generation, listing.modified) for k in kinds}
        if not ask_provider(proofs.values()):
            return {}
        self.requests += 1
        try:
            own = self.client.read_provider(rp.uuid, self.request_id)
        except ProviderNotFound:
            return {}  # gone since the listing: the reads (or writes) will say so
        one = own.providers[0]
        out: dict[str, Known] = {}
        for kind, proof in proofs.items():
            entry = cache.entry(rp.uuid, kind)
            if entry is None or proof is not Proof.CHECK:
                continue
            if field_proof(
                cached(kind), one.generation, own.modified
            ) is Proof.KEEP and cache.reprove(entry[0], now, own.answered):
                out[kind.ROUTE] = (entry[0], now)
        return out

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
