"""Declarative reconcile: make a provider tree match a description, in the fewest requests.

One ``GET /resource_providers?in_tree=`` per tree described (each root,
and each existing provider a described subtree hangs from) lists the
providers with their generations. Providers missing from the listings are
created (parents first), renamed or re-parented ones updated. Then, per
provider, each field the description manages (inventories, traits,
aggregates) is one :class:`~reportclient._engine.field_write.FieldWrite`:
read, compute, write only if something differs, retried from a re-read on
a generation conflict.

Requests are saved without trusting anything unproven:

* a provider this call created is known to be empty at generation 0;
* a write only moves the generation by one and only changes its own field,
  so the other fields read (or known) at the old generation are still
  known at the new one, and the next write needs no read;
* a cached snapshot is used instead of a read only if the listing shows the
  provider at the snapshot's generation *and* the snapshot is within the
  client's ``cache_ttl`` (see :mod:`reportclient._engine.provider_cache` for why the
  generation alone cannot prove it), its age counted from the request that
  proved it, never from a later reconcile that trusted or carried it;
* custom resource classes and traits are ensured (``PUT``) only when a field
  about to be written names one the provider does not already hold.

A wrong guess costs a 409 and a read, never a lost change: every write
carries the generation its content was computed from. Two agents can
reconcile the same tree at once; with ``merge=True`` each only adds and
updates what its description names, so neither removes what the other wrote.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from reportclient._engine.field_write import Field
from reportclient._engine.provider_cache import ProviderCache, Snapshot
from reportclient._model.provider_tree import ProviderSpec, ReconcileReport
from reportclient._model.providers import (
    Inventory,
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ResourceProvider,
)
from reportclient.errors import DuplicateName, InvalidInput

__all__ = ["ProviderOps", "reconcile"]


class ProviderOps(Protocol):
    """What reconcile needs of a provider client (``ProviderClient`` is one).

    The engine depends on this, not on the client, so the layers point one way.
    """

    cache: ProviderCache

    def list_providers(
        self, *, in_tree: str | None = None, global_request_id: str | None = None
    ) -> list[ResourceProvider]: ...

    def get_provider(
        self, uuid: str, *, global_request_id: str | None = None
    ) -> ResourceProvider: ...

    def create_provider(
        self,
        name: str,
        *,
        uuid: str | None = None,
        parent_provider_uuid: str | None = None,
        global_request_id: str | None = None,
    ) -> ResourceProvider: ...

    def update_provider(
        self,
        uuid: str,
        *,
        name: str | None = None,
        parent_provider_uuid: str | None = ...,
        global_request_id: str | None = None,
    ) -> ResourceProvider: ...

    def read(self, kind: type[Field], uuid: str, request_id: str | None = None) -> Field: ...

    def change(
        self,
        kind: type[Field],
        uuid: str,
        compute: Callable[[Any], Any],
        *,
        idempotent: bool,
        start: Field | None = None,
        start_read: bool = True,
        global_request_id: str | None = None,
    ) -> tuple[Field, int, bool]: ...

    def ensure_resource_class(self, name: str, *, global_request_id: str | None = None) -> bool: ...

    def ensure_trait(self, name: str, *, global_request_id: str | None = None) -> bool: ...


class _Run:
    """One reconcile call's state: its request count and what it has proven."""

    def __init__(self, client: ProviderOps, merge: bool, request_id: str | None) -> None:
        self.client = client
        self.merge = merge
        self.request_id = request_id
        self.requests = 0
        self.created: list[str] = []
        self.updated: list[str] = []
        self.written: list[tuple[str, str]] = []
        self.generations: dict[str, int] = {}
        self.ensured: set[str] = set()

    def providers(self, specs: Sequence[ProviderSpec]) -> dict[str, ResourceProvider]:
        """List every tree described, then create, rename or re-parent what differs."""
        found: dict[str, ResourceProvider] = {}
        for anchor in _tree_anchors(specs):
            if anchor in found:
                continue  # an earlier listing held it, hence its whole tree
            self.requests += 1
            found.update((rp.uuid, rp) for rp in self.client.list_providers(in_tree=anchor))
        for spec in specs:
            rp = found.get(spec.uuid)
            if rp is None:
                rp = self._create(spec)
                found[rp.uuid] = rp
            elif rp.name != spec.name or rp.parent_provider_uuid != spec.parent:
                self.requests += 1
                parent: Any = spec.parent if rp.parent_provider_uuid != spec.parent else _KEEP
                rp = self._update(spec, parent)
                self.updated.append(rp.uuid)
                found[rp.uuid] = rp
        return found

    def _update(self, spec: ProviderSpec, parent: Any) -> ResourceProvider:
        kwargs: dict[str, Any] = {"name": spec.name, "global_request_id": self.request_id}
        if parent is not _KEEP:
            kwargs["parent_provider_uuid"] = parent
        return self.client.update_provider(spec.uuid, **kwargs)

    def _create(self, spec: ProviderSpec) -> ResourceProvider:
        self.requests += 1
        try:
            rp = self.client.create_provider(
                spec.name,
                uuid=spec.uuid,
                parent_provider_uuid=spec.parent,
                global_request_id=self.request_id,
            )
        except DuplicateName:
            # Another agent may have created it between our listing and now.
            self.requests += 1
            rp = self.client.get_provider(spec.uuid, global_request_id=self.request_id)
            if rp.name != spec.name or rp.parent_provider_uuid != spec.parent:
                raise
            return rp
        self.created.append(rp.uuid)
        for kind in (ProviderInventories, ProviderTraits, ProviderAggregates):
            # Created by this call, at generation 0: empty, proven.
            self.client.cache.put(kind(rp.uuid, rp.generation))
        return rp

    def fields(self, spec: ProviderSpec, rp: ResourceProvider, fresh: bool) -> None:
        """Bring each managed field of one provider to the description."""
        cache = self.client.cache
        # Each known snapshot, with when the read or write that proved its
        # content was cached (None: unknown; used in this call, not cached on).
        known: dict[str, tuple[Snapshot, float | None]] = {}
        for kind in (ProviderInventories, ProviderTraits, ProviderAggregates):
            entry = cache.entry(rp.uuid, kind) if fresh else None
            if entry is None:
                entry = cache.trusted_entry(rp.uuid, kind, rp.generation)
            if entry is not None and entry[0].generation == rp.generation:
                known[kind.ROUTE] = entry
        generation = rp.generation
        plans: list[tuple[type[Snapshot], Callable[[Any], Any], Iterable[str]]] = []
        if spec.inventories is not None:
            plans.append((ProviderInventories, self._inventories(spec), _custom(spec.inventories)))
        if spec.traits is not None:
            plans.append((ProviderTraits, self._names(spec.traits), _custom(spec.traits)))
        if spec.aggregates is not None:
            plans.append((ProviderAggregates, self._names(spec.aggregates), ()))
        for kind, compute, custom in plans:
            # The union of field types is not a value of the TypeVar: Any bridges it.
            any_kind: Any = kind
            held = known.get(kind.ROUTE)
            just_read = held is None
            if held is None:
                self.requests += 1
                read = self.client.read(any_kind, rp.uuid, self.request_id)
                held = (read, _taken_at(cache.entry(rp.uuid, kind), read))
            start = held[0]
            if not start.holds(compute(start.value)):
                self._ensure(kind, custom, start)
            result, sent, wrote = self.client.change(
                any_kind,
                rp.uuid,
                compute,
                idempotent=True,
                start=start,
                start_read=just_read,
                global_request_id=self.request_id,
            )
            self.requests += sent
            if wrote:
                self.written.append((rp.uuid, kind.ROUTE))
            if wrote and result.generation == generation + 1:
                # Our write moved it from the generation the others are known
                # at, and changed only its own field: they hold at the new one.
                # Their content was proven when first read, not now: each
                # keeps its taken-at, so the ttl still bounds its age.
                known = {
                    route: (dataclasses.replace(snap, generation=result.generation), taken)
                    for route, (snap, taken) in known.items()
                    if snap.generation == generation
                }
            elif result.generation != generation:
                known = {}  # someone else wrote: nothing else is known any more
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

    def _ensure(self, kind: type[Snapshot], custom: Iterable[str], start: Snapshot) -> None:
        """Create the custom classes or traits a write will name, unless the provider has them."""
        held = set(start.value)
        for name in sorted(set(custom) - held - self.ensured):
            self.requests += 1
            if kind is ProviderInventories:
                self.client.ensure_resource_class(name, global_request_id=self.request_id)
            else:
                self.client.ensure_trait(name, global_request_id=self.request_id)
            self.ensured.add(name)

    def _inventories(self, spec: ProviderSpec) -> Callable[[dict[str, Inventory]], Any]:
        wanted = dict(spec.inventories or {})
        if self.merge:
            return lambda current: {**current, **wanted}
        return lambda _current: dict(wanted)

    def _names(self, names: Iterable[str]) -> Callable[[set[str]], set[str]]:
        wanted = set(names)
        if self.merge:
            return lambda current: current | wanted
        return lambda _current: set(wanted)


