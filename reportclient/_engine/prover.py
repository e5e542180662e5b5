"""Proving cached provider fields from a listing, for the tree view and the agent setting.

The rules are :mod:`.proofs` (pure); this is the I/O they ask for, written
once for both callers: the provider's own ``GET`` when it settles two
fields or more, the resource classes' listing when an inventory naming a
custom class would otherwise be kept, and the compare-and-set re-stamp of
each field proven (:meth:`FieldView.reprove
<reportclient._gateway.provider_routes.FieldView.reprove>`). What it does
not prove, the caller reads.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from reportclient._engine.proofs import (
    Proof,
    Sight,
    ask_provider,
    catalogue_current,
    field_proof,
    proofs_by_kind,
    restamp,
    sight_of,
)
from reportclient._engine.provider_ops import ProviderOps
from reportclient._gateway.class_record import ClassListing
from reportclient._gateway.gateway import Snapshot, TreeListing
from reportclient._model.providers import ResourceProvider
from reportclient.errors import ProviderNotFound

__all__ = ["FieldProver", "Kept"]

#: A field proven without a read: its snapshot, and when (the client's clock) it counts from.
Kept = tuple[Snapshot, float]
#: A field's cache entry and what a proof compares of it (generation, server time of its proof).
_Taken = tuple[Snapshot | None, tuple[int, float | None] | None]


class FieldProver:
    """Proves fields of listed providers for one caller's pass, counting what it sends.

    :param ops: the client's provider operations (gateway, cache, assumptions).
    :param now: the client's clock for this pass.
    :param window: the caller's window (seconds), for how long a class listing serves.
    """

    def __init__(self, ops: ProviderOps, now: float, window: float, request_id: str | None) -> None:
        self._ops = ops
        self._now = now
        self._window = window
        self._request_id = request_id
        #: Requests this prover sent (provider reads, class listings).
        self.requests = 0
        #: The earliest time a field was stamped at before this pass (it was proven
        #: with an older class listing); None: every field kept is proven as of now.
        self.earliest: float | None = None

    def kept(
        self,
        rp: ResourceProvider,
        listing: TreeListing,
        kinds: Iterable[type[Snapshot]],
        settled: Collection[type[Snapshot]] = (),
    ) -> dict[type[Snapshot], Kept] | None:
        """The fields of ``kinds`` that ``listing`` (and what it leads to) proves, re-stamped.

        :param settled: fields the caller holds for another reason (young by
            its window): re-stamped when the listing proves them, never the
            reason for a read of the provider.
        :returns: None when the provider's own read found it deleted since the listing.
        """
        assumptions = self._ops.assumptions
        taken = {kind: self._taken(rp.uuid, kind) for kind in kinds}
        sights = {
            kind: Sight.LISTING if snap is None else sight_of(kind, snap.value, assumptions)
            for kind, (snap, _at) in taken.items()
        }
        catalogue = self._catalogue_for(rp, listing, taken, sights)
        proofs = self._proofs(taken, sights, rp.generation, listing.modified, catalogue)
        answered = {kind: listing.answered for kind in taken}
        unsettled = [p for kind, p in proofs.items() if kind not in settled]
        if ask_provider(unsettled):
            self.requests += 1
            try:
                own = self._ops.read_provider(rp.uuid, self._request_id)
            except ProviderNotFound:
                return None  # deleted since the listing
            one = own.providers[0]
            for kind, proof in proofs.items():
                if proof is Proof.CHECK:
                    taken[kind] = self._taken(rp.uuid, kind)
                    again = self._proofs(
                        {kind: taken[kind]}, sights, one.generation, own.modified, catalogue
                    )[kind]
                    proofs[kind] = Proof.KEEP if again is Proof.KEEP else Proof.READ
                    answered[kind] = own.answered
        out: dict[type[Snapshot], Kept] = {}
        for kind, proof in proofs.items():
            snapshot = taken[kind][0]
            if proof is not Proof.KEEP or snapshot is None:
                continue
            stamp = restamp(self._now, answered[kind], sights[kind], catalogue)
            if self._ops.cache.reprove(snapshot, stamp.taken_at, stamp.proven):
                out[kind] = (snapshot, stamp.taken_at)
                if stamp.taken_at < self._now and (
                    self.earliest is None or stamp.taken_at < self.earliest
                ):
                    self.earliest = stamp.taken_at
        return out

    def _taken(self, uuid: str, kind: type[Snapshot]) -> _Taken:
        cache = self._ops.cache
        entry = cache.entry(uuid, kind)
        if entry is None:
            return None, None
        return entry[0], (entry[0].generation, cache.proven(uuid, kind))

    @staticmethod
    def _proofs(
        taken: dict[type[Snapshot], _Taken],
        sights: dict[type[Snapshot], Sight],
        listed: int,
        modified: float | None,
        catalogue: ClassListing | None,
    ) -> dict[type[Snapshot], Proof]:
        cached = {kind: entry for kind, (_snap, entry) in taken.items()}
        return proofs_by_kind(cached, listed, modified, sights, catalogue)

    def _catalogue_for(
        self,
        rp: ResourceProvider,
        listing: TreeListing,
        taken: dict[type[Snapshot], _Taken],
        sights: dict[type[Snapshot], Sight],
    ) -> ClassListing | None:
        """The class listing, listed again only when a field it would vouch for could be kept.

        A field the tree listing already condemns (another generation, a
        change within the margin) is read whatever the classes say, so it
        asks for no listing of them.
        """
        waiting: Sequence[float | None] = [
            cached[1]
            for kind, (_snap, cached) in taken.items()
            if sights[kind] is Sight.CATALOGUE
            and cached is not None
            and field_proof(cached, rp.generation, listing.modified) is not Proof.READ
        ]
        if not waiting:
            return None
        last = self._ops.gateway.class_listing()
        if catalogue_current(last, self._now, self._window, waiting):
            return last
        self.requests += 1
        return self._ops.list_classes(self._request_id)
