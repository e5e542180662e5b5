"""Helpers shared by test_invariants.py and test_outcomes.py: another writer, a fake clock.

"Another writer" is raw HTTP (``PlacementAdmin``) straight to Placement, never the client under
test; what Placement holds is always read back the same way, never from the client's cache.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import tenacity

from reportclient import PlacementClient, PlacementError, default_retry
from reportclient.fixture import FakeClock  # noqa: F401 - re-exported for the tests
from reportclient.testing import PlacementAdmin
from tests.functional._helpers import LATEST, holds, raw_body

Allocs = dict[str, dict[str, int]]


def no_sleep_retry(sleeps: list[float] | None = None, **kwargs: Any) -> tenacity.Retrying:
    """The default policy with its sleeps recorded instead of slept (no test waits on them)."""
    record = sleeps if sleeps is not None else []
    kwargs.setdefault("sleep", record.append)
    return default_retry(rand=lambda: 0.5, **kwargs)


def client_for(url: str, **kwargs: Any) -> PlacementClient:
    """The client under test on ``url``, pinned to 1.39, retry sleeps recorded, not slept."""
    kwargs.setdefault("retry", no_sleep_retry())
    return PlacementClient.from_endpoint(url, token="admin", microversion=LATEST, **kwargs)


def other_writer_puts(
    admin: PlacementAdmin,
    consumer: str,
    allocations: Mapping[str, Mapping[str, int]],
    generation: int | None,
) -> None:
    """Another writer replaces the consumer's allocations (an empty body deletes it)."""
    response = admin.put_allocations(consumer, raw_body(allocations, generation))
    assert response.status_code == 204, response.text


def other_writer_deletes(admin: PlacementAdmin, consumer: str) -> None:
    """Another writer deletes the consumer (``DELETE /allocations``, as nova does)."""
    response = admin.delete_allocations(consumer)
    assert response.status_code == 204, response.text
    assert holds(admin, consumer) == (None, {})


def vcpu(admin: PlacementAdmin, consumer: str, provider: str) -> int:
    """VCPU the consumer holds on ``provider`` as Placement reports it (0 when none)."""
    return holds(admin, consumer)[1].get(provider, {}).get("VCPU", 0)


@dataclass
class FaultTally:
    """Per injected fault: what the client reported, and how often Placement holds its write.

    ``recovered``: success, applied once. ``typed error``: a PlacementError, applied at most
    once. ``applied twice`` and ``lost`` (success, yet not applied) must stay 0.
    """

    rows: list[tuple[str, str, int]] = field(default_factory=list)

    COLUMNS = ("fault", "injected", "recovered", "typed error", "applied twice", "lost")

    def add(self, fault: str, reported: str, applied: int) -> None:
        self.rows.append((fault, reported, applied))

    def record(self, fault: str, call: Callable[[], Any], applied: Callable[[], int]) -> Any:
        """Run the client's ``call``, then count with ``applied()`` what Placement holds of it.

        Returns the call's result or its typed error (anything else fails the test), after
        asserting that it was not applied twice, nor reported successful and not applied.
        """
        try:
            outcome: Any = call()
            reported = "success"
        except PlacementError as exc:
            outcome, reported = exc, type(exc).__name__
        count = applied()
        self.add(fault, reported, count)
        assert count <= 1, f"{fault}: applied {count} times; the client reported {reported}"
        if reported == "success":
            assert count == 1, f"{fault}: the client reported success; Placement holds none"
        return outcome

    def table(self) -> str:
        counts: dict[str, list[int]] = {}
        for fault, reported, applied in self.rows:
            row = counts.setdefault(fault, [0, 0, 0, 0, 0])
            ok = reported == "success"
            hits = (True, ok and applied == 1, not ok and applied <= 1, applied >= 2)
            for i, hit in enumerate((*hits, ok and not applied)):
                row[i] += hit
        width = max([len(self.COLUMNS[0]), *map(len, counts)])
        lines = ["  ".join([self.COLUMNS[0].ljust(width), *self.COLUMNS[1:]])]
        for fault, row in counts.items():
            cells = [str(n).rjust(len(c)) for n, c in zip(row, self.COLUMNS[1:], strict=True)]
            lines.append("  ".join([fault.ljust(width), *cells]))
        return "\n".join(lines)
