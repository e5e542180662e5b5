"""Running one sequence on both sides, and what the whole run covered."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from tests.fuzz._backends import FakeSide, RealSide, Request
from tests.fuzz._compare import Renamer, differences
from tests.fuzz._declared import declared_for
from tests.fuzz._steps import CHOSEN, PROLOGUE, Context, Step

__all__ = ["COVERAGE", "Coverage", "Disagreement", "run_sequence"]


class Disagreement(AssertionError):
    """The fake answered differently from Placement and no declared difference explains it."""


@dataclass
class Coverage:
    """What the run sent: sequences, requests, routes by microversion, declared differences."""

    sequences: int = 0
    requests: int = 0
    pairs: set[tuple[str, str]] = field(default_factory=set)
    statuses: Counter[int] = field(default_factory=Counter)
    declared: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        """A few lines for the terminal."""
        routes = {r for r, _ in self.pairs}
        versions = {v for _, v in self.pairs}
        lines = [
            f"sequences: {self.sequences}, requests: {self.requests} (each sent to both sides)",
            f"routes x microversions covered: {len(self.pairs)} "
            f"({len(routes)} routes, {len(versions)} microversion values)",
            "statuses (real): " + ", ".join(f"{s}: {n}" for s, n in sorted(self.statuses.items())),
        ]
        if self.declared:
            lines.append(
                "declared differences met: "
                + ", ".join(f"{k}: {n}" for k, n in sorted(self.declared.items()))
            )
        return "\n".join(lines)


COVERAGE = Coverage()


def run_sequence(
    real: RealSide, fake: FakeSide, steps: Sequence[Step], *, prologue: bool = True
) -> None:
    """Send ``steps`` to fresh sides; raise :class:`Disagreement` at the first undeclared one.

    A declared difference ends the sequence: past it the two states may
    legitimately differ, and every later answer would be noise.
    """
    real.reset()
    fake.reset()
    COVERAGE.sequences += 1
    ctx = Context(real.send)
    names_real, names_fake = Renamer(CHOSEN), Renamer(CHOSEN)
    log: list[str] = []
    planned: list[Step | Request] = [*(PROLOGUE if prologue else ()), *steps]
    for step in planned:
        request = step if isinstance(step, Request) else step.build(ctx)
        got_real = real.send(request)
        got_fake = fake.send(request)
        COVERAGE.requests += 1
        COVERAGE.pairs.add((request.route, str(request.microversion)))
        COVERAGE.statuses[got_real.status] += 1
        log.append(f"  {request.describe()}\n    -> real {got_real.status}, fake {got_fake.status}")
        found = differences(got_real, got_fake, names_real, names_fake)
        if not found:
            continue
        declared = declared_for(request, got_real, got_fake, found)
        if declared is not None:
            COVERAGE.declared[declared.name] += 1
            return
        raise Disagreement(
            "the fake disagrees with Placement on the last request:\n"
            + "\n".join(log)
            + "\n"
            + "\n".join(f"  * {d}" for d in found)
        )
