"""``GET /allocation_candidates``: a typed query, validated before the wire, and typed results.

A scheduler asks where a set of resources fits; Placement answers with
*allocation requests* (each one a body ready to write) and *provider
summaries* (capacity, usage, traits and tree of every provider involved).
An :class:`AllocationRequest` goes straight into
:meth:`PlacementClient.claim`, its ``mappings`` (which request group each
provider satisfied, 1.34) included.

Every name, amount and uuid is checked here, so a typo costs an
:class:`InvalidInput` rather than a request and a 400; the microversion a
query needs is worked out from what it uses, so a feature the server does
not speak is a :class:`MicroversionUnsupported` before any request too.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode

from reportclient._model.microversions import (
    ANY_TRAIT_VERSION,
    CONSUMER_GENERATION_VERSION,
    FORBIDDEN_AGGREGATES_VERSION,
    IN_TREE_VERSION,
    ROOT_REQUIRED_VERSION,
    SAME_SUBTREE_VERSION,
    VERBOSE_SUFFIX_VERSION,
    Microversion,
)
from reportclient._model.validation import (
    members,
    validate_resources,
    validate_standard_name,
    validate_uuid,
)
from reportclient.errors import InvalidInput

__all__ = ["CandidatesQuery", "RequestGroup", "any_of"]

_SUFFIX = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_NUMERIC_SUFFIX = re.compile(r"[1-9][0-9]*")

#: One entry of ``required``: a trait, or a set of traits of which any one will do.
TraitTerm = str | frozenset[str]
#: One entry of ``member_of``: an aggregate, or a set of which any one will do.
AggregateTerm = str | frozenset[str]


def any_of(*names: str) -> frozenset[str]:
    """A ``required`` (or ``member_of``) entry satisfied by any one of ``names``."""
    return frozenset(names)


def _trait(name: object) -> str:
    return validate_standard_name(name, "trait")


def _names(values: object, check: Any, what: str) -> frozenset[str]:
    return frozenset(check(v) for v in members(values, what))


def _terms(values: object, check: Any, what: str) -> tuple[str | frozenset[str], ...]:
    terms: list[str | frozenset[str]] = []
    for value in members(values, what):
        if isinstance(value, str):
            terms.append(check(value))
        else:
            group = _names(value, check, what)
            if not group:
                raise InvalidInput(f"an any-of entry of {what} must not be empty")
            terms.append(group if len(group) > 1 else next(iter(group)))
    return tuple(terms)


@dataclass(frozen=True)
class _GroupFields:
    """The fields of a request group, which a query holds for its unsuffixed group.

    A base of its own rather than RequestGroup itself: a query is not a
    group (``groups`` must not accept one). Each subclass validates them.
    """

    resources: Mapping[str, int] = field(default_factory=dict)
    required: Collection[TraitTerm] = ()
    forbidden: Collection[str] = frozenset()
    member_of: Collection[AggregateTerm] = ()
    not_member_of: Collection[str] = frozenset()
    in_tree: str | None = None


@dataclass(frozen=True)
class RequestGroup(_GroupFields):
    """What one request group asks for; suffixed groups are met by a single provider.

    :param resources: resource class -> amount.
    :param required: traits the providers must have; an entry made with
        :func:`any_of` is met by any one of its traits (1.39).
    :param forbidden: traits the providers must not have.
    :param member_of: aggregates; every entry must match, an :func:`any_of`
        entry by any one of its aggregates.
    :param not_member_of: aggregates the providers must not be in (1.32).
    :param in_tree: only providers in the tree of this provider (1.31).
    :raises InvalidInput: for a malformed name, amount or uuid, or a trait
        both required and forbidden.
    """

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "resources", validate_resources(self.resources))
        set_(self, "required", _terms(self.required, _trait, "required"))
        set_(self, "forbidden", _names(self.forbidden, _trait, "forbidden"))
        aggregate = _aggregate
        set_(self, "member_of", _terms(self.member_of, aggregate, "member_of"))
        set_(self, "not_member_of", _names(self.not_member_of, aggregate, "not_member_of"))
        if self.in_tree is not None:
            set_(self, "in_tree", validate_uuid(self.in_tree, "in_tree"))
        both = sorted(t for t in self.required if isinstance(t, str) and t in self.forbidden)
        if both:
            raise InvalidInput(f"traits both required and forbidden: {', '.join(both)}")

    def params(self, suffix: str) -> list[tuple[str, str]]:
        """This group's query parameters, named with ``suffix``."""
        out: list[tuple[str, str]] = []
        if self.resources:
            amounts = ",".join(f"{rc}:{n}" for rc, n in self.resources.items())
            out.append((f"resources{suffix}", amounts))
        plain = [t for t in self.required if isinstance(t, str)]
        plain += [f"!{t}" for t in sorted(self.forbidden)]
        if plain:
            out.append((f"required{suffix}", ",".join(plain)))
        for term in self.required:
            if not isinstance(term, str):
                out.append((f"required{suffix}", "in:" + ",".join(sorted(term))))
        for agg in self.member_of:
            value = agg if isinstance(agg, str) else "in:" + ",".join(sorted(agg))
            out.append((f"member_of{suffix}", value))
        if self.not_member_of:
            out.append((f"member_of{suffix}", "!in:" + ",".join(sorted(self.not_member_of))))
        if self.in_tree is not None:
            out.append((f"in_tree{suffix}", self.in_tree))
        return out

    def version(self) -> Microversion:
        """The lowest microversion this group's parameters need."""
        needs = [CONSUMER_GENERATION_VERSION]
        if self.in_tree is not None:
            needs.append(IN_TREE_VERSION)
        if self.not_member_of:
            needs.append(FORBIDDEN_AGGREGATES_VERSION)
        if any(not isinstance(t, str) for t in self.required):
            needs.append(ANY_TRAIT_VERSION)
        return max(needs)


