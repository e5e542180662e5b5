"""What a view remembers of what it handed out: per object, per provider generation."""

from __future__ import annotations

import gc
import uuid

from reportclient._engine.handouts import Handouts
from reportclient._model.tree_view import ProviderView

RP = str(uuid.UUID(int=1))


def shown(generation: int, *traits: str) -> ProviderView:
    return ProviderView(RP, "cn", None, generation, {}, frozenset(traits))


class Tree:
    """A caller's tree (nova's ProviderTree): any weakly referable object."""


def test_an_object_handed_out_keeps_its_base_whatever_is_shown_later() -> None:
    handouts, tree = Handouts(), Tree()
    handouts.bind(tree, [shown(3, "A")])
    handouts.record([shown(4, "A", "B")])  # handed out again, to someone else
    assert handouts.bound(tree) == {RP: shown(3, "A")}
    assert handouts.bound(Tree()) is None  # another object: judged by its generations


def test_a_flush_rebases_only_the_providers_it_settled() -> None:
    handouts, tree = Handouts(), Tree()
    handouts.bind(tree, [shown(3, "A")])
    other = ProviderView(str(uuid.UUID(int=2)), "dev", RP, 1)
    handouts.rebase(tree, [other])
    assert handouts.bound(tree) == {RP: shown(3, "A"), other.uuid: other}


def test_an_object_gone_is_forgotten() -> None:
    handouts, tree = Handouts(), Tree()
    handouts.bind(tree, [shown(3)])
    del tree
    gc.collect()
    assert handouts._bound == {}


def test_two_showings_at_one_generation_that_differ_stand_for_neither() -> None:
    """An aggregate set below 1.19 changes a provider without moving its generation."""
    handouts = Handouts()
    handouts.record([shown(3, "A")])
    handouts.record([shown(3, "A")])  # the same again: still good
    assert handouts.handed(RP, 3) == (shown(3, "A"), False)
    handouts.record([shown(3, "B")])
    assert handouts.handed(RP, 3) == (None, True)
    assert handouts.last(RP) == shown(3, "B")


def test_only_the_latest_generations_are_remembered() -> None:
    handouts = Handouts()
    for generation in range(Handouts.GENERATIONS + 2):
        handouts.record([shown(generation)])
    assert handouts.handed(RP, 0) == (None, False)
    assert handouts.handed(RP, Handouts.GENERATIONS + 1)[0] is not None


def test_an_object_that_cannot_be_referenced_weakly_is_judged_by_generations() -> None:
    handouts = Handouts()
    handouts.bind(("a", "tuple"), [shown(3)])
    assert handouts.bound(("a", "tuple")) is None
