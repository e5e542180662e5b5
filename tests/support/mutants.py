"""Each fix of the one-engine issue, reverted alone: a pytest plugin for proving the tests bite.

``pytest -p tests.support.mutants`` with ``REPORTCLIENT_MUTANT=<name>`` (or
``<name>+<name>`` where two rules guard one fix) puts one fix back the way
it was before (in this process only, by replacing one engine
function), so the scenario test written for that fix must fail.
``tests/functional/test_mutants.py`` runs each scenario under its mutant
in a subprocess and asserts exactly that; without the variable the plugin
does nothing.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reportclient._engine import (
    batch_write,
    consumer_write,
    field_write,
    guarded_write,
    moves,
)
from reportclient._engine.fate import Evidence
from reportclient._gateway import consumer_cache, gateway
from reportclient._model import providers


def _field_ignores_premise() -> None:
    """Scenario 1: a provider at the carried generation is taken for the same provider."""
    original = field_write.FieldWrite.evidence

    def evidence(self: Any, sent: Any, state: Any) -> Iterator[Evidence]:
        for e in original(self, sent, state):
            yield dataclasses.replace(e, as_premised=True)

    field_write.FieldWrite.evidence = evidence  # type: ignore[method-assign]


def _consumer_ignores_premise() -> None:
    """Scenarios 2, 3: a consumer at the carried generation is taken for the same consumer."""
    original = consumer_write.consumer_evidence

    def evidence(write: Any, premise: Any, state: Any) -> Evidence:
        return dataclasses.replace(original(write, premise, state), as_premised=True)

    consumer_write.consumer_evidence = evidence
    batch_write.consumer_evidence = evidence


def _missing_proves_a_create_pending() -> None:
    """Scenarios 4, 5: a new consumer still missing is taken for "not landed yet"."""
    original = consumer_write.consumer_evidence

    def evidence(write: Any, premise: Any, state: Any) -> Evidence:
        found = original(write, premise, state)
        if write.consumer_generation is None and not state.exists:
            return Evidence(carried=0, seen=0, as_premised=True, as_written=False)
        return found

    consumer_write.consumer_evidence = evidence
    batch_write.consumer_evidence = evidence


def _release_empties_what_it_finds() -> None:
    """Scenario 3: a release empties whatever a re-read shows (no premise of its own)."""
    consumer_write.ConsumerWrite._check_release = lambda self, state: None  # type: ignore[method-assign]


def _move_adds_to_a_missing_target() -> None:
    """Scenario 6: expect_target is added to whatever the target holds now."""
    original = moves.plan_move

    def plan_move(source: str, target: str, **kwargs: Any) -> Any:
        expected = kwargs.pop("expect_target", None)
        made = original(source, target, **kwargs)
        if not expected:
            return made

        def plan(states: Any) -> Any:
            desired = made.plan(states)
            summed = {rp: dict(res) for rp, res in expected.items()}
            for rp, res in desired[target].items():
                for rc, amount in res.items():
                    summed.setdefault(rp, {})[rc] = summed.get(rp, {}).get(rc, 0) + amount
            return {**desired, target: summed}

        return dataclasses.replace(made, plan=plan)

    moves.plan_move = plan_move
    from reportclient._clients import batches

    batches.plan_move = plan_move  # type: ignore[attr-defined]


def _callback_errors_pass_through() -> None:
    """Scenario 7: a caller's exception ends the operation as itself, though a write is open."""

    def _plan(self: Any, state: Any, fresh: bool) -> Any:
        return self.plan(state, fresh)

    guarded_write.GuardedWrite._plan = _plan  # type: ignore[method-assign]


def _cache_takes_the_last_answer() -> None:
    """Scenario 8: whatever answer is processed last wins, however old its request."""
    original = consumer_cache.ConsumerCache.put

    def put(self: Any, state: Any, *, trusted: bool = True, **_ordering: Any) -> None:
        original(self, state, trusted=trusted)

    consumer_cache.ConsumerCache.put = put  # type: ignore[method-assign]


def _reshape_leaves_the_consumer_cache() -> None:
    """Scenario 9: a reshape's allocation writes are not cached."""

    original = gateway.Gateway.reshape

    def reshape(self: Any, body: Any, writes: Any, *args: Any, **kwargs: Any) -> None:
        original(self, body, [], *args, **kwargs)

    gateway.Gateway.reshape = reshape  # type: ignore[method-assign]


def _ratio_compared_as_sent() -> None:
    """Scenario 10: allocation ratios compared as Python floats, not as MariaDB stores them."""
    providers.stored_ratio = lambda ratio: float(ratio)


def _callbacks_unchecked() -> None:
    """Scenario 11: whatever update_inventories' mutate returns is used as it is."""

    def inventories_from(value: Any, what: str) -> Any:
        return {rc: providers.Inventory.of(v) for rc, v in value.items()}

    providers.inventories_from = inventories_from
    from reportclient._clients import fields

    fields.inventories_from = inventories_from  # type: ignore[attr-defined]


MUTANTS: dict[str, Callable[[], None]] = {
    "field-ignores-premise": _field_ignores_premise,
    "consumer-ignores-premise": _consumer_ignores_premise,
    "missing-proves-a-create-pending": _missing_proves_a_create_pending,
    "release-empties-what-it-finds": _release_empties_what_it_finds,
    "move-adds-to-a-missing-target": _move_adds_to_a_missing_target,
    "callback-errors-pass-through": _callback_errors_pass_through,
    "cache-takes-the-last-answer": _cache_takes_the_last_answer,
    "reshape-leaves-the-consumer-cache": _reshape_leaves_the_consumer_cache,
    "ratio-compared-as-sent": _ratio_compared_as_sent,
    "callbacks-unchecked": _callbacks_unchecked,
}


def pytest_configure(config: pytest.Config) -> None:
    # "a+b": a fix that two rules of the engine guard is reverted in both.
    for name in filter(None, os.environ.get("REPORTCLIENT_MUTANT", "").split("+")):
        MUTANTS[name]()
