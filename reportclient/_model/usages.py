"""Usages: what is allocated from one provider, and what a project (or user) holds.

Two reads with two shapes. A provider's usages list every resource class
it has inventory of (zeros included) with the provider's generation. A
project's usages sum its consumers' allocations per resource class; from
microversion 1.38 Placement groups them by consumer type and counts the
consumers, and :class:`ProjectUsages` keeps both the per-type groups and
their sum so callers need not care which version answered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from reportclient._model.microversions import USAGES_BY_TYPE_VERSION, Microversion
from reportclient._model.validation import validate_owner
from reportclient.errors import InvalidInput

__all__ = [
    "ConsumerTypeUsages",
    "ProjectUsages",
    "ProviderUsages",
    "usages_query",
]


# Placement's pattern for the consumer_type filter: a type, or the two
# pseudo-types "all" (everything in one group) and "unknown" (consumers
# written before 1.38, which have no type).
_TYPE_FILTER = re.compile(r"[A-Z0-9_]{1,255}|all|unknown")


@dataclass(frozen=True, slots=True)
class ProviderUsages:
    """``GET /resource_providers/{uuid}/usages``: amount used per inventoried class."""

    provider_uuid: str
    generation: int
    usages: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, provider_uuid: str, body: Mapping[str, Any]) -> ProviderUsages:
        """Parse the body Placement returns."""
        return cls(
            provider_uuid,
            int(body.get("resource_provider_generation") or 0),
            {rc: int(n) for rc, n in (body.get("usages") or {}).items()},
        )


@dataclass(frozen=True, slots=True)
class ConsumerTypeUsages:
    """One consumer type's share of a project's usages (1.38+)."""

    consumer_type: str
    consumer_count: int
    usages: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ProjectUsages:
    """``GET /usages``: what a project (and optionally one user) has allocated.

    ``usages`` is the total per resource class. ``by_consumer_type`` holds
    the per-type groups Placement returns from microversion 1.38 (empty
    before): keyed by type, ``"all"`` or ``"unknown"`` when that filter was
    asked for.
    """

    project_id: str
    user_id: str | None
    usages: Mapping[str, int] = field(default_factory=dict)
    by_consumer_type: Mapping[str, ConsumerTypeUsages] = field(default_factory=dict)

    @classmethod
    def from_json(
        cls, project_id: str, user_id: str | None, body: Mapping[str, Any], *, grouped: bool
    ) -> ProjectUsages:
        """Parse the body; ``grouped`` when it was asked at 1.38 or later."""
        raw = body.get("usages") or {}
        if not grouped:
            return cls(project_id, user_id, {rc: int(n) for rc, n in raw.items()})
        groups: dict[str, ConsumerTypeUsages] = {}
        totals: dict[str, int] = {}
        for ctype, entry in raw.items():
            amounts = {rc: int(n) for rc, n in entry.items() if rc != "consumer_count"}
            groups[ctype] = ConsumerTypeUsages(ctype, int(entry.get("consumer_count", 0)), amounts)
            for rc, n in amounts.items():
                totals[rc] = totals.get(rc, 0) + n
        return cls(project_id, user_id, totals, groups)

    @property
    def consumer_count(self) -> int | None:
        """Consumers counted across types (1.38+), else None."""
        if not self.by_consumer_type:
            return None
        return sum(g.consumer_count for g in self.by_consumer_type.values())


def usages_query(
    project_id: str, user_id: str | None, consumer_type: str | None, version: Microversion
) -> str:
    """The validated query string of ``GET /usages``.

    :raises InvalidInput: for a malformed id or type, or a type filter the
        microversion in use does not accept.
    """
    validate_owner(project_id, user_id if user_id is not None else project_id)
    params = [("project_id", project_id)]
    if user_id is not None:
        params.append(("user_id", user_id))
    if consumer_type is not None:
        if not isinstance(consumer_type, str) or not _TYPE_FILTER.fullmatch(consumer_type):
            raise InvalidInput(
                "consumer_type must match ^[A-Z0-9_]+$, or be 'all' or 'unknown', "
                f"got {consumer_type!r}"
            )
        if version < USAGES_BY_TYPE_VERSION:
            raise InvalidInput("consumer_type needs microversion 1.38 or later")
        params.append(("consumer_type", consumer_type))
    return urlencode(params)
