"""One reconcile call on the engine: list, plan (:mod:`.reconcile_plan`), then send.

:class:`Run` holds one call's state (its request count, what it created,
updated, wrote, deleted and left alone) and does the I/O the pure plan
decides, through the engine's provider operations
(:class:`~reportclient._engine.provider_ops.ProviderOps`), never a client.
:mod:`.reconcile` says what a call does and what the agent setting trusts;
this module is how.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reportclient._engine.provider_ops import ProviderOps
from reportclient._engine.reconcile_plan import (
    FieldPlan,
    Known,
    PruneVerdict,
    Step,
    after_write,
    field_plans,
    is_reparenting,
    kept_by_refusal,
    needs_update,
    needs_write,
    provider_steps,
    prune_plan,
    prune_verdict,
    stand_in,
    to_ensure,
    unchanged_since,
    young,
)
from reportclient._gateway.gateway import Snapshot, TreeListing
from reportclient._model.microversions import REPARENT_VERSION, Microversion
from reportclient._model.provider_tree import ProviderSpec, ReconcileReport
from reportclient._model.providers import (
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ResourceProvider,
)
from reportclient.errors import (
    CannotDeleteParent,
    DuplicateName,
    InvalidInput,
    MicroversionUnsupported,
    PlacementError,
    ProviderInUse,
    ProviderNotFound,
)

__all__ = ["Run", "tree_anchors"]


class Run:
    """One reconcile call's state: its request count and what it has proven."""

    def __init__(
        self,
        client: ProviderOps,
        merge: bool,
        request_id: str | None,
        max_staleness: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.client = client
        self.merge = merge
        # Agent setting: a snapshot stands in for a read while it is within
        # max_staleness of this clock (the client's, as the cache's stamps
        # are), at the listed generation; strict: within the cache's ttl.
        self.max_staleness = max_staleness
        self.clock = clock
        self.trusted = False
        self.request_id = request_id
        self.requests = 0
        self.created: list[str] = []
        self.updated: list[str] = []
        self.written: list[tuple[str, str]] = []
        self.deleted: list[str] = []
        self.moved: list[str] = []
        self.generations: dict[str, int] = {}
        self.ensured: set[str] = set()
        # Each listed provider's tree listing (its server times).
        self.listed: dict[str, TreeListing] = {}

    def report(self) -> ReconcileReport:
        return ReconcileReport(
            self.requests,
            tuple(self.created),
            tuple(self.updated),
            tuple(self.written),
            self.generations,
            tuple(self.deleted),
            self.trusted,
            tuple(self.moved),
        )

    def list_trees(
        self, specs: Sequence[ProviderSpec], delete_roots: Sequence[str]
    ) -> dict[str, ResourceProvider]:
        """List every tree described or named for deletion, one request per tree."""
        found: dict[str, ResourceProvider] = {}
        for anchor in [*tree_anchors(specs), *delete_roots]:
            if anchor in found:
                continue  # an earlier listing held it, hence its whole tree
            self.requests += 1
            listing = self.client.list_tree(anchor, global_request_id=self.request_id)
            for rp in listing.providers:
                found[rp.uuid] = rp
                self.listed[rp.uuid] = listing
        return found

    def check(
        self,
        specs: Sequence[ProviderSpec],
        delete_roots: Sequence[str],
        found: Mapping[str, ResourceProvider],
    ) -> None:
        """Refuse, before any write, what the listings already show cannot be done."""
        for uuid in delete_roots:
            rp = found.get(uuid)
            if rp is not None and rp.parent_provider_uuid is not None:
                raise InvalidInput(
                    f"delete_roots names {uuid}, which is not a root: its parent is "
                    f"{rp.parent_provider_uuid}. Only a root (and with it its tree) is deleted "
                    "by name; a child is deleted by describing its root without it"
                )
        for spec in specs:
            rp = found.get(spec.uuid)
            if rp is not None:
                self._check_move(spec, rp)

    def _check_move(self, spec: ProviderSpec, rp: ResourceProvider) -> None:
        """Moving a provider that has a parent needs re-parenting (1.37); a root may always."""
        if not is_reparenting(spec, rp) or self.client.supports(REPARENT_VERSION):
            return
        old = rp.parent_provider_uuid
        where = f"under {spec.parent}" if spec.parent else "a root"
        raise MicroversionUnsupported(
            f"provider {spec.uuid} is a child of {old} (in the tree of "
            f"{rp.root_provider_uuid}); making it {where} is re-parenting, which needs "
            f"microversion {_spell(REPARENT_VERSION)} or later and this client uses less "
            "(pinned, or the most the server offers). Nothing was written"
        )

    def providers(
        self, specs: Sequence[ProviderSpec], found: dict[str, ResourceProvider]
    ) -> dict[str, ResourceProvider]:
        """Create, rename or re-parent what differs from the listings, parents first."""
        for spec, step in provider_steps(specs, found):
            if step is Step.CREATE:
                rp = self._create(spec)
                found[rp.uuid] = rp
            elif step is Step.UPDATE:
                found[spec.uuid] = self._update(spec, found[spec.uuid])
        return found

    def _update(self, spec: ProviderSpec, rp: ResourceProvider) -> ResourceProvider:
        self._check_move(spec, rp)
        kwargs: dict[str, Any] = {"name": spec.name, "global_request_id": self.request_id}
        if rp.parent_provider_uuid != spec.parent:
            kwargs["parent_provider_uuid"] = spec.parent
        self.requests += 1
        try:
            updated = self.client.update_provider(spec.uuid, **kwargs)
        except DuplicateName as exc:
            raise self._name_held(spec, exc) from exc
        self.updated.append(updated.uuid)
        return updated

    def _create(self, spec: ProviderSpec) -> ResourceProvider:
        self.requests += 1
        try:
            rp = self.client.create_provider(
                spec.name,
                uuid=spec.uuid,
                parent_provider_uuid=spec.parent,
                global_request_id=self.request_id,
            )
        except DuplicateName as exc:
            # The uuid or the name is taken. The uuid may be ours: created by
            # another agent since our listing, or in a tree we did not list
            # (a child moved here from another tree). Otherwise another
            # provider holds the name.
            self.requests += 1
            try:
                rp = self.client.get_provider(spec.uuid, global_request_id=self.request_id)
            except ProviderNotFound:
                raise self._name_held(spec, exc) from exc
            if needs_update(spec, rp):
                return self._update(spec, rp)
            return rp
        # Created by this call, at generation 0: empty, proven (the gateway
        # cached its three fields from the create's answer).
        self.created.append(rp.uuid)
        return rp

    def _name_held(self, spec: ProviderSpec, exc: DuplicateName) -> DuplicateName:
        """``exc`` naming the provider that holds ``spec``'s name, looked up by name."""
        self.requests += 1
        holders = self.client.list_providers(name=spec.name, global_request_id=self.request_id)
        holder = next((rp for rp in holders if rp.uuid != spec.uuid), None)
        if holder is None:
            return exc  # released since: nothing to name; reconciling again may succeed
        return DuplicateName(
            f"provider {spec.uuid} cannot be named {spec.name!r}: provider {holder.uuid} "
            f"(in the tree of {holder.root_provider_uuid}) holds that name",
            **_where(exc),
        )

    def prune(
        self,
        specs: Sequence[ProviderSpec],
        found: Mapping[str, ResourceProvider],
        delete_roots: Sequence[str],
    ) -> None:
        """Delete what the caller owns and no longer describes, leaves first.

        The listings nominate (:func:`~reportclient._engine.reconcile_plan.prune_plan`);
        each nominee is read again just before its DELETE and deleted only if
        it is still under an owned root (``prune_verdict``). One moved into
        another tree since the listing is left alone and reported in
        ``moved``; one gone is skipped. That read is one request per
        nominee, so a reconcile that nominates nothing costs what it did.
        Every deletion is tried; one refused (allocations, or a child added
        meanwhile) keeps its doomed ancestors too, and ends the call with
        ``ProviderInUse`` naming them once the others are done.
        """
        plan = prune_plan(specs, found, delete_roots, self.merge)
        refused: list[tuple[str, ProviderInUse]] = []
        kept: set[str] = set()
        for uuid in plan.doomed:
            if uuid in kept:
                continue
            verdict = prune_verdict(self._reread(uuid), plan.owned)
            if verdict is PruneVerdict.MOVED:
                self.moved.append(uuid)
                continue
            if verdict is PruneVerdict.GONE:
                continue
            self.requests += 1
            try:
                self.client.delete_provider(uuid, global_request_id=self.request_id)
            except ProviderNotFound:
                continue  # deleted by someone else meanwhile: what we wanted
            except ProviderInUse as exc:
                refused.append((uuid, exc))
                kept |= kept_by_refusal(uuid, plan)
                continue
            self.deleted.append(uuid)
        if refused:
            raise self._refused(refused, kept, found) from refused[0][1]

    def _reread(self, uuid: str) -> ResourceProvider | None:
        """The provider as Placement holds it now (None: gone), counted."""
        self.requests += 1
        try:
            return self.client.get_provider(uuid, global_request_id=self.request_id)
        except ProviderNotFound:
            return None

    def _refused(
        self,
        refused: Sequence[tuple[str, ProviderInUse]],
        kept: set[str],
        found: Mapping[str, ResourceProvider],
    ) -> ProviderInUse:
        """One error for every provider a prune could not delete, saying what was done."""
        first = refused[0][1]
        reasons = "; ".join(
            f"{u} ({found[u].name}): "
            + ("it has child providers" if isinstance(e, CannotDeleteParent) else "in use")
            + f" ({e.detail or e.message})"
            for u, e in refused
        )
        kept_by = sorted(kept - {u for u, _e in refused})
        message = (
            f"reconcile kept {len(refused)} provider(s) it was to delete: {reasons}"
            + (f"; kept with them, as their ancestors: {', '.join(kept_by)}" if kept_by else "")
            + ". Everything else is done: every described provider and field is in place"
            f" (created {list(self.created)}, updated {list(self.updated)}, "
            f"{len(self.written)} field write(s)) and deleted {list(self.deleted)}"
            + (
                f"; left alone, as moved to a tree not owned: {list(self.moved)}"
                if self.moved
                else ""
            )
            + "."
            " Release or move their allocations, then reconcile again"
        )
        return type(first)(message, **_where(first))

    def fields(self, spec: ProviderSpec, rp: ResourceProvider, fresh: bool) -> None:
        """Bring each managed field of one provider to the description."""
        cache = self.client.cache
        now = self._now()
        known: dict[str, Known] = {}
        for kind in (ProviderInventories, ProviderTraits, ProviderAggregates):
            if self.max_staleness is not None:
                # The agent setting: young by its own window, however the
                # listing's generation vouches for it (a re-created provider
                # can be back at it holding another writer's content).
                entry = stand_in(
                    cache.entry(rp.uuid, kind),
                    rp.generation,
                    now=now,
                    max_age=self.max_staleness,
                ) or self._reproven(rp, kind, now)
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
        for snap, taken in known.values():
            # What our own writes proved still holds at the final generation,
            # as old as the request that proved it (never re-stamped now).
            if snap.generation == generation and taken is not None:
                cache.put(snap, taken_at=taken)
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
        cache.put(entry[0], taken_at=now, proven=listing.answered)
        return entry[0], now

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
            result, wrote = self._write(kind, spec.uuid, plan.compute, start, just_read)
            if wrote:
                # Our write moved the provider from result.generation - 1 and
                # changed only its own field: a field known at that
                # generation holds at the new one, as old as its proof.
                for other in (ProviderInventories, ProviderTraits, ProviderAggregates):
                    held = cache.entry(spec.uuid, other)
                    if (
                        other is not kind
                        and held is not None
                        and held[0].generation == result.generation - 1
                    ):
                        moved = dataclasses.replace(held[0], generation=result.generation)
                        cache.put(moved, taken_at=held[1])
        generations = [
            entry[0].generation
            for kind in (ProviderInventories, ProviderTraits, ProviderAggregates)
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


def tree_anchors(specs: Sequence[ProviderSpec]) -> list[str]:
    """One provider per tree the description touches, to list it by (``in_tree``).

    A spec without a parent is a root (an ironic-style service describes one
    per node); a spec whose parent is not described hangs from a provider
    already in Placement, whose listing holds the spec too. Every other spec
    is in the tree of one of those. Listing only the first tree would make
    every other root look missing and be POSTed again (a 409) every period.
    """
    described = {s.uuid for s in specs}
    anchors: dict[str, None] = {}
    for spec in specs:
        if spec.parent is None:
            anchors[spec.uuid] = None
        elif spec.parent not in described:
            anchors[spec.parent] = None
    return list(anchors)


def _spell(version: Microversion) -> str:
    return f"{version[0]}.{version[1]}"


def _where(exc: PlacementError) -> dict[str, Any]:
    """What an error says about its request, to carry into one that explains it better."""
    return {
        "status": exc.status,
        "code": exc.code,
        "title": exc.title,
        "detail": exc.detail,
        "request_id": exc.request_id,
        "method": exc.method,
        "url": exc.url,
    }
