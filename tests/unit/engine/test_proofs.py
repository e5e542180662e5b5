"""What proves a cached field without reading it, tabled (issue 53: every write Placement
accepts, and which of them no listing sees)."""

from __future__ import annotations

import pytest

from reportclient import ProofAssumption
from reportclient._engine.proofs import (
    CATALOGUE_REUSE,
    PROOF_MARGIN,
    Proof,
    Sight,
    ask_provider,
    catalogue_current,
    catalogue_proves,
    field_proof,
    restamp,
    sight_of,
)
from reportclient._gateway.class_record import ClassListing
from reportclient._model.assumptions import validate_assumptions
from reportclient._model.providers import (
    Inventory,
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
)
from reportclient.errors import InvalidInput

PROVEN = 10_000.0


@pytest.mark.parametrize(
    ("cached", "listed", "modified", "expected"),
    [
        (None, 3, PROVEN - 60, Proof.READ),  # never cached (or forgotten, in doubt)
        ((2, PROVEN), 3, PROVEN - 60, Proof.READ),  # another generation: an allocation or a write
        ((4, PROVEN), 3, PROVEN - 60, Proof.READ),  # a lower one: re-created, or older answer
        ((3, PROVEN), 3, PROVEN - 60, Proof.KEEP),  # same, and the tree quiet since the proof
        ((3, PROVEN), 3, PROVEN - PROOF_MARGIN, Proof.KEEP),  # exactly the margin
        ((3, PROVEN), 3, PROVEN - 1, Proof.READ),  # changed within the margin: most often
        ((3, PROVEN), 3, PROVEN + PROOF_MARGIN, Proof.READ),  # the proof's own change
        ((3, PROVEN), 3, PROVEN + 60, Proof.CHECK),  # well after: maybe a sibling's
        ((3, None), 3, PROVEN - 60, Proof.READ),  # the proof's time unknown
        ((3, PROVEN), 3, None, Proof.READ),  # the server said no Last-Modified
    ],
)
def test_what_a_listing_proves_of_a_cached_field(
    cached: tuple[int, float | None] | None,
    listed: int,
    modified: float | None,
    expected: Proof,
) -> None:
    assert field_proof(cached, listed, modified) is expected


@pytest.mark.parametrize(
    ("proofs", "expected"),
    [
        ([Proof.KEEP, Proof.KEEP, Proof.KEEP], False),
        ([Proof.CHECK, Proof.KEEP, Proof.READ], False),  # one check costs what one read does
        ([Proof.CHECK, Proof.CHECK, Proof.READ], True),
        ([Proof.CHECK, Proof.CHECK, Proof.CHECK], True),
        ([Proof.READ, Proof.READ, Proof.READ], False),
    ],
)
def test_the_provider_is_read_only_when_it_saves_field_reads(
    proofs: list[Proof], expected: bool
) -> None:
    assert ask_provider(proofs) is expected


AGGS_1_19 = ProofAssumption.AGGREGATES_AT_1_19
NO_RENAMES = ProofAssumption.NO_CLASS_RENAMES


@pytest.mark.parametrize(
    ("kind", "value", "assumed", "expected"),
    [
        # Aggregates set below 1.19 move no generation and no updated_at.
        (ProviderAggregates, {"a"}, (), Sight.READ_ONLY),
        (ProviderAggregates, set(), (), Sight.READ_ONLY),
        (ProviderAggregates, {"a"}, (AGGS_1_19,), Sight.LISTING),
        (ProviderAggregates, {"a"}, (NO_RENAMES,), Sight.READ_ONLY),
        # A custom class renamed moves no provider; standard classes cannot be renamed.
        (ProviderInventories, {"CUSTOM_GPU": Inventory(1)}, (), Sight.CATALOGUE),
        (
            ProviderInventories,
            {"VCPU": Inventory(1), "CUSTOM_GPU": Inventory(1)},
            (),
            Sight.CATALOGUE,
        ),
        (ProviderInventories, {"VCPU": Inventory(1)}, (), Sight.LISTING),
        (ProviderInventories, {}, (), Sight.LISTING),
        (ProviderInventories, {"CUSTOM_GPU": Inventory(1)}, (NO_RENAMES,), Sight.LISTING),
        # A trait in use cannot be deleted, nor renamed at all.
        (ProviderTraits, {"CUSTOM_GOLD"}, (), Sight.LISTING),
    ],
)
def test_what_it_takes_to_prove_a_field_without_reading_it(
    kind: type, value: object, assumed: tuple[ProofAssumption, ...], expected: Sight
) -> None:
    assert sight_of(kind, value, frozenset(assumed)) is expected


