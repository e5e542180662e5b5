"""The only disagreements the differential run lets through, each with its reason.

A declared difference is a known, deliberate departure of the fake from
Placement 16.0.0: a Placement bug the fake refuses to copy, or something
Placement does not promise. Anything else the fuzzer finds fails the run.
Keep each predicate as narrow as the reason it states.
"""

from __future__ import annotations

import re
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


def _sharing_beside_suffixed(req: Request, real: Answer, fake: Answer, diffs: list[str]) -> bool:
    # An unsuffixed group beside a suffixed one, where one side found nothing: the
    # unsuffixed group's sharing-provider candidates anchored to different trees are
    # equal to each other, and each side keeps the first it meets (see the reason).
    path, _, query = req.path.partition("?")
    if path != "/allocation_candidates" or real.status != 200 or fake.status != 200:
        return False
    params = [p.split("=", 1)[0] for p in re.split("[&;]", query)]
    if "resources" not in params or not any(
        p.startswith("resources") and p != "resources" for p in params
    ):
        return False
    if not _only_body(diffs):
        return False
    return 0 in {len(a.json()["allocation_requests"]) for a in (real, fake)}


def _only_body(diffs: list[str]) -> bool:
    return all(d.startswith("body:") for d in diffs)


def _before_schema_dump(answer: Answer) -> tuple[int, str | None, str] | None:
    doc = answer.json()
    if not isinstance(doc, dict) or not doc.get("errors"):
        return None
    err = doc["errors"][0]
    head = re.split(r"\s*Failed validating", err.get("detail", ""))[0]
    return answer.status, err.get("code"), re.sub(r"\s+", " ", head).strip()


def _schema_dump(req: Request, real: Answer, fake: Answer, diffs: list[str]) -> bool:
    if not _only_body(diffs) or real.status != 400:
        return False
    mine, theirs = _before_schema_dump(fake), _before_schema_dump(real)
    return mine is not None and mine == theirs


def _webob_page(req: Request, real: Answer, fake: Answer, diffs: list[str]) -> bool:
    kind = real.headers.get("content-type", "")
    if not _only_body(diffs) or not kind.startswith(("text/html", "text/plain")):
        return False
    title = f"{real.status} "
    return fake.status == real.status and title.encode() in fake.body


def _database_text(req: Request, real: Answer, fake: Answer, diffs: list[str]) -> bool:
    if not _only_body(diffs) or real.status != 409:
        return False
    doc = real.json()
    detail = doc["errors"][0]["detail"] if isinstance(doc, dict) and doc.get("errors") else ""
    return "IntegrityError" in detail or "Duplicate entry" in detail


_ONE_UNKNOWN = re.compile(r"No such trait\(s\): ([A-Z][A-Z0-9_]*)\.")


def _one_unknown_trait(req: Request, real: Answer, fake: Answer, diffs: list[str]) -> bool:
    # Both refuse with the same words, each naming one unknown trait the query sent.
    if not _only_body(diffs) or real.status != 400 or fake.status != 400:
        return False
    named = []
    for answer in (real, fake):
        doc = answer.json()
        text = doc["errors"][0]["detail"] if isinstance(doc, dict) and doc.get("errors") else ""
        found = _ONE_UNKNOWN.search(text)
        if found is None:
            return False
        named.append((found.group(1), _ONE_UNKNOWN.sub("No such trait(s): <trait>.", text)))
    query = req.path.partition("?")[2]
    return named[0][1] == named[1][1] and all(name in query for name, _ in named)


DECLARED: tuple[Declared, ...] = (
    Declared(
        "placement-500",
        "Placement answers 500 (an unhandled exception) where its own schema should have "
        "refused the request; the fake answers the 400 a client can act on instead.",
        _real_500,
    ),
    Declared(
        "schema-dump",
        "A JSON-schema refusal's detail ends with jsonschema's dump of the failing schema "
        "('Failed validating ... On instance ...'), worded by the jsonschema release and "
        "Placement's dict layout; the fake says the same thing up to that dump.",
        _schema_dump,
    ),
    Declared(
        "webob-error-page",
        "Errors for a client that does not accept JSON are webob's HTML or text pages, "
        "templated with the request's Accept or Content-Type and Placement's error code as "
        "an HTML comment; the fake sends the same status, content type, title and "
        "explanation, but not webob's exact whitespace and substitutions.",
        _webob_page,
    ),
    Declared(
        "database-error-text",
        "POST .../inventories for a class the provider already has races to the INSERT, "
        "and Placement's 409 detail is the database driver's IntegrityError (SQL, "
        "parameters and timestamp; different on MySQL and PostgreSQL); the fake gives the "
        "same status and code with Placement's own 'already exists' wording.",
        _database_text,
    ),
    Declared(
        "one-unknown-trait",
        "A query naming several unknown traits is refused naming one of them: Placement "
        "looks the names up from a set and stops at the first it lacks, so which one "
        "follows the process's string hashes (PYTHONHASHSEED); the fake names the "
        "alphabetically first.",
        _one_unknown_trait,
    ),
    Declared(
        "sharing-beside-suffixed",
        "A sharing provider's candidates for the unsuffixed group, one per tree it is "
        "anchored to, compare equal (Placement ignores the anchor), so a set keeps only "
        "the first met: Placement's first in the hash order of its provider row ids, the "
        "fake's first in uuid order. When the kept one is anchored to the sharing "
        "provider's own tree, a suffixed group beside it has nothing to join and the "
        "answer is empty; either side may be the empty one.",
        _sharing_beside_suffixed,
    ),
)


def declared_for(req: Request, real: Answer, fake: Answer, diffs: list[str]) -> Declared | None:
    """The declared difference that explains ``diffs``, if any."""
    for declared in DECLARED:
        if declared.matches(req, real, fake, diffs):
            return declared
    return None
