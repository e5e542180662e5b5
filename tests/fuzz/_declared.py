"""The only disagreements the differential run lets through, each with its reason.

A declared difference is a known, deliberate departure of the fake from
Placement 16.0.0: a Placement bug the fake refuses to copy, or something
Placement does not promise. Anything else the fuzzer finds fails the run.
Keep each predicate as narrow as the reason it states.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.fuzz._backends import Answer, Request

__all__ = ["DECLARED", "Declared", "declared_for"]

Predicate = Callable[[Request, Answer, Answer, list[str]], bool]


@dataclass(frozen=True)
class Declared:
    """A named, reasoned difference and the test that recognises it."""

    name: str
    reason: str
    matches: Predicate


def _real_500(req: Request, real: Answer, fake: Answer, diffs: list[str]) -> bool:
    return real.status == 500 and fake.status == 400


def _candidates_limit(req: Request, real: Answer, fake: Answer, diffs: list[str]) -> bool:
    # Which candidates survive a limit follows the order, which Placement does not promise.
    if not req.path.startswith("/allocation_candidates") or "limit=" not in req.path:
        return False
    if real.status != 200 or fake.status != 200:
        return False
    r, f = real.json(), fake.json()
    return len(r["allocation_requests"]) == len(f["allocation_requests"])


DECLARED: tuple[Declared, ...] = (
    Declared(
        "placement-500",
        "Placement answers 500 (an unhandled exception) where its own schema should have "
        "refused the request; the fake answers the 400 a client can act on instead.",
        _real_500,
    ),
    Declared(
        "candidates-under-limit",
        "Placement promises no order for allocation candidates, so neither which ones a "
        "limit keeps; only their number is compared.",
        _candidates_limit,
    ),
)


def declared_for(req: Request, real: Answer, fake: Answer, diffs: list[str]) -> Declared | None:
    """The declared difference that explains ``diffs``, if any."""
    for declared in DECLARED:
        if declared.matches(req, real, fake, diffs):
            return declared
    return None
