"""Declarative reconcile: make a provider tree match a description, in the fewest requests.

What to do is decided by the pure plan (:mod:`reportclient._engine.reconcile_plan`:
which providers to create or update, what stands in for a read, what a write
carries, what to delete); this module lists, asks the plan, and sends.

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
  client's ``cache_ttl`` (see :mod:`reportclient._gateway.provider_cache` for why the
  generation alone cannot prove it), its age counted from the request that
  proved it, never from a later reconcile that trusted or carried it;
* custom resource classes and traits are ensured (``PUT``) only when a field
  about to be written names one the provider does not already hold.

The agent setting (``max_staleness``) trades proof for requests the way
nova's ``ProviderTree`` cache does, within a bounded window. A compute agent
reconciles the same tree every period and is nearly always its only writer
of inventories, traits and aggregates; what moves its providers'
generations between periods is allocations, which change none of those.
So within the window (counted from the listing that last proved the tree,
see :class:`TreeMemory`) the description is compared with what this client
last read or wrote, and only a difference is sent, at the cached
generation: an allocation since then costs a 409 and a re-read of that one
field, never a re-read of the others. Past the window the tree is proven
again: listed, and every field whose content was not proven (read or
written) within ``max_staleness`` of now is proven again, *whatever the
listing's generation says*. The generation cannot vouch for content on its
own: a provider deleted and re-created under its uuid by another writer can
be back at the cached generation holding that writer's inventories and
traits, and trusting the listing would keep them forever. What proves it is
the server's clock: the listing's ``Last-Modified`` is the newest
``updated_at``/``created_at`` of the tree's providers, which every field
write, every allocation and every re-creation moves; a tree last changed
before the field's proof (the ``Date`` of the answer that showed it, by
:data:`~.reconcile_plan.PROOF_MARGIN`) holds what the proof showed, and the
listing re-proves it for another window (:func:`~.reconcile_plan.unchanged_since`).
Otherwise, or when the server says no time, the field is read. No snapshot
stands in once it is older than the window, inside the window too. What the
window gives up is seeing another writer's change before it ends; every
field is proven at least once per window.

What that costs a steady agent (nothing changes, period ``p`` <= window
``w``): nothing inside the window, then one listing per tree per window;
each field is read once more only when its tree changed since its proof (an
allocation, a write). Measured with ``python -m bench fleet`` (MariaDB, 100
agents, a node and a device each, 60 s periods, ``w`` = 300): 0.17 requests
per agent-period steady, as before the re-proof; re-reading every field
once per window instead cost 1.16.

A wrong guess costs a 409 and a read, never a lost change: every write
carries the generation its content was computed from. Two agents can
reconcile the same tree at once; with ``merge=True`` each only adds and
updates what its description names, so neither removes what the other wrote.

Deleting is the last step, and only ever touches what the caller owns. A
root the description names is the caller's, and so is its whole tree: a
provider in it that is no longer described is deleted (leaves first),
unless ``merge=True`` says the tree is shared. A provider hanging from
something the description does not name as a root (another agent's compute
node, say) is never deleted for not being described. A root no longer
described cannot be told apart from another agent's root, so it is deleted
only when the caller names it in ``delete_roots``, with its whole tree.
Deleting last means a provider that still has allocations stops nothing
else: everything described is in place when ``ProviderInUse`` is raised,
every other dropped provider is deleted, and the error names the ones kept.
The listings only nominate what to delete: each nominee is read again
(``GET /resource_providers/{uuid}``) just before its DELETE, and deleted only
if it still hangs from a root the caller owns. One re-parented into another
tree meanwhile (another compute node's) is left alone and reported in
``ReconcileReport.moved``. That read is one request per provider deleted;
a reconcile that deletes nothing sends none.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from reportclient._engine.provider_ops import ProviderOps
from reportclient._engine.reconcile_run import Run, tree_anchors
from reportclient._model.provider_tree import ProviderSpec, ReconcileReport, describe
from reportclient._model.validation import validate_max_staleness, validate_uuids
from reportclient.errors import (
    InvalidInput,
    ProviderNotFound,
)

__all__ = ["AGENT_MAX_STALENESS", "ProviderOps", "TreeMemory", "reconcile"]

#: The staleness window recommended for a compute agent reconciling its own
#: tree every period: nova's ``[compute] resource_provider_association_refresh``
#: default, so an agent on this setting sees another writer's change no later
#: than nova's resource tracker would.
AGENT_MAX_STALENESS = 300.0


class TreeMemory:
    """The descriptions a client last proved whole, and when (for ``max_staleness``).

    Keyed by the trees a description touches (its anchors, see
    :func:`_tree_anchors`), each entry holds the description's shape (uuid,
    name and parent of every spec, and ``merge``) and the clock time of the
    listing that proved it. The fields' content is not held here: the
    provider cache already holds what this client last read or wrote of
    each field, which is exactly what the window trusts. An entry is
    dropped on any error, so the next reconcile proves the tree again.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._proven: dict[tuple[str, ...], tuple[frozenset[tuple[Any, ...]], float]] = {}

    def fresh(self, specs: Sequence[ProviderSpec], merge: bool, window: float) -> bool:
        """Whether ``specs`` has the shape last proven, within ``window`` seconds of its proof."""
        with self._lock:
            entry = self._proven.get(_key(specs))
        return (
            entry is not None
            and entry[0] == _shape(specs, merge)
            and self.clock() - entry[1] <= window
        )

    def remember(self, specs: Sequence[ProviderSpec], merge: bool, proven_at: float) -> None:
        with self._lock:
            self._proven[_key(specs)] = (_shape(specs, merge), proven_at)

    def forget(self, specs: Sequence[ProviderSpec]) -> None:
        with self._lock:
            self._proven.pop(_key(specs), None)


