"""A provider-tree view: nova's ``ProviderTree`` cache, kept from what the gateway proved.

nova's resource tracker asks its report client for the compute node's tree
every period, changes it, and hands it back to be flushed. nova's client
keeps that tree in memory, hands out a copy without a request while its
association refresh window lasts, and flushes only the fields that differ
from it, each at the generation it holds. :class:`TreeViews` is that cache
on reportclient's engine, with two differences that make it safe:

* **It holds no state of its own.** Which providers make up a tree comes
  from the gateway's provider records (a listing proved the tree whole, and
  this client's creates and deletes kept it so), and what each holds from
  the provider cache, so the view is invalidated by exactly the answers
  that invalidate those (a conflict, a lost answer, a raw write, a delete):
  what was forgotten is read again before the view is handed out, inside
  the window too. What it keeps is which trees it shows (nova's roots) and
  when each provider was last proven (nova's refresh times).
* **A flush never removes what it did not see.** Each field that differs is
  written at the generation the view proved it at; when Placement has moved
  on (an allocation, another writer), the field is read again and the write
  goes ahead from there only if the field still holds what the view showed
  (nobody else wrote it): otherwise nothing is written and
  :class:`~reportclient.errors.ProviderChanged` says so (nova's
  ``ResourceProviderUpdateConflict``: read the tree again and recompute).

Past the window one listing proves the tree (:mod:`.view_plan` says what a
listing proves and when a field is read instead), and one query finds the
sharing providers of its aggregates, as nova's refresh does. What that
costs, against nova's client, is in doc/source/nova_adapter.rst.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from reportclient._engine.prover import FieldProver
from reportclient._engine.provider_ops import ProviderOps
from reportclient._engine.view_plan import (
    FlushPlan,
    field_writes,
    flush_plan,
    stale,
    view_value,
)
from reportclient._gateway.gateway import FIELD_KINDS, Snapshot, TreeListing
from reportclient._model.consumers import AllocationWrite
from reportclient._model.microversions import CONSUMER_TYPE_VERSION, RESHAPER_VERSION
from reportclient._model.provider_tree import ProviderSpec, describe
from reportclient._model.providers import (
    Inventory,
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ResourceProvider,
)
from reportclient._model.tree_view import ProviderView, TreeView
from reportclient._model.validation import validate_uuid
from reportclient.errors import (
    DuplicateName,
    InvalidInput,
    MicroversionUnsupported,
    ProviderNotFound,
)

__all__ = ["SHARES_VIA_AGGREGATE", "TreeViews"]

#: The trait of a provider that shares its inventory with its aggregates' members.
SHARES_VIA_AGGREGATE = "MISC_SHARES_VIA_AGGREGATE"
#: Aggregates per sharing-provider query (nova's ``sharing_providers_max_uuids_per_request``
#: default): a longer ``member_of=in:`` would outgrow a URL.
_AGGREGATES_PER_QUERY = 200


class TreeViews:
    """The trees one caller (one nova report client) keeps in view, and their refresh times.

    Thread-safe: its own state is two small maps under one lock, released
    around every request; everything else is the gateway's.

    :param ops: the client's provider operations (its gateway, policy and contention memory).
    :param clock: the client's clock (seconds), for the refresh window.
    :param window: the refresh window in seconds, asked on every call (nova's
        option is mutable); 0: a proven provider is never refreshed.
    """

    def __init__(
        self, ops: ProviderOps, clock: Callable[[], float], window: Callable[[], float]
    ) -> None:
        self._ops = ops
        self._gateway = ops.gateway
        self._clock = clock
        self._window = window
        self._lock = threading.Lock()
        # Roots shown, in the order they came into view; True for a sharing
        # provider shown as a root (nova's new_root), whatever its parent.
        self._roots: dict[str, bool] = {}
        self._refreshed: dict[str, float] = {}

    # -- what is in view ----------------------------------------------------------------
    def _track(self, root: str, *, sharing: bool = False) -> None:
        with self._lock:
            if root not in self._roots:
                self._roots[root] = sharing

    def _refresh(self, uuids: Iterable[str], at: float) -> None:
        with self._lock:
            for uuid in uuids:
                self._refreshed[uuid] = at

    def _stale(self, uuids: Iterable[str], now: float, window: float) -> bool:
        with self._lock:
            return any(stale(self._refreshed.get(u), now, window) for u in uuids)

    def refreshed(self) -> dict[str, float]:
        """Each provider's last proof, on the client's clock (nova's association refresh times)."""
        with self._lock:
            return dict(self._refreshed)

    def shown(self) -> list[tuple[ResourceProvider, bool]]:
        """Every provider in view as the gateway's records hold it, no request made.

        Each with whether it is a sharing provider shown as a root. A tree
        the gateway no longer knows whole contributes its root's record only.
        """
        with self._lock:
            roots = list(self._roots.items())
        out: list[tuple[ResourceProvider, bool]] = []
        seen: set[str] = set()
        for root, sharing in roots:
            members = None if sharing else self._gateway.tree_members(root)
            if members is None:
                record = self._gateway.provider_record(root)
                members = [] if record is None else [record]
            for rp in members:
                if rp.uuid not in seen:
                    seen.add(rp.uuid)
                    out.append((rp, sharing))
        return out

    def invalidate(self, uuid: str, *, keep: bool = False) -> None:
        """Make ``uuid`` stale; unless ``keep``, drop it and what hangs from it from the view.

        nova's ``invalidate_resource_provider(name_or_uuid, cacheonly)``:
        dropped, the provider is read again (listed, and its fields proven)
        the next time its tree is asked for. No request is made.
        """
        inside = {uuid}
        for rp, _sharing in self.shown():  # parents first
            if rp.parent_provider_uuid in inside:
                inside.add(rp.uuid)
        with self._lock:
            for member in inside:
                self._refreshed.pop(member, None)
            if not keep:
                self._roots.pop(uuid, None)
        if not keep:
            for member in inside:
                self._gateway.forget_provider(member)

    def clear(self) -> None:
        """Drop every tree from the view (nova's ``clear_provider_cache``).

        The next call proves each tree it asks for as if it were new: one
        listing, and every field that listing does not prove read again.
        """
        with self._lock:
            self._roots.clear()
            self._refreshed.clear()

    # -- handing the view out -------------------------------------------------------------
    def ensure(
        self,
        uuid: str,
        *,
        name: str | None = None,
        parent: str | None = None,
        request_id: str | None = None,
    ) -> TreeView:
        """Every tree in view, with ``uuid``'s proven within its window (created when missing).

        nova's ``get_provider_tree_and_ensure_root``: while ``uuid`` and
        every provider of its tree are within the window, no request (but
        for what the gateway forgot since); past it, one listing of the tree
        and one query for the sharing providers of its aggregates prove it
        again, reading only the fields they cannot prove.

        :raises DuplicateName: ``uuid`` is missing and ``name`` is another provider's.
        """
        uuid = validate_uuid(uuid, "uuid")
        now, window = self._clock(), self._window()
        record = self._gateway.provider_record(uuid)
        members = None
        if record is not None:
            root = record.root_provider_uuid or record.uuid
            with self._lock:
                shown = root in self._roots
            members = self._gateway.tree_members(root) if shown else None
        if members is None or self._stale([m.uuid for m in members], now, window):
            self._prove(uuid, name, parent, request_id)
        return self.current(request_id=request_id)

    def current(self, *, request_id: str | None = None) -> TreeView:
        """The view as kept: no request, but for what the gateway forgot since it was proven.

        A tree the gateway no longer knows whole is listed again; a field it
        forgot is read. Nothing else is proven again inside the window.
        """
        with self._lock:
            roots = list(self._roots.items())
        out: list[ProviderView] = []
        seen: set[str] = set()
        for root, sharing in roots:
            for rp in self._members(root, sharing, request_id):
                if rp.uuid in seen:
                    continue
                seen.add(rp.uuid)
                out.append(self._provider(rp, sharing, request_id))
        return TreeView(tuple(out))

    def _members(self, root: str, sharing: bool, request_id: str | None) -> list[ResourceProvider]:
        gateway = self._gateway
        if sharing:
            rp = gateway.provider_record(root)
            if rp is None:
                try:
                    rp = gateway.read_provider(root, request_id).providers[0]
                except ProviderNotFound:
                    self._drop_root(root)
                    return []
            return [rp]
        members = gateway.tree_members(root)
        if members is None:
            listing = gateway.list_tree(root, request_id)
            if not listing.providers:
                self._drop_root(root)
                return []
            members = gateway.tree_members(root) or listing.providers
        return members

    def _drop_root(self, root: str) -> None:
        with self._lock:
            self._roots.pop(root, None)
            self._refreshed.pop(root, None)

    def _provider(
        self, rp: ResourceProvider, sharing: bool, request_id: str | None
    ) -> ProviderView:
        """One provider as the view holds it, reading a field the cache forgot."""
        fields = self._fields(rp.uuid, request_id)
        inventories = fields[ProviderInventories.ROUTE]
        traits = fields[ProviderTraits.ROUTE]
        aggregates = fields[ProviderAggregates.ROUTE]
        assert isinstance(inventories, ProviderInventories)
        assert isinstance(traits, ProviderTraits)
        assert isinstance(aggregates, ProviderAggregates)
        # The newest generation any field was proven at. Each field keeps its
        # own: a flush writes it at the generation its content was proven at.
        return ProviderView(
            rp.uuid,
            rp.name,
            None if sharing else rp.parent_provider_uuid,
            max(inventories.generation, traits.generation, aggregates.generation),
            inventories.inventories,
            traits.traits,
            aggregates.aggregates,
            sharing,
        )

    def _fields(self, uuid: str, request_id: str | None) -> dict[str, Snapshot]:
        """The provider's three fields as cached, each read when the gateway forgot it."""
        cache, out = self._gateway.fields, {}
        for kind in FIELD_KINDS:
            entry = cache.entry(uuid, kind)
            out[kind.ROUTE] = entry[0] if entry is not None else self._read(kind, uuid, request_id)
        return out

    def _read(self, kind: type[Snapshot], uuid: str, request_id: str | None) -> Snapshot:
        # The union of field types is not a value of the TypeVar: Any bridges it.
        any_kind: Any = kind
        snapshot: Snapshot = self._ops.read(any_kind, uuid, request_id)
        return snapshot

    # -- proving ----------------------------------------------------------------------------
    def _prove(
        self,
        uuid: str,
        name: str | None,
        parent: str | None,
        request_id: str | None,
    ) -> None:
        """List ``uuid``'s tree (creating ``uuid`` when it has none) and prove what it holds."""
        listing = self._gateway.list_tree(uuid, request_id)
        if not listing.providers:
            try:
                rp = self._ops.create_provider(name or uuid, uuid, parent, request_id)
            except DuplicateName:
                # Created by another writer since the listing, or the name is taken.
                listing = self._gateway.list_tree(uuid, request_id)
                if not listing.providers:
                    raise
            else:
                self._track(rp.root_provider_uuid or rp.uuid)
                self._refresh([rp.uuid], self._clock())
                return
        tree = listing.providers
        self._track(tree[0].root_provider_uuid or tree[0].uuid)
        earliest = [self._prove_listed(tree, listing, request_id)]
        aggregates: set[str] = set()
        for rp in tree:
            entry = self._gateway.fields.entry(rp.uuid, ProviderAggregates)
            if entry is not None:
                aggregates.update(entry[0].value)
        proven = [rp.uuid for rp in tree]
        shown = {rp.uuid for rp, _sharing in self.shown()}
        for sharing in self._sharing(sorted(aggregates), request_id):
            others = [rp for rp in sharing.providers if rp.uuid not in proven]
            earliest.append(self._prove_listed(others, sharing, request_id))
            for rp in others:
                proven.append(rp.uuid)
                if rp.uuid not in shown:
                    # As nova: a sharing provider is shown as a root, whatever its parent.
                    self._track(rp.uuid, sharing=True)
        # Stamped when the proof is done, as nova stamps its refresh: the
        # window counts from the answers that proved the tree, not from the
        # call (a proof taking a moment would otherwise go stale a period early);
        # a field proven with an older class listing holds only as of that one.
        self._refresh(proven, min([self._clock(), *(t for t in earliest if t is not None)]))

    def _sharing(self, aggregates: Sequence[str], request_id: str | None) -> list[TreeListing]:
        """The providers sharing through any of ``aggregates``, a query per 200 of them."""
        out = []
        for at in range(0, len(aggregates), _AGGREGATES_PER_QUERY):
            chunk = aggregates[at : at + _AGGREGATES_PER_QUERY]
            query = {"member_of": "in:" + ",".join(chunk), "required": SHARES_VIA_AGGREGATE}
            out.append(self._gateway.list_dated(query, request_id))
        return out

    def _prove_listed(
        self, providers: Iterable[ResourceProvider], listing: TreeListing, request_id: str | None
    ) -> float | None:
        """Prove every field of ``providers`` from ``listing``, reading what it cannot prove.

        :returns: the time the proof counts from when a field was proven
            with an older class listing (:class:`~.prover.FieldProver`); None: now.
        """
        prover = FieldProver(self._ops, self._clock(), self._window(), request_id)
        for rp in providers:
            kept = prover.kept(rp, listing, FIELD_KINDS)
            if kept is None:
                continue  # deleted since the listing: the view drops it when next shown
            for kind in FIELD_KINDS:
                if kind not in kept:
                    self._read(kind, rp.uuid, request_id)
        return prover.earliest

    # -- flushing ---------------------------------------------------------------------------
    def plan(
        self,
        specs: Iterable[ProviderSpec],
        *,
        scope: str | None = None,
        request_id: str | None = None,
    ) -> FlushPlan:
        """What flushing ``specs`` does to the providers, against the view as it is now.

        The steps that carry it out, in nova's order, are :meth:`create`,
        then (for a reshape) :meth:`reshape`, :meth:`delete`, and
        :meth:`write` for each described provider, leaves first;
        :meth:`flush` runs them all. A caller that must tell the steps'
        failures apart (nova's adapter raises a different exception for
        each) calls them one by one.

        :param scope: a root whose subtree is all ``specs`` describe (nova's
            ``ProviderSubTree``); None: ``specs`` describe the whole view.
        :raises InvalidInput: a malformed description (before any request).
        """
        described = describe(specs)
        return flush_plan(self.current(request_id=request_id), described, scope)

    def flush(
        self,
        specs: Iterable[ProviderSpec],
        *,
        scope: str | None = None,
        request_id: str | None = None,
    ) -> TreeView:
        """Make Placement hold ``specs``, writing only what differs from the view.

        :returns: the view afterwards.
        :raises ProviderChanged: a field to write was changed by another
            writer since the view proved it; nothing of it was written.
        :raises ProviderInUse: a provider to delete has allocations.
        :raises InventoryInUse: an inventory to remove or shrink is allocated.
        """
        plan = self.plan(specs, scope=scope, request_id=request_id)
        self.create(plan, request_id=request_id)
        self.delete(plan, request_id=request_id)
        for spec in reversed(plan.described):
            self.write(plan, spec.uuid, request_id=request_id)
        return self.current(request_id=request_id)

    def create(self, plan: FlushPlan, *, request_id: str | None = None) -> None:
        """Create the providers ``plan`` adds, parents first, and show every root it describes.

        One the view lacks but Placement has (another writer created it, or
        it is in a tree this view never listed) is proven as it is, as nova's
        ``_ensure_resource_provider`` does.

        :raises DuplicateName: another provider holds a name to create.
        """
        for spec in plan.add:
            self._add(spec, request_id)
        for spec in plan.described:
            if spec.parent is None:
                self._track(spec.uuid)

    def delete(self, plan: FlushPlan, *, request_id: str | None = None) -> None:
        """Delete the providers ``plan`` removes, leaves first (one already gone is skipped).

        :raises ProviderInUse: one still has allocations (or a child).
        """
        for uuid in plan.remove:
            try:
                self._ops.delete_provider(uuid, global_request_id=request_id)
            except ProviderNotFound:
                pass  # gone already: what was wanted
            self._drop_root(uuid)

    def write(self, plan: FlushPlan, uuid: str, *, request_id: str | None = None) -> None:
        """Write each field of ``uuid`` that its spec in ``plan`` says differently than the view.

        Each at the generation the view proved it at; a conflict reads the
        field again and writes from there only if it still holds what the
        view showed before the flush (the caller's tree was computed from
        that), or already holds what the spec says.

        :raises ProviderChanged: another writer changed a field to write;
            nothing of that field was written.
        :raises InventoryInUse: an inventory to remove or shrink is allocated.
        """
        spec = next((s for s in plan.described if s.uuid == uuid), None)
        if spec is None:
            raise InvalidInput(f"the flush plan does not describe provider {uuid}")
        record = self._gateway.provider_record(uuid)
        if record is None:
            return  # deleted meanwhile by another writer; its tree is proven next time
        held = self._provider(record, False, request_id)
        base = plan.old.get(uuid) or held
        for kind, wanted in field_writes(held, spec):
            self._ensure(kind, wanted, view_value(held, kind), plan.ensured, request_id)
            self._write(kind, uuid, view_value(base, kind), wanted, request_id)

    def write_field(
        self, uuid: str, kind: type[Snapshot], value: Any, *, request_id: str | None = None
    ) -> bool:
        """Make one field of a provider in view ``value``, as a flush writes it.

        nova's ``set_inventory_for_provider`` and friends on its cache:
        nothing is sent when the view already holds ``value``; otherwise the
        write goes at the generation the view proved the field at, three-way
        on a conflict (:meth:`write`).

        :returns: whether anything was written.
        :raises InvalidInput: the provider is not in the view, or a bad value.
        :raises ProviderChanged: another writer changed the field since the view.
        """
        uuid = validate_uuid(uuid, "uuid")
        record = self._gateway.provider_record(uuid)
        if record is None or uuid not in {rp.uuid for rp, _sharing in self.shown()}:
            raise InvalidInput(f"provider {uuid} is not in the view")
        (spec,) = describe([ProviderSpec(uuid, record.name, None, **{kind.ROUTE: value})])
        held = self._provider(record, False, request_id)
        changes = field_writes(held, spec)
        for changed, wanted in changes:
            self._ensure(changed, wanted, view_value(held, changed), set(), request_id)
            self._write(changed, uuid, view_value(held, changed), wanted, request_id)
        return bool(changes)

    def _proven_inventories(self, uuid: str) -> int:
        """The generation the view holds the provider's inventories at (0: created, unread)."""
        entry = self._gateway.fields.entry(uuid, ProviderInventories)
        return entry[0].generation if entry is not None else 0

    def _add(self, spec: ProviderSpec, request_id: str | None) -> None:
        try:
            self._ops.create_provider(spec.name, spec.uuid, spec.parent, request_id)
        except DuplicateName:
            # Its uuid may exist already (created by another writer, or in a
            # tree this view never listed): prove it as it is, like nova.
            self._prove(spec.uuid, None, None, request_id)
            if self._gateway.provider_record(spec.uuid) is None:
                raise
        self._refresh([spec.uuid], self._clock())

    def _ensure(
        self,
        kind: type[Snapshot],
        wanted: Any,
        held: Any,
        ensured: set[tuple[str, str]],
        request_id: str | None,
    ) -> None:
        """Create the custom classes or traits a write names that the provider does not hold.

        Each at most once per flush; a name the provider already holds exists.
        """
        if kind is ProviderAggregates:
            return
        route = "resource_classes" if kind is ProviderInventories else "traits"
        for name in sorted(set(wanted) - set(held)):
            # A trait and a resource class may share a name: each is its own.
            if name.startswith("CUSTOM_") and (route, name) not in ensured:
                self._gateway.ensure(route, name, request_id)
                ensured.add((route, name))

    def _write(
        self, kind: type[Snapshot], uuid: str, base: Any, wanted: Any, request_id: str | None
    ) -> None:
        """Write ``wanted`` where the view proved ``base``; on a conflict, three-way (docstring)."""
        entry = self._gateway.fields.entry(uuid, kind)
        start = entry[0] if entry is not None else None
        any_kind: Any = kind
        self._ops.change(
            any_kind,
            uuid,
            lambda _current: wanted,
            idempotent=True,
            start=start,
            start_read=False,
            base=base,
            global_request_id=request_id,
        )

    def reshape(
        self,
        plan: FlushPlan,
        generations: Mapping[str, int],
        allocations: Mapping[str, Mapping[str, Any]],
        *,
        request_id: str | None = None,
    ) -> None:
        """Move inventories and allocations in one ``POST /reshaper``, at the caller's generations.

        Every described provider gets its spec's inventories, and every
        provider ``plan`` removes gets none, in the same request as the
        allocations move (nova's ``_set_up_and_do_reshape``). The
        allocations were computed by the caller from what it read, and the
        library cannot tell what they would have been from anything else,
        so a moved generation is never retried here: the caller reads again.

        :param generations: each provider's generation as the caller's tree
            carries it (a provider this flush created: as created).
        :param allocations: nova's ``{consumer: {"allocations": {rp:
            {"resources": ...}}, "consumer_generation": ..., "project_id":
            ..., "user_id": ...}}``, as ``GET /allocations/{consumer}`` shapes it.
        :raises GenerationConflict: a provider or consumer moved since.
        :raises InventoryInUse: inventories would go from under allocations.
        """
        described, old, removed = plan.described, plan.old, plan.remove
        gateway = self._gateway
        if not gateway.supports(RESHAPER_VERSION):
            raise MicroversionUnsupported(
                "POST /reshaper needs microversion {}.{}".format(*RESHAPER_VERSION)
            )
        inventories: dict[str, Any] = {}
        ensured = plan.ensured
        for spec in described:
            # Normalized by describe(): every value is an Inventory.
            invs = {rc: Inventory.of(inv) for rc, inv in (spec.inventories or {}).items()}
            self._ensure(ProviderInventories, invs, (), ensured, request_id)
            # The generation the view proved the inventories at; the caller's,
            # when its tree is older than that (then the reshape meets a 409).
            proven = self._proven_inventories(spec.uuid)
            generation = min(generations.get(spec.uuid, proven), proven)
            inventories[spec.uuid] = ProviderInventories(spec.uuid, generation).body(invs)
        for uuid in removed:
            if uuid in old:
                proven = self._proven_inventories(uuid)
                inventories[uuid] = ProviderInventories(uuid, proven).body({})
        send_type = gateway.supports(CONSUMER_TYPE_VERSION)
        body_allocations: dict[str, Any] = {}
        writes = []
        for consumer, record in allocations.items():
            consumer = validate_uuid(consumer, "consumer")
            wanted = {
                validate_uuid(rp, "provider"): dict(entry["resources"])
                for rp, entry in (record.get("allocations") or {}).items()
            }
            for res in wanted.values():
                self._ensure(ProviderInventories, res, (), ensured, request_id)
            try:
                project, user = record["project_id"], record["user_id"]
            except KeyError as exc:
                raise InvalidInput(f"reshape allocations of {consumer} lack {exc}") from exc
            known = gateway.consumer_known(consumer)
            ctype = record.get("consumer_type") or (known.consumer_type if known else None)
            ctype = ctype or "INSTANCE"
            entry: dict[str, Any] = {
                "allocations": {rp: {"resources": res} for rp, res in wanted.items()},
                "consumer_generation": record.get("consumer_generation"),
                "project_id": project,
                "user_id": user,
            }
            if send_type:
                entry["consumer_type"] = ctype
            body_allocations[consumer] = entry
            writes.append(
                (
                    AllocationWrite(
                        consumer,
                        wanted,
                        record.get("consumer_generation"),
                        project,
                        user,
                        ctype if send_type else None,
                    ),
                    ctype,
                )
            )
        gateway.reshape(
            {"inventories": inventories, "allocations": body_allocations},
            writes,
            list(inventories),
            list(body_allocations),
            send_type=send_type,
            request_id=request_id,
        )