def _aggregate(value: object) -> str:
    return validate_uuid(value, "aggregate uuid")


@dataclass(frozen=True)
class CandidatesQuery(_GroupFields):
    """A ``GET /allocation_candidates`` query: the unsuffixed group plus suffixed groups.

    The unsuffixed group's resources may come from several providers of one
    tree; each suffixed group (``groups={"_NET": RequestGroup(...)}``) is
    met by a single provider.

    :param group_policy: ``"isolate"`` (suffixed groups on different
        providers) or ``"none"``; required with two or more suffixed groups.
    :param limit: at most this many allocation requests.
    :param same_subtree: tuples of suffixes whose providers must share a
        subtree (1.36).
    :param root_required: traits each candidate's root provider must have;
        ``root_forbidden`` traits it must not (1.35).
    :raises InvalidInput: for anything Placement would refuse as malformed.
    """

    groups: Mapping[str, RequestGroup] = field(default_factory=dict)
    group_policy: Literal["none", "isolate"] | None = None
    limit: int | None = None
    same_subtree: Collection[Collection[str]] = ()
    root_required: Collection[str] = frozenset()
    root_forbidden: Collection[str] = frozenset()

    def __post_init__(self) -> None:
        unsuffixed = self.unsuffixed
        for name in ("resources", "required", "forbidden", "member_of", "not_member_of"):
            object.__setattr__(self, name, getattr(unsuffixed, name))
        object.__setattr__(self, "in_tree", unsuffixed.in_tree)
        if not isinstance(self.groups, Mapping):
            raise InvalidInput(f"groups must map suffixes to RequestGroup, got {self.groups!r}")
        for suffix, group in self.groups.items():
            if not isinstance(suffix, str) or not _SUFFIX.fullmatch(suffix):
                raise InvalidInput(f"group suffix must match [a-zA-Z0-9_-]{{1,64}}, got {suffix!r}")
            if not isinstance(group, RequestGroup):
                raise InvalidInput(f"group {suffix} must be a RequestGroup, got {group!r}")
        subtrees = tuple(self._subtree(s) for s in _terms_list(self.same_subtree))
        object.__setattr__(self, "same_subtree", subtrees)
        in_subtree = {s for subtree in subtrees for s in subtree}
        for suffix, group in self.groups.items():
            if not group.resources and suffix not in in_subtree:
                raise InvalidInput(
                    f"group {suffix} asks for no resources; only groups named in same_subtree may"
                )
        if unsuffixed.resources == {} and _has_filters(unsuffixed):
            raise InvalidInput("traits, aggregates or in_tree given without resources")
        if not unsuffixed.resources and not any(g.resources for g in self.groups.values()):
            raise InvalidInput("a query needs resources, in the unsuffixed group or a suffixed one")
        if self.group_policy not in (None, "none", "isolate"):
            raise InvalidInput(
                f"group_policy must be 'none' or 'isolate', got {self.group_policy!r}"
            )
        if self.group_policy is None and sum(1 for g in self.groups.values() if g.resources) > 1:
            raise InvalidInput("group_policy is required with more than one suffixed group")
        if self.limit is not None and (
            isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1
        ):
            raise InvalidInput(f"limit must be an int >= 1, got {self.limit!r}")
        root_required = _names(self.root_required, _trait, "root_required")
        root_forbidden = _names(self.root_forbidden, _trait, "root_forbidden")
        if root_required & root_forbidden:
            both = ", ".join(sorted(root_required & root_forbidden))
            raise InvalidInput(f"root traits both required and forbidden: {both}")
        object.__setattr__(self, "root_required", root_required)
        object.__setattr__(self, "root_forbidden", root_forbidden)

    @property
    def unsuffixed(self) -> RequestGroup:
        """The unsuffixed request group, whose resources may come from several providers."""
        return RequestGroup(
            self.resources,
            self.required,
            self.forbidden,
            self.member_of,
            self.not_member_of,
            self.in_tree,
        )

    def _subtree(self, suffixes: Collection[str]) -> tuple[str, ...]:
        if isinstance(suffixes, str) or not suffixes:
            raise InvalidInput(f"same_subtree entries are tuples of suffixes, got {suffixes!r}")
        for suffix in suffixes:
            if suffix not in self.groups:
                raise InvalidInput(f"same_subtree names {suffix!r}, which is not a group suffix")
        return tuple(suffixes)

    def params(self) -> list[tuple[str, str]]:
        """The query parameters, in a stable order."""
        out = self.unsuffixed.params("")
        for suffix, group in self.groups.items():
            out += group.params(suffix)
        if self.group_policy is not None:
            out.append(("group_policy", self.group_policy))
        if self.limit is not None:
            out.append(("limit", str(self.limit)))
        for subtree in self.same_subtree:
            out.append(("same_subtree", ",".join(subtree)))
        roots = sorted(self.root_required) + [f"!{t}" for t in sorted(self.root_forbidden)]
        if roots:
            out.append(("root_required", ",".join(roots)))
        return out

    def query_string(self) -> str:
        """``params()`` encoded (commas, colons and ``!`` kept readable)."""
        return urlencode(self.params(), safe=",:!")

    def version(self) -> Microversion:
        """The lowest microversion this query needs."""
        needs = [self.unsuffixed.version(), *(g.version() for g in self.groups.values())]
        if any(not _NUMERIC_SUFFIX.fullmatch(s) for s in self.groups):
            needs.append(VERBOSE_SUFFIX_VERSION)
        if self.root_required or self.root_forbidden:
            needs.append(ROOT_REQUIRED_VERSION)
        if self.same_subtree or any(not g.resources for g in self.groups.values()):
            needs.append(SAME_SUBTREE_VERSION)
        return max(needs)


def _terms_list(value: object) -> list[Collection[str]]:
    if isinstance(value, str) or not isinstance(value, Collection):
        raise InvalidInput(f"same_subtree must be a collection of suffix tuples, got {value!r}")
    return list(value)


def _has_filters(group: RequestGroup) -> bool:
    return bool(group.required or group.forbidden or group.member_of or group.not_member_of)