@pytest.mark.parametrize(
    ("sight", "catalogue", "expected"),
    [
        (Sight.READ_ONLY, True, Proof.READ),  # a quiet tree proves no aggregates
        (Sight.CATALOGUE, False, Proof.READ),  # nor a custom class name, alone
        (Sight.CATALOGUE, True, Proof.KEEP),  # with the class listing, it does
        (Sight.LISTING, False, Proof.KEEP),  # the class listing asked only where needed
    ],
)
def test_a_quiet_listing_proves_only_what_it_can_see(
    sight: Sight, catalogue: bool, expected: Proof
) -> None:
    assert field_proof((3, PROVEN), 3, PROVEN - 60, sight, catalogue) is expected


def test_a_field_no_listing_sees_is_read_even_when_the_tree_changed_well_after() -> None:
    assert field_proof((3, PROVEN), 3, PROVEN + 60, Sight.READ_ONLY) is Proof.READ
    assert field_proof((3, PROVEN), 3, PROVEN + 60, Sight.CATALOGUE, True) is Proof.CHECK


def listing(modified: float | None, answered: float | None, taken_at: float = 0.0) -> ClassListing:
    return ClassListing(frozenset({"CUSTOM_GPU"}), modified, answered, taken_at)


@pytest.mark.parametrize(
    ("classes", "proven", "expected"),
    [
        (None, PROVEN, False),  # never listed
        (listing(PROVEN - 60, PROVEN + 30), PROVEN, True),  # quiet since before, listed after
        (listing(PROVEN - PROOF_MARGIN, PROVEN + 30), PROVEN, True),  # exactly the margin
        (listing(PROVEN - 1, PROVEN + 30), PROVEN, False),  # a class changed around the proof
        (listing(PROVEN + 20, PROVEN + 30), PROVEN, False),  # renamed (or created) since
        (listing(PROVEN - 60, PROVEN - 10), PROVEN, False),  # listed before the proof
        (listing(None, PROVEN + 30), PROVEN, False),  # no Last-Modified
        (listing(PROVEN - 60, None), PROVEN, False),  # no Date
        (listing(PROVEN - 60, PROVEN + 30), None, False),  # the proof's time unknown
    ],
)
def test_the_class_listing_proves_a_custom_class_was_not_renamed_since_the_proof(
    classes: ClassListing | None, proven: float | None, expected: bool
) -> None:
    assert catalogue_proves(classes, proven) is expected


WINDOW = 300.0
REUSED = WINDOW * CATALOGUE_REUSE


@pytest.mark.parametrize(
    ("classes", "now", "proven", "expected"),
    [
        (None, 1000.0, [PROVEN], False),
        (listing(0, PROVEN + 1, taken_at=1000.0), 1000.0, [PROVEN], True),
        (
            listing(0, PROVEN + 1, taken_at=1000.0),
            1000.0 + WINDOW * CATALOGUE_REUSE,
            [PROVEN],
            True,
        ),
        (
            listing(0, PROVEN + 1, taken_at=1000.0),
            1001.0 + WINDOW * CATALOGUE_REUSE,
            [PROVEN],
            False,
        ),
        (listing(0, PROVEN - 1, taken_at=1000.0), 1000.0, [PROVEN], False),  # before a proof
        (listing(0, None, taken_at=1000.0), 1000.0, [PROVEN], False),
        (listing(0, PROVEN + 1, taken_at=1000.0), 1000.0, [None], True),
    ],
)
def test_one_class_listing_serves_a_tenth_of_a_window_and_only_proofs_before_it(
    classes: ClassListing | None, now: float, proven: list[float | None], expected: bool
) -> None:
    assert catalogue_current(classes, now, WINDOW, proven) is expected


def test_a_field_proven_with_an_older_class_listing_counts_from_that_listing() -> None:
    classes = listing(0, PROVEN + 10, taken_at=900.0)
    stamp = restamp(1000.0, PROVEN + 50, Sight.CATALOGUE, classes)
    assert (stamp.taken_at, stamp.proven) == (900.0, PROVEN + 10)
    plain = restamp(1000.0, PROVEN + 50, Sight.LISTING, classes)
    assert (plain.taken_at, plain.proven) == (1000.0, PROVEN + 50)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, frozenset()),
        ([], frozenset()),
        (["aggregates_at_1_19"], frozenset({AGGS_1_19})),
        ("aggregates_at_1_19, no_class_renames", frozenset({AGGS_1_19, NO_RENAMES})),
        ((NO_RENAMES,), frozenset({NO_RENAMES})),
    ],
)
def test_assumptions_are_named_by_value_or_member(
    given: object, expected: frozenset[object]
) -> None:
    assert validate_assumptions(given) == expected


@pytest.mark.parametrize("given", [["aggregates"], 3, [None]])
def test_an_unknown_assumption_is_refused_before_anything_is_sent(given: object) -> None:
    with pytest.raises(InvalidInput):
        validate_assumptions(given)
