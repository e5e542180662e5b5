"""The chaos storm moves a failure to Placement's findings only where orphaned rows prove it.

No cluster here: a stub stands in for the database's orphaned rows and the hosts' log, and a
stub admin for what the read back sees (a consumer whose claim landed, reading empty, with its
provider's usage still counting the claim).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from reportclient.testing._app import EVIDENCE_LOG
from tests.races.checker import OK, Checker, Op
from tests.races.test_chaos import placement_findings

RP = "5b4bb3a2-3d38-4a59-9c1e-2d5f4e8f7a10"
C = "0c5f9e64-95a4-4b0e-9d5b-1f2d3c4b5a69"
CLEANUP = "req-7d0f2b8e-0000-4000-8000-000000000000"


class Admin:
    """What the read back sees: ``C`` empty, ``RP`` using ``usage`` with no allocation listed."""

    def __init__(self, usage: int) -> None:
        self.usage = usage

    def get_allocations(self, consumer: str) -> dict[str, Any]:
        return {"allocations": {}, "consumer_generation": None}

    def usages(self, rp: str) -> dict[str, int]:
        return {"VCPU": self.usage}

    def provider_allocations(self, rp: str) -> dict[str, Any]:
        return {}


def judged(orphans: dict[str, dict[str, int]], usage: int = 2) -> tuple[Checker, list[str]]:
    checker = Checker(Admin(usage), [RP])  # type: ignore[arg-type]
    claim = Op("claim", C, {RP: {"VCPU": 2}}, OK, 0.0, 1.0, "w", "req-1", {RP: {"VCPU": 2}})
    checker.record([claim])
    checker.read_back()
    checker.check_registers()
    log = f"{EVIDENCE_LOG} [{CLEANUP}]: Deleted auto-created consumer with consumer UUID {C}\n"
    cluster = SimpleNamespace(orphaned_allocations=lambda: orphans, read_log=lambda: log)
    return checker, placement_findings(checker, cluster)  # type: ignore[arg-type]


def test_orphaned_rows_that_account_for_everything_are_placements() -> None:
    checker, lines = judged({RP: {C: 2}})
    assert checker.verdict.failures == []
    assert len(lines) == 2  # the consumer, and the usage its rows explain
    assert any(C in line and CLEANUP in line for line in lines)


@pytest.mark.parametrize(
    ("orphans", "usage"),
    [
        ({}, 2),  # no orphaned rows: nothing is excused
        ({RP: {C: 1}}, 2),  # rows that do not match what the claim wrote
        ({RP: {C: 2}}, 3),  # the usage differs by more than the rows
    ],
)
def test_anything_the_rows_do_not_account_for_stays_the_clients(
    orphans: dict[str, dict[str, int]], usage: int
) -> None:
    checker, _ = judged(orphans, usage)
    assert checker.verdict.failures
