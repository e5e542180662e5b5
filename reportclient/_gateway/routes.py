"""Every Placement path the library builds, and what a raw request's path concerns.

Pure: strings in, strings out. The gateway is the only caller; a module
anywhere else that spells a Placement path is a bug (a unit test greps for
them), because a route reached without the gateway is a route whose answers
the caches never hear of.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from reportclient._model.validation import is_uuid

__all__ = [
    "ALLOCATIONS",
    "CANDIDATES",
    "PROVIDERS",
    "RESHAPER",
    "Concerns",
    "concerns",
    "consumer",
    "provider",
    "provider_allocations",
    "provider_field",
    "provider_usages",
    "providers",
    "resource_class",
    "resource_classes",
    "trait",
    "traits",
    "usages",
    "with_query",
]

ALLOCATIONS = "/allocations"
PROVIDERS = "/resource_providers"
RESHAPER = "/reshaper"
CANDIDATES = "/allocation_candidates"
_FIELDS = frozenset({"inventories", "traits", "aggregates"})


def with_query(path: str, query: Mapping[str, str] | str | None) -> str:
    """``path`` with a query string (already encoded when a str), or as is."""
    if not query:
        return path
    return f"{path}?{query if isinstance(query, str) else urlencode(query)}"


def consumer(uuid: str) -> str:
    return f"{ALLOCATIONS}/{uuid}"


def providers(query: Mapping[str, str] | None = None) -> str:
    return with_query(PROVIDERS, query)


def provider(uuid: str) -> str:
    return f"{PROVIDERS}/{uuid}"


def provider_field(uuid: str, route: str) -> str:
    return f"{PROVIDERS}/{uuid}/{route}"


def provider_allocations(uuid: str) -> str:
    return f"{PROVIDERS}/{uuid}/allocations"


def provider_usages(uuid: str) -> str:
    return f"{PROVIDERS}/{uuid}/usages"


def usages(query: str) -> str:
    return with_query("/usages", query)


def traits(query: Mapping[str, str] | None = None) -> str:
    return with_query("/traits", query)


def trait(name: str) -> str:
    return f"/traits/{name}"


def resource_classes() -> str:
    return "/resource_classes"


def resource_class(name: str) -> str:
    return f"/resource_classes/{name}"


@dataclass(frozen=True, slots=True)
class Concerns:
    """What a write to a path may have changed, as far as the caches go.

    ``everything`` when the path (or its body) cannot be read: both caches
    forget all they hold, which costs reads, never a wrong write.
    """

    consumers: frozenset[str] = frozenset()
    providers: frozenset[str] = frozenset()
    everything: bool = False
    #: Resource classes renamed or deleted: every inventory naming one is forgotten.
    classes: frozenset[str] = frozenset()
    #: Traits deleted: every provider's traits naming one are forgotten.
    traits: frozenset[str] = frozenset()


_NOTHING = Concerns()
_EVERYTHING = Concerns(everything=True)


def _keys(body: Any, name: str | None = None) -> frozenset[str] | None:
    """The uuid keys of ``body`` (or of ``body[name]``); None when they are not all uuids."""
    part = body.get(name) if isinstance(body, Mapping) and name is not None else body
    if part is None and name is not None:
        return frozenset()
    if not isinstance(part, Mapping) or not all(isinstance(k, str) and is_uuid(k) for k in part):
        return None
    return frozenset(k.lower() for k in part)


def concerns(method: str, path: str, body: Any = None) -> Concerns:
    """The consumers and providers a raw request may have changed.

    A read changes nothing. A write to a route the library knows names its
    subjects (a consumer's allocations, a provider and all its fields, the
    consumers of a POST and the providers and consumers of a reshape). A
    catalogue write that can change what a provider's field names (a
    resource class renamed, 1.2-1.6, or deleted; a trait deleted) names the
    class or trait, whose every cached mention is forgotten; creating one
    changes no provider. Anything else, or a path with escapes or segments
    this reading does not expect, forgets everything.
    """
    if method in ("GET", "HEAD"):
        return _NOTHING
    where = path.split("?", 1)[0]
    if "%" in where or "//" in where:
        return _EVERYTHING
    parts = [p for p in where.split("/") if p]
    if not parts:
        return _EVERYTHING
    head, rest = parts[0], parts[1:]
    if head in ("traits", "resource_classes"):
        return _catalogue(method, head, rest, body)
    if head == "allocations":
        if not rest:
            keys = _keys(body)
            return _EVERYTHING if keys is None else Concerns(consumers=keys)
        if len(rest) == 1 and is_uuid(rest[0]):
            return Concerns(consumers=frozenset({rest[0].lower()}))
        return _EVERYTHING
    if head == "resource_providers":
        if not rest:
            # A create touches no cached provider, unless it re-creates one by uuid.
            named = body.get("uuid") if isinstance(body, Mapping) else None
            if named is None:
                return _NOTHING
            return Concerns(providers=frozenset({named.lower()})) if is_uuid(named) else _EVERYTHING
        if is_uuid(rest[0]) and (len(rest) == 1 or rest[1] in _FIELDS):
            return Concerns(providers=frozenset({rest[0].lower()}))
        return _EVERYTHING
    if head == "reshaper" and not rest:
        rps, cons = _keys(body, "inventories"), _keys(body, "allocations")
        if rps is None or cons is None:
            return _EVERYTHING
        return Concerns(consumers=cons, providers=rps)
    return _EVERYTHING


def _catalogue(method: str, head: str, rest: list[str], body: Any) -> Concerns:
    """What a write to ``/traits`` or ``/resource_classes`` may change of any provider's field.

    A class renamed (``PUT`` with a body, 1.2-1.6: every inventory naming
    it now names the new one) or deleted, and a trait deleted: Placement
    refuses to delete one still in use, but a cache may still hold it. A
    ``PUT`` with no body (1.7+) or a ``POST`` creates one, which no cached
    field names yet.
    """
    if len(rest) != 1:
        return _NOTHING  # POST /resource_classes, or a path Placement answers with 404
    name = rest[0]
    if method == "DELETE":
        if head == "traits":
            return Concerns(traits=frozenset({name}))
        return Concerns(classes=frozenset({name}))
    if head == "resource_classes" and method == "PUT" and body is not None:
        new = body.get("name") if isinstance(body, Mapping) else None
        return Concerns(classes=frozenset({name, new} if isinstance(new, str) else {name}))
    return _NOTHING
