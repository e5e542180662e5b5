"""Proving a tree in view past its window: one listing, what it cannot prove read.

Past the window one listing of the tree proves what it can of each
provider (:class:`~.prover.FieldProver` over the rules of :mod:`.proofs`:
its generations and ``Last-Modified``, the provider's own when that saves
reads, the resource classes' listing for an inventory naming a custom
class), every field it cannot prove is read (each provider's aggregates,
always, unless the client assumes otherwise), and one query finds the
sharing providers of the tree's aggregates, as nova's refresh does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from reportclient._engine.prover import FieldProver
from reportclient._engine.view_state import ViewState
from reportclient._gateway.gateway import FIELD_KINDS, TreeListing
from reportclient._model.providers import ProviderAggregates, ResourceProvider
from reportclient.errors import DuplicateName

__all__ = ["SHARES_VIA_AGGREGATE", "ViewProof"]

#: The trait of a provider that shares its inventory with its aggregates' members.
SHARES_VIA_AGGREGATE = "MISC_SHARES_VIA_AGGREGATE"
#: Aggregates per sharing-provider query (nova's ``sharing_providers_max_uuids_per_request``
#: default): a longer ``member_of=in:`` would outgrow a URL.
_AGGREGATES_PER_QUERY = 200


class ViewProof(ViewState):
    """A tree listed and proven: what :meth:`TreeViews.ensure` does past the window."""

    def _prove(
        self,
        uuid: str,
        name: str | None,
        parent: str | None,
        request_id: str | None,
        *,
        create: bool = True,
    ) -> None:
        """List ``uuid``'s tree and prove what it holds; create ``uuid`` when it has none.

        :param create: False: a provider Placement lacks is left missing (a
            flush proving a tree it was handed from elsewhere, or one whose
            create was refused for its name, creates nothing under another name).
        """
        listing = self._gateway.list_tree(uuid, request_id)
        if not listing.providers:
            if not create:
                return
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
