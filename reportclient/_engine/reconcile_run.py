"""One reconcile call on the engine: list, plan (:mod:`.reconcile_plan`), then send.

:class:`Run` holds one call's state (its request count, what it created,
updated, wrote, deleted and left alone) and does the I/O the pure plan
decides, through the engine's provider operations
(:class:`~reportclient._engine.provider_ops.ProviderOps`), never a client.
:mod:`.reconcile` says what a call does and what the agent setting trusts;
this module is how.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reportclient._engine.provider_ops import UNSET, ProviderOps
from reportclient._engine.reconcile_fields import FieldSteps
from reportclient._engine.reconcile_plan import (
    PruneVerdict,
    Step,
    is_reparenting,
    kept_by_refusal,
    needs_update,
    provider_steps,
    prune_plan,
    prune_verdict,
)
from reportclient._gateway.gateway import TreeListing
from reportclient._model.microversions import REPARENT_VERSION, Microversion
from reportclient._model.provider_tree import ProviderSpec, ReconcileReport
from reportclient._model.providers import ResourceProvider
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


class Run(FieldSteps):
    """One reconcile call's state (its request count and what it has proven), and its steps.

    Providers (list, check, create, rename, re-parent) and prune are here;
    the field steps are :class:`~.reconcile_fields.FieldSteps`.
    """

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
        parent = spec.parent if rp.parent_provider_uuid != spec.parent else UNSET
        self.requests += 1
        try:
            updated = self.client.update_provider(spec.uuid, spec.name, parent, self.request_id)
        except DuplicateName as exc:
            raise self._name_held(spec, exc) from exc
        self.updated.append(updated.uuid)
        return updated

    def _create(self, spec: ProviderSpec) -> ResourceProvider:
        self.requests += 1
        try:
            rp = self.client.create_provider(spec.name, spec.uuid, spec.parent, self.request_id)
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


#: The attributes of a PlacementError that describe its request (its
#: keyword arguments of the same names).
_REQUEST_FIELDS = ("status", "code", "title", "detail", "request_id", "method", "url")


def _where(exc: PlacementError) -> dict[str, Any]:
    """What an error says about its request, to carry into one that explains it better."""
    return {name: getattr(exc, name) for name in _REQUEST_FIELDS}