_KEEP: Any = object()


def _taken_at(entry: tuple[Snapshot, float] | None, snap: Snapshot) -> float | None:
    """When ``snap`` was cached, if the cache ``entry`` still holds this very snapshot.

    Another thread of the same client may have cached a newer one since;
    then ``snap``'s age is unknown and it is not cached on.
    """
    return entry[1] if entry is not None and entry[0] is snap else None


def _tree_anchors(specs: Sequence[ProviderSpec]) -> list[str]:
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


def _custom(names: Iterable[str]) -> list[str]:
    return [n for n in names if n.startswith("CUSTOM_")]


def _parents_first(specs: Sequence[ProviderSpec]) -> list[ProviderSpec]:
    by_uuid = {s.uuid: s for s in specs}
    ordered: list[ProviderSpec] = []
    seen: set[str] = set()

    def visit(spec: ProviderSpec, path: tuple[str, ...]) -> None:
        if spec.uuid in seen:
            return
        if spec.uuid in path:
            raise InvalidInput(f"the described tree has a loop through {spec.uuid}")
        parent = by_uuid.get(spec.parent) if spec.parent else None
        if parent is not None:
            visit(parent, (*path, spec.uuid))
        seen.add(spec.uuid)
        ordered.append(spec)

    for spec in specs:
        visit(spec, ())
    return ordered


