"""Comparing one answer of the fake with the real service's answer to the same request.

What is compared: status, Placement's error code and detail, the JSON body
(request ids dropped, uuids a server made up replaced by the order in which
they first appeared), and the headers a client reads: content-type,
location, openstack-api-version, vary, allow, and whether last-modified and
cache-control are present (their values are clocks).

Numbers are compared by type as well as value (``8`` is not ``8.0``): a
client that echoes a body back sends what it read. Lists are compared in
order, except the ones Placement builds from a set and so answers in an
order it does not promise (:data:`UNORDERED`, each with its reason); those
are compared as multisets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from tests.fuzz._backends import Answer

__all__ = ["UNORDERED", "Renamer", "canonical_body", "differences"]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_REQ_ID = re.compile(r"req-[0-9a-f-]{36}")
# PUT /resource_providers/{u}/traits names its unknown traits by joining a set
# difference, whose order follows the process's string hashing: only that run is
# compared sorted. Every other list of names in a detail (classes in id order,
# in-use inventory in row order) is in an order Placement keeps, and compared as is.
_NAME_RUN = re.compile(r"(?<=No such trait )[A-Z][A-Z0-9_]*(?:, [A-Z][A-Z0-9_]*)+\b")
# Suffix lists Placement builds from a set of request-group suffixes (strings, so
# in the process's string-hash order) and prints as a Python list: compared sorted.
_SUFFIX_LIST = re.compile(
    r"(?<=bad group\(s\) - )\[[^\]]*\]|(?<=`same_subtree`: )\[[^\]]*\](?= not found)"
)


def _sorted_list(match: re.Match[str]) -> str:
    items = [item for item in match.group(0)[1:-1].split(", ") if item]
    return "[" + ", ".join(sorted(items)) + "]"


#: List keys whose order Placement does not promise, and why (compared as multisets).
UNORDERED: dict[str, str] = {
    "allocation_requests": "a set of candidates (order moves with PYTHONHASHSEED); the fake "
    "shuffles it on purpose by default",
    "mappings": "each group's providers come from a set",
    "allocations": "a list only in candidates before 1.12 (a dict everywhere else): one "
    "candidate's providers, gathered from sets in Placement's search (osc-placement's "
    "test_list_shared: the sharing provider first on one side, last on the other)",
    "aggregates": "read back as a set of aggregate uuids",
    "traits": "rows in database order: the standard ones were inserted from a set at "
    "start-up, and filtered lists follow the database's query plan (name index or rows)",
}
_COMPARED = ("content-type", "location", "openstack-api-version", "vary", "allow")
_PRESENT = ("last-modified", "cache-control")


@dataclass
class Renamer:
    """Replaces uuids nobody chose with ``<uuid-N>``, N by first appearance (one per side)."""

    chosen: frozenset[str]
    seen: dict[str, str] = field(default_factory=dict)

    def text(self, value: str) -> str:
        """``value`` with request ids blanked and made-up uuids renamed."""
        value = _REQ_ID.sub("req-<id>", value)
        value = _NAME_RUN.sub(lambda m: ", ".join(sorted(m.group(0).split(", "))), value)
        value = _SUFFIX_LIST.sub(_sorted_list, value)

        def rename(match: re.Match[str]) -> str:
            found = match.group(0)
            if found in self.chosen:
                return found
            return self.seen.setdefault(found, f"<uuid-{len(self.seen) + 1}>")

        return _UUID.sub(rename, value)


def _canonical(value: Any, renamer: Renamer, key: str = "", unordered: bool = False) -> Any:
    """Renamed, request ids dropped, numbers tagged with their type, lists kept in order.

    A list under an :data:`UNORDERED` key (or inside ``mappings``) is sorted.
    """
    if isinstance(value, dict):
        return {
            renamer.text(k): _canonical(v, renamer, k, unordered or key == "mappings")
            for k, v in value.items()
            if k != "request_id"
        }
    if isinstance(value, list):
        items = [_canonical(v, renamer) for v in value]
        if unordered or key in UNORDERED:
            return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
        return items
    if isinstance(value, str):
        return renamer.text(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return f"{type(value).__name__}:{value!r}"
    return value


def canonical_body(answer: Answer, renamer: Renamer) -> Any:
    """The body as compared: canonical JSON, or the text with ids renamed."""
    doc = answer.json()
    if doc is None:
        return renamer.text(answer.body.decode("utf-8", "replace"))
    return _canonical(doc, renamer)


def canonical_headers(answer: Answer, renamer: Renamer) -> dict[str, Any]:
    """The headers as compared."""
    out: dict[str, Any] = {
        name: renamer.text(answer.headers[name]) for name in _COMPARED if name in answer.headers
    }
    for name in _PRESENT:
        out[name] = name in answer.headers
    return out


def differences(real: Answer, fake: Answer, real_names: Renamer, fake_names: Renamer) -> list[str]:
    """Each way ``fake`` differs from ``real``, one line each; empty when they agree."""
    out = []
    if real.status != fake.status:
        out.append(f"status: real {real.status}, fake {fake.status}")
    rh, fh = canonical_headers(real, real_names), canonical_headers(fake, fake_names)
    for name in sorted(set(rh) | set(fh)):
        if rh.get(name) != fh.get(name):
            out.append(f"header {name}: real {rh.get(name)!r}, fake {fh.get(name)!r}")
    rb, fb = canonical_body(real, real_names), canonical_body(fake, fake_names)
    if rb != fb:
        out.append(f"body: real {json.dumps(rb)[:600]}, fake {json.dumps(fb)[:600]}")
    return out
