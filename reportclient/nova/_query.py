"""nova's ``ResourceRequest`` as a :class:`~reportclient.CandidatesQuery`.

nova's scheduler describes what an instance needs with
``nova.scheduler.utils.ResourceRequest``, whose one public serialization is
``to_querystring()``: the exact ``GET /allocation_candidates`` query nova
would send. Reading that string (rather than the object's private group
table) keeps the mapping true to every nova release that serializes the
same Placement syntax, and validates it as any other query before the wire.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal, cast
from urllib.parse import parse_qsl

from reportclient._model.candidates import CandidatesQuery, RequestGroup
from reportclient.errors import InvalidInput

__all__ = ["query_from_string", "query_of"]

_GROUPED = ("resources", "required", "member_of", "in_tree")


def query_of(resource_request: Any) -> CandidatesQuery:
    """The query a nova ``ResourceRequest`` (anything with ``to_querystring()``) stands for."""
    to_querystring = getattr(resource_request, "to_querystring", None)
    if not callable(to_querystring):
        raise InvalidInput(
            f"expected a nova ResourceRequest (with to_querystring()), got {resource_request!r}"
        )
    return query_from_string(str(to_querystring()))


def _split(value: str) -> list[str]:
    return [part for part in value.split(",") if part]


def _group(fields: dict[str, list[str]]) -> dict[str, Any]:
    """The keywords of one :class:`RequestGroup` from its parameters as given."""
    resources: dict[str, int] = {}
    for value in fields.get("resources", ()):
        for pair in _split(value):
            rc, _, amount = pair.partition(":")
            if not amount.isdigit():
                raise InvalidInput(f"resources entry {pair!r} is not CLASS:AMOUNT")
            resources[rc] = int(amount)
    required: list[str | frozenset[str]] = []
    forbidden: set[str] = set()
    for value in fields.get("required", ()):
        if value.startswith("in:"):
            required.append(frozenset(_split(value[3:])))
            continue
        for trait in _split(value):
            if trait.startswith("!"):
                forbidden.add(trait[1:])
            else:
                required.append(trait)
    member_of: list[str | frozenset[str]] = []
    not_member_of: set[str] = set()
    for value in fields.get("member_of", ()):
        negated = value.startswith("!")
        body = value[1:] if negated else value
        aggregates = _split(body[3:] if body.startswith("in:") else body)
        if negated:
            not_member_of.update(aggregates)
        else:
            member_of.append(aggregates[0] if len(aggregates) == 1 else frozenset(aggregates))
    in_tree = fields.get("in_tree", [None])[-1]
    return {
        "resources": resources,
        "required": tuple(required),
        "forbidden": frozenset(forbidden),
        "member_of": tuple(member_of),
        "not_member_of": frozenset(not_member_of),
        "in_tree": in_tree,
    }


def query_from_string(query: str) -> CandidatesQuery:
    """Parse an ``/allocation_candidates`` query string into a validated query.

    :raises InvalidInput: a parameter Placement's syntax does not have, or a
        malformed value; nothing is sent.
    """
    by_suffix: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    group_policy: str | None = None
    limit: int | None = None
    same_subtree: list[tuple[str, ...]] = []
    root_required: set[str] = set()
    root_forbidden: set[str] = set()
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if key == "group_policy":
            group_policy = value
        elif key == "limit":
            if not value.isdigit():
                raise InvalidInput(f"limit must be a number, got {value!r}")
            limit = int(value)
        elif key == "same_subtree":
            same_subtree.append(tuple(_split(value)))
        elif key == "root_required":
            for trait in _split(value):
                (root_forbidden if trait.startswith("!") else root_required).add(trait.lstrip("!"))
        else:
            name = next((g for g in _GROUPED if key.startswith(g)), None)
            if name is None:
                raise InvalidInput(f"allocation candidates have no parameter {key!r}")
            by_suffix[key[len(name) :]][name].append(value)
    unsuffixed = _group(by_suffix.pop("", {}))
    groups = {suffix: RequestGroup(**_group(fields)) for suffix, fields in by_suffix.items()}
    if group_policy not in (None, "none", "isolate"):
        raise InvalidInput(f"group_policy must be none or isolate, got {group_policy!r}")
    return CandidatesQuery(
        **unsuffixed,
        groups=groups,
        group_policy=cast(Literal["none", "isolate"] | None, group_policy),
        limit=limit,
        same_subtree=tuple(same_subtree),
        root_required=frozenset(root_required),
        root_forbidden=frozenset(root_forbidden),
    )
