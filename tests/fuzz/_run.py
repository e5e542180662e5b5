"""Running one sequence on both sides, and what the whole run covered."""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tests.fuzz._backends import Answer, FakeSide, RealSide, Request
from tests.fuzz._compare import Renamer, canonical_body, differences
from tests.fuzz._declared import declared_for
from tests.fuzz._steps import CHOSEN, PROLOGUES, READ_BACK, Context, Step

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
    read_back: int = 0
    survivors_checked: int = 0

    def summary(self) -> str:
        """A few lines for the terminal."""
        routes = {r for r, _ in self.pairs}
        versions = {v for _, v in self.pairs}
        lines = [
            f"sequences: {self.sequences}, requests: {self.requests} (each sent to both sides)",
            f"routes x microversions covered: {len(self.pairs)} "
            f"({len(routes)} routes, {len(versions)} microversion values)",
            "statuses (real): " + ", ".join(f"{s}: {n}" for s, n in sorted(self.statuses.items())),
            f"final states read back and compared: {self.read_back} sequences; "
            f"limited candidate answers checked against Placement's full answer: "
            f"{self.survivors_checked}",
        ]
        if self.declared:
            lines.append(
                "declared differences met: "
                + ", ".join(f"{k}: {n}" for k, n in sorted(self.declared.items()))
            )
        return "\n".join(lines)


COVERAGE = Coverage()


def _without_limit(request: Request) -> Request | None:
    """The same candidates query with every ``limit`` dropped, or None if it has none."""
    path, _, query = request.path.partition("?")
    if path != "/allocation_candidates" or "limit=" not in query:
        return None
    # Placement (webob) separates parameters with ";" as well as "&".
    kept = [p for p in re.split("[&;]", query) if not p.startswith("limit=")]
    return replace(request, path=f"{path}?{'&'.join(kept)}", route="(survivors)")


def _survivors_agree(
    real: RealSide,
    request: Request,
    got: tuple[Answer, Answer],
    names: tuple[Renamer, Renamer],
) -> bool:
    """Under ``limit``, the fake's candidates are some of Placement's, as many as it kept.

    Placement promises no order, so neither which candidates a limit keeps;
    the fake's survivors must each be a candidate Placement would answer
    without the limit, and their provider summaries Placement's own.
    """
    got_real, got_fake = got
    unlimited = _without_limit(request)
    if unlimited is None or got_real.status != 200 or got_fake.status != 200:
        return False
    full = real.send(unlimited)
    if full.status != 200:
        return False
    # Copies: what a server made up is renamed per side, in order of appearance.
    real_names, fake_names = (copy.deepcopy(n) for n in names)
    everything = canonical_body(full, real_names)
    theirs = canonical_body(got_real, real_names)
    mine = canonical_body(got_fake, fake_names)
    if len(mine["allocation_requests"]) != len(theirs["allocation_requests"]):
        return False
    if any(req not in everything["allocation_requests"] for req in mine["allocation_requests"]):
        return False
    summaries = everything["provider_summaries"]
    return all(summaries.get(rp) == doc for rp, doc in mine["provider_summaries"].items())


def run_sequence(
    real: RealSide,
    fake: FakeSide,
    steps: Sequence[Step],
    *,
    prologue: str = "tree",
    read_back: bool = True,
) -> None:
    """Send ``steps`` to fresh sides; raise :class:`Disagreement` at the first undeclared one.

    A declared difference ends the sequence: past it the two states may
    legitimately differ, and every later answer would be noise. A sequence
    that ends in agreement has its final state read back from both sides
    (:data:`READ_BACK`) and compared too.
    """
    real.reset()
    fake.reset()
    COVERAGE.sequences += 1
    ctx = Context(real.send)
    names_real, names_fake = Renamer(CHOSEN), Renamer(CHOSEN)
    log: list[str] = []
    planned: list[Step | Request] = [*PROLOGUES[prologue], *steps]
    if read_back:
        planned += READ_BACK
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
        if _survivors_agree(real, request, (got_real, got_fake), (names_real, names_fake)):
            COVERAGE.survivors_checked += 1
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
    if read_back:
        COVERAGE.read_back += 1