def _key(specs: Sequence[ProviderSpec]) -> tuple[str, ...]:
    return tuple(sorted(tree_anchors(specs)))


def _shape(specs: Sequence[ProviderSpec], merge: bool) -> frozenset[tuple[Any, ...]]:
    return frozenset({(s.uuid, s.name, s.parent) for s in specs} | {("merge", merge)})


def reconcile(
    client: ProviderOps,
    specs: Iterable[ProviderSpec],
    *,
    merge: bool = False,
    delete_roots: Iterable[str] = (),
    global_request_id: str | None = None,
    max_staleness: float | None = None,
    memory: TreeMemory | None = None,
) -> ReconcileReport:
    """Make the tree described by ``specs`` exist as described.

    Order of work: list every tree; create, rename and re-parent (parents
    first); bring each managed field to the description; delete what the
    caller owns and no longer describes (leaves first).

    :param merge: only add and update what the description names (classes,
        traits, aggregates), never remove others and never delete a
        provider of a described tree; for agents sharing a tree. Without it
        each managed field becomes exactly what is described, and a
        provider in a described root's tree that is not described is deleted.
    :param delete_roots: uuids of roots the caller owns and no longer
        describes: each is deleted with its whole tree (except any provider
        the description moves out of it first). One already gone is
        skipped. Never needed for children of a described root.

    Every provider to delete is read again just before its DELETE; one that
    a read shows in a tree the caller does not own (re-parented there by
    another writer since the listing) is not deleted, and is reported in
    ``moved``.
    :param max_staleness: the agent setting (None: strict, every write
        proven by a listing and a young snapshot). Seconds during which this
        client trusts the tree it last proved and what it last read or
        wrote of each field: an unchanged description then costs no request,
        a changed field one write at the cached generation (a 409 re-reads
        that field and recomputes). Past the window the tree is proven
        again: one listing per tree, and every field read whose content
        was not proven within ``max_staleness`` (a cached snapshot never
        stands in for a read longer than that, whatever the generations
        say: a re-created provider can be back at the cached one). A change
        by another writer inside the window is not seen until the window
        ends or a write conflicts; every field is read at least once per
        window. :data:`AGENT_MAX_STALENESS` (300 s, nova's
        association refresh) is the recommended value for compute agents.
    :param memory: where the client keeps the trees it proved (required
        with ``max_staleness``; ``ProviderClient`` passes its own).
    :raises InvalidInput: a malformed description or ``delete_roots``, a
        uuid both described and named in ``delete_roots`` (all before any
        request), or a named provider that is not a root (before any write).
    :raises MicroversionUnsupported: a provider that has a parent is
        described under another one (or as a root) and the client uses less
        than 1.37 (before any write when the listings show it; after the
        creates before it when the provider was in a tree not listed).
    :raises DuplicateName: another provider holds a described name; the
        message names its uuid.
    :raises ProviderInUse: (or ``CannotDeleteParent``) a provider to delete
        still has allocations (or gained a child). Raised last: everything
        described is in place and every other deletion done; the message
        names what was kept and what was done.
    :raises InventoryInUse: removing or shrinking inventory that is allocated.
    :raises GenerationConflict: conflicts outlasted the retry policy.
    :raises OutcomeUnknown: the policy gave up while a write may still land.
    """
    described = describe(specs)
    named = sorted(validate_uuids(delete_roots, "delete_roots uuid"))
    both = sorted(set(named) & {s.uuid for s in described})
    if both:
        raise InvalidInput(f"delete_roots names described providers: {', '.join(both)}")
    max_staleness = validate_max_staleness(max_staleness)
    if max_staleness is None:
        return _reconcile(Run(client, merge, global_request_id), described, named)
    if memory is None:
        raise InvalidInput("max_staleness needs a memory of the trees proven")
    if not named and memory.fresh(described, merge, max_staleness):
        run = Run(client, merge, global_request_id, max_staleness, memory.clock)
        if run.remembered(described):
            run.trusted = True
            try:
                for spec in described:
                    run.within_window(spec, max_staleness)
                return run.report()
            except ProviderNotFound:
                # Deleted behind our back (an operator, a re-created node):
                # prove and rebuild the tree now rather than fail the period.
                memory.forget(described)
                requests = run.requests
                report = _reconcile_remembered(
                    Run(client, merge, global_request_id, max_staleness, memory.clock),
                    described,
                    named,
                    memory,
                )
                return dataclasses.replace(report, requests=report.requests + requests)
            except BaseException:
                memory.forget(described)
                raise
    run = Run(client, merge, global_request_id, max_staleness, memory.clock)
    return _reconcile_remembered(run, described, named, memory)


def _reconcile_remembered(
    run: Run, described: Sequence[ProviderSpec], named: Sequence[str], memory: TreeMemory
) -> ReconcileReport:
    """Prove and reconcile the whole tree, and remember it as proven when its listing was sent."""
    proven_at = memory.clock()
    memory.forget(described)
    report = _reconcile(run, described, named)
    memory.remember(described, run.merge, proven_at)
    return report


def _reconcile(
    run: Run, described: Sequence[ProviderSpec], named: Sequence[str]
) -> ReconcileReport:
    found = run.list_trees(described, named)
    run.check(described, named, found)
    found = run.providers(described, found)
    for spec in described:
        run.fields(spec, found[spec.uuid], spec.uuid in run.created)
    run.prune(described, found, named)
    return run.report()