def reconcile(
    client: ProviderOps,
    specs: Iterable[ProviderSpec],
    *,
    merge: bool = False,
    global_request_id: str | None = None,
) -> ReconcileReport:
    """Make the tree described by ``specs`` exist as described.

    :param merge: only add and update what the description names (classes,
        traits, aggregates), never remove others; for agents sharing a tree.
        Without it each managed field becomes exactly what is described.
    :raises InvalidInput: a malformed description (before any request).
    :raises InventoryInUse: removing or shrinking inventory that is allocated.
    :raises GenerationConflict: conflicts outlasted the retry policy.
    :raises OutcomeUnknown: the policy gave up while a write may still land.
    """
    normalized = [spec.normalized() for spec in specs]
    if not normalized:
        raise InvalidInput("reconcile needs at least one ProviderSpec")
    uuids = [s.uuid for s in normalized]
    if len(set(uuids)) != len(uuids):
        raise InvalidInput("each provider may be described once")
    normalized = _parents_first(normalized)
    run = _Run(client, merge, global_request_id)
    found = run.providers(normalized)
    for spec in normalized:
        run.fields(spec, found[spec.uuid], spec.uuid in run.created)
    return ReconcileReport(
        run.requests, tuple(run.created), tuple(run.updated), tuple(run.written), run.generations
    )
