"""What proves a cached provider field unchanged without reading it: pure, no I/O.

The tree view (:mod:`.tree_views`) and the agent setting
(:mod:`.reconcile_fields`) save reads by proving fields from answers that
are not the field: a tree listing's generations and ``Last-Modified``, a
provider's own ``Last-Modified``, the resource classes' listing. Every rule
they share is here, tabled in ``tests/unit/engine/test_proofs.py``, and
each rests on what Placement 16.0.0 moves for every write it accepts (the
table "Every write that changes a provider" in doc/source/providers.rst, each
row shown against the real Placement in
``tests/functional/test_provider_writes_seen.py``):

* **A listing proves a field** (:func:`field_proof`) cached at the
  generation the listing shows, in a tree whose newest change (its
  ``Last-Modified``, the newest ``updated_at``/``created_at`` of its
  providers) predates the field's proof by :data:`PROOF_MARGIN`
  (:func:`unchanged_since`): every write of inventories and traits, every
  aggregate write at 1.19+, every allocation and every re-creation under
  the uuid moves those. A tree that changed well after the proof while the
  provider kept its generation is *checked* against the provider's own
  ``Last-Modified`` (:func:`ask_provider`: one read for all its fields).
* **What no listing sees** (:func:`sight_of`): aggregates set below
  microversion 1.19 move neither the generation nor ``updated_at``, so
  aggregates are always read (unless the client assumes
  :attr:`~ProofAssumption.AGGREGATES_AT_1_19`); a custom resource class
  renamed (1.2-1.6) changes every inventory naming it and moves no
  provider, so inventories that name a custom class are proven only with a
  listing of the resource classes answered after the field's proof and last
  changed before it (:func:`catalogue_proves`), unless the client assumes
  :attr:`~ProofAssumption.NO_CLASS_RENAMES`. Standard classes cannot be
  renamed (Placement refuses with 400), nor can a class or a trait in use
  be deleted (409), so nothing else hides from a listing.
* **As of when** (:func:`restamp`): a field proven with the class listing
  is proven as of the older of the two answers, so a rename just after an
  old class listing is seen within one window of it.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reportclient._gateway.class_record import ClassListing
from reportclient._gateway.gateway import Snapshot
from reportclient._model.assumptions import ProofAssumption
from reportclient._model.providers import ProviderAggregates, ProviderInventories

__all__ = [
    "CATALOGUE_REUSE",
    "PROOF_MARGIN",
    "Proof",
    "Sight",
    "ask_provider",
    "catalogue_current",
    "catalogue_proves",
    "field_proof",
    "names_custom_class",
    "proofs_by_kind",
    "restamp",
    "sight_of",
    "unchanged_since",
]

#: Seconds by which a field's proof must postdate its tree's last change, on
#: the server's clocks, for a listing to re-prove it (see :func:`unchanged_since`):
#: both times are whole seconds (HTTP dates), the database row may be read a
#: moment before the answer is dated, and several Placement hosts' clocks
#: differ by their NTP skew.
PROOF_MARGIN = 5.0

#: The fraction of a window within which one listing of the resource classes
#: serves every tree a client proves (a nova compute service of ironic nodes
#: proves a tree per node in the same period). A field proven with it is
#: stamped as of that listing, so reusing it never lengthens a window; it
#: only brings the next proof forward by at most this much of it.
CATALOGUE_REUSE = 0.1


class Proof(enum.Enum):
    """What a fresh listing makes of one cached field."""

    #: Proven again by the listing: keep it, re-stamped as of the listing.
    KEEP = "keep"
    #: Same generation, but its tree changed since its proof: the provider's
    #: own ``Last-Modified`` decides.
    CHECK = "check"
    #: Another generation, in doubt, never cached, or a write the listing
    #: cannot see may have changed it: read it.
    READ = "read"


class Sight(enum.Enum):
    """Whether a listing can see every write that could have changed a cached field."""

    #: Every write to it moves the provider's generation and ``updated_at``.
    LISTING = "listing"
    #: Inventories naming a custom class: the listing, plus a resource-class
    #: listing that proves no class was renamed since the field's proof.
    CATALOGUE = "catalogue"
    #: Aggregates: a write below 1.19 moves nothing; only a read proves them.
    READ_ONLY = "read only"


def unchanged_since(
    proven: float | None, modified: float | None, margin: float = PROOF_MARGIN
) -> bool:
    """Whether something last changed at ``modified`` is unchanged since a proof at ``proven``.

    Both are the server's times (POSIX seconds): ``proven`` the ``Date`` of the
    answer that showed a field's content, ``modified`` a ``Last-Modified``
    (a tree listing's: the newest ``updated_at`` or ``created_at`` of its
    providers; the resource classes' listing: of its classes). A thing last
    changed before the proof (by ``margin``) holds what the proof showed,
    whatever its age. None for either (a server that did not say) proves
    nothing.
    """
    return proven is not None and modified is not None and modified + margin <= proven


def names_custom_class(kind: type[Snapshot], value: Any) -> bool:
    """Whether a field's value names a custom resource class (only those can be renamed)."""
    return kind is ProviderInventories and any(str(rc).startswith("CUSTOM_") for rc in value)


def sight_of(kind: type[Snapshot], value: Any, assumptions: Collection[ProofAssumption]) -> Sight:
    """What it takes to prove a field of ``kind`` holding ``value`` without reading it."""
    if kind is ProviderAggregates:
        if ProofAssumption.AGGREGATES_AT_1_19 in assumptions:
            return Sight.LISTING
        return Sight.READ_ONLY
    if names_custom_class(kind, value) and ProofAssumption.NO_CLASS_RENAMES not in assumptions:
        return Sight.CATALOGUE
    return Sight.LISTING


def catalogue_proves(listing: ClassListing | None, proven: float | None) -> bool:
    """Whether the resource classes' ``listing`` proves no class renamed since ``proven``.

    It must have been answered after the field's proof and show every class
    last changed (``updated_at``: a rename; ``created_at``: a new class,
    perhaps under a renamed one's old name) before it, by the margin.
    """
    return (
        listing is not None
        and proven is not None
        and listing.answered is not None
        and listing.answered >= proven
        and unchanged_since(proven, listing.modified)
    )


def catalogue_current(
    listing: ClassListing | None, now: float, window: float, proven: Iterable[float | None]
) -> bool:
    """Whether ``listing`` may serve this proof, or the resource classes must be listed again.

    It serves when it was taken within :data:`CATALOGUE_REUSE` of the
    window and answered after every field proof it is to vouch for.
    """
    if listing is None or now - listing.taken_at > window * CATALOGUE_REUSE:
        return False
    if listing.answered is None:
        return False
    return all(p is None or p <= listing.answered for p in proven)


def field_proof(
    cached: tuple[int, float | None] | None,
    listed: int,
    modified: float | None,
    sight: Sight = Sight.LISTING,
    catalogue: bool = True,
) -> Proof:
    """What a listing showing the provider at ``listed`` in a tree last changed at ``modified``
    proves of a field cached at ``cached`` = (generation, server time of its proof).

    :param sight: :func:`sight_of` the field.
    :param catalogue: whether the resource classes' listing proves the
        field's class names (:func:`catalogue_proves`); asked for
        :attr:`Sight.CATALOGUE` only.
    """
    if cached is None or cached[0] != listed:
        return Proof.READ
    if sight is Sight.READ_ONLY or (sight is Sight.CATALOGUE and not catalogue):
        return Proof.READ
    proven = cached[1]
    if unchanged_since(proven, modified):
        return Proof.KEEP
    if proven is not None and modified is not None and modified > proven + PROOF_MARGIN:
        # The tree changed well after the proof: a sibling's allocation, say. The
        # provider's own Last-Modified may still predate the proof.
        return Proof.CHECK
    # The tree's last change is within the margin of the proof (or a time is
    # unknown): most often the change that proof saw, this provider's own (a
    # write answered with its content), which its own Last-Modified cannot
    # tell from a re-creation either. Only a read settles it.
    return Proof.READ


def ask_provider(proofs: Iterable[Proof]) -> bool:
    """Whether one read of the provider (its own ``Last-Modified``) saves field reads.

    It settles every field to check at once; for one field it costs what
    reading that field does, and the read proves more.
    """
    return sum(p is Proof.CHECK for p in proofs) >= 2


@dataclass(frozen=True, slots=True)
class Stamp:
    """When a re-proven field counts as proven: the client's clock and the server's."""

    taken_at: float
    proven: float | None


def restamp(
    now: float, answered: float | None, sight: Sight, catalogue: ClassListing | None
) -> Stamp:
    """The stamp of a field a listing answered at ``answered`` proves at ``now``.

    One proven with the resource classes' listing holds only as of the
    older of the two: a rename after that listing is seen within one window
    of it.
    """
    if sight is not Sight.CATALOGUE or catalogue is None:
        return Stamp(now, answered)
    taken = min(now, catalogue.taken_at)
    if answered is None or catalogue.answered is None:
        return Stamp(taken, answered if catalogue.answered is None else catalogue.answered)
    return Stamp(taken, min(answered, catalogue.answered))


def proofs_by_kind(
    cached: Mapping[type[Snapshot], tuple[int, float | None] | None],
    listed: int,
    modified: float | None,
    sights: Mapping[type[Snapshot], Sight],
    catalogue: ClassListing | None,
) -> dict[type[Snapshot], Proof]:
    """:func:`field_proof` of each field of one provider, the class listing asked where needed."""
    return {
        kind: field_proof(
            entry,
            listed,
            modified,
            sights[kind],
            catalogue_proves(catalogue, None if entry is None else entry[1]),
        )
        for kind, entry in cached.items()
    }
