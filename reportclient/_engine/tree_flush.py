"""Flushing a caller's tree against the tree the view handed out: create, delete, write.

A flush writes what the caller's tree changed relative to the tree it was
computed from (:func:`~.view_plan.base_of`: the object handed out knows
its own; a copy or a tree from elsewhere is judged by the generations it
carries), each field at the generation the view proved it at. When
Placement has moved on (an allocation, another writer) the field is read
again and written from there only if it still holds that base (nobody else
wrote it): otherwise nothing is written and
:class:`~reportclient.errors.ProviderChanged` says so (nova's
``ResourceProviderUpdateConflict``: read the tree again and recompute). A
field the caller did not change is not written, whatever another writer
made of it since; a provider the caller's tree never saw is never removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from reportclient._compat import Unpack
from reportclient._engine.tree_proof import ViewProof
from reportclient._engine.view_plan import (
    Bases,
    FlushPlan,
    field_writes,
    flush_plan,
    view_value,
)
from reportclient._gateway.gateway import Snapshot
from reportclient._model.consumers import AllocationWrite
from reportclient._model.microversions import CONSUMER_TYPE_VERSION, RESHAPER_VERSION
from reportclient._model.provider_tree import ProviderSpec, describe
from reportclient._model.providers import Inventory, ProviderAggregates, ProviderInventories
from reportclient._model.tree_view import TreeView
from reportclient._model.validation import validate_uuid
from reportclient.errors import (
    DuplicateName,
    InvalidInput,
    MicroversionUnsupported,
    ProviderChanged,
    ProviderNotFound,
)

__all__ = ["FlushOf", "ViewFlush"]


class FlushOf(TypedDict, total=False):
    """What a caller's tree is and where it came from, for :meth:`ViewFlush.plan` and ``flush``.

    :param scope: a root whose subtree is all the tree describes (nova's
        ``ProviderSubTree``); None (the default): it describes the whole view.
    :param request_id: the global request id sent with every request.
    :param holder: the object the caller was handed and changed
        (:meth:`~.tree_views.TreeViews.bind`): its changes are what differs
        from what it was handed.
    :param generations: the generation the caller's tree carries for each
        provider (nova's ``ProviderTree`` carries one), which judges a tree
        this view did not hand out in ``holder``: a provider carried at a
        generation this view neither showed nor holds now is a stale view.
    """

    scope: str | None
    request_id: str | None
    holder: object | None
    generations: Mapping[str, int | None] | None


class ViewFlush(ViewProof):
    """The flush steps of a view, in nova's order: :meth:`create`, :meth:`reshape`,
    :meth:`delete`, :meth:`write` per provider; :meth:`flush` runs them all."""

    def plan(self, specs: Iterable[ProviderSpec], **of: Unpack[FlushOf]) -> FlushPlan:
        """What flushing ``specs`` does to the providers, against the tree the caller saw.

        The steps that carry it out, in nova's order, are :meth:`create`,
        then (for a reshape) :meth:`reshape`, :meth:`delete`, and
        :meth:`write` for each described provider, leaves first, then
        :meth:`settle`; :meth:`flush` runs them all. A caller that must tell
        the steps' failures apart (nova's adapter raises a different
        exception for each) calls them one by one.

        :param of: what the tree is and where it came from (:class:`FlushOf`).
        :raises InvalidInput: a malformed description (before any request).
        :raises ProviderChanged: the caller's tree is a stale view that would
            write a field or remove a provider; nothing was written.
        """
        described = describe(specs)
        scope, request_id = of.get("scope"), of.get("request_id")
        holder = of.get("holder")
        carried = dict(of.get("generations") or {})
        shown = {rp.uuid for rp, _sharing in self.shown()}
        for spec in described:
            # A tree from elsewhere naming a provider this view does not show
            # (a new client, say): prove it first, to judge the tree by it.
            if carried.get(spec.uuid) is not None and spec.uuid not in shown:
                self._prove(spec.uuid, None, None, request_id, create=False)
                shown = {rp.uuid for rp, _sharing in self.shown()}
        current = self.current(request_id=request_id)
        handouts = self._handouts
        bases = Bases(
            handouts.bound(holder),
            carried,
            {
                uuid: handouts.handed(uuid, generation)
                for uuid, generation in carried.items()
                if generation is not None
            },
            {p.uuid: last for p in current if (last := handouts.last(p.uuid)) is not None},
        )
        plan = flush_plan(current, described, scope, bases)
        if plan.stale:
            uuid = plan.stale[0]
            now = current.get(uuid)
            raise ProviderChanged(
                f"provider {uuid}: the tree to flush was not computed from this view "
                f"(it carries generation {carried.get(uuid)}; the view holds "
                f"{None if now is None else now.generation}), so what it changed cannot be "
                "told from what another writer changed. Nothing was written: read the tree "
                "again and recompute",
                state=now,
                known=carried.get(uuid),
            )
        return plan

    def flush(self, specs: Iterable[ProviderSpec], **of: Unpack[FlushOf]) -> TreeView:
        """Make Placement hold ``specs``, writing only what the caller changed (see :meth:`plan`).

        :returns: the view afterwards.
        :raises ProviderChanged: a field to write was changed by another
            writer since the caller's tree was handed out (nothing of it was
            written; the flush of ``holder`` starts from what was read, as
            nova's callers expect on their next try), or the tree is stale.
        :raises ProviderInUse: a provider to delete has allocations.
        :raises InventoryInUse: an inventory to remove or shrink is allocated.
        """
        plan = self.plan(specs, **of)
        request_id, holder = of.get("request_id"), of.get("holder")
        self.create(plan, request_id=request_id)
        self.delete(plan, request_id=request_id)
        for spec in reversed(plan.described):
            try:
                self.write(plan, spec.uuid, request_id=request_id)
            except ProviderChanged:
                self.settle(plan, holder=holder, uuids=[spec.uuid], request_id=request_id)
                raise
        return self.settle(plan, holder=holder, request_id=request_id)

    def settle(
        self,
        plan: FlushPlan,
        *,
        holder: object | None = None,
        uuids: Iterable[str] | None = None,
        request_id: str | None = None,
    ) -> TreeView:
        """The flush left these providers (default: all it describes) as the view holds them.

        What the caller flushes next (``holder`` again, or a tree carrying
        these generations) is computed from them: a conflict that read a
        field told the caller, whose next flush of the same tree writes over
        it on purpose, as with nova's client.

        :returns: the view afterwards.
        """
        view = self.current(request_id=request_id)
        wanted = {spec.uuid for spec in plan.described} if uuids is None else set(uuids)
        self._handouts.rebase(holder, [p for p in view if p.uuid in wanted])
        return view

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
        """Write each field of ``uuid`` that its spec in ``plan`` changed from the caller's base.

        Each at the generation the view proved it at; when the view, or a
        conflict's read, shows the field no longer holding that base (another
        writer changed it) and not already what the spec says, nothing is
        written.

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
        # What the caller changed relative to what its tree was computed from:
        # a field another writer changed since, the caller left alone, is kept.
        for kind, wanted in field_writes(base, spec):
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
            self._prove(spec.uuid, None, None, request_id, create=False)
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
