"""Typed results of ``GET /allocation_candidates``: allocation requests and provider summaries.

Frozen, parsed once with ``from_json``; an :class:`AllocationRequest` is what
:meth:`PlacementClient.claim` takes as it is, ``mappings`` included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AllocationCandidates", "AllocationRequest", "ProviderSummary", "ResourceSummary"]


@dataclass(frozen=True, slots=True)
class AllocationRequest:
    """One way to satisfy the query: allocations ready to claim.

    ``mappings`` maps each request group's suffix (``""`` for the unsuffixed
    group) to the providers that satisfied it (microversion 1.34+, else
    empty); :meth:`PlacementClient.claim` sends it along with the write.
    """

    allocations: Mapping[str, Mapping[str, int]]
    mappings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> AllocationRequest:
        """Parse one entry of ``allocation_requests`` (1.12+ dict format)."""
        allocations = {
            rp: {rc: int(n) for rc, n in (entry.get("resources") or {}).items()}
            for rp, entry in (body.get("allocations") or {}).items()
        }
        mappings = {s: tuple(rps) for s, rps in (body.get("mappings") or {}).items()}
        return cls(allocations, mappings)

    def to_json(self) -> dict[str, Any]:
        """The shape Placement returns (and accepts on a write)."""
        body: dict[str, Any] = {
            "allocations": {rp: {"resources": dict(r)} for rp, r in self.allocations.items()}
        }
        if self.mappings:
            body["mappings"] = {s: list(rps) for s, rps in self.mappings.items()}
        return body


@dataclass(frozen=True, slots=True)
class ResourceSummary:
    """One resource class on one provider: capacity and what is used of it."""

    capacity: int
    used: int

    @property
    def free(self) -> int:
        """What is left to allocate."""
        return self.capacity - self.used


@dataclass(frozen=True, slots=True)
class ProviderSummary:
    """A provider involved in the candidates: resources, traits and place in its tree.

    ``parent_provider_uuid`` is None for a root; ``root_provider_uuid`` is the
    provider itself then.
    """

    uuid: str
    resources: Mapping[str, ResourceSummary]
    traits: frozenset[str] = frozenset()
    parent_provider_uuid: str | None = None
    root_provider_uuid: str | None = None

    @classmethod
    def from_json(cls, uuid: str, body: Mapping[str, Any]) -> ProviderSummary:
        """Parse one value of ``provider_summaries``."""
        resources = {
            rc: ResourceSummary(int(r["capacity"]), int(r["used"]))
            for rc, r in (body.get("resources") or {}).items()
        }
        return cls(
            uuid,
            resources,
            frozenset(body.get("traits") or ()),
            body.get("parent_provider_uuid"),
            body.get("root_provider_uuid"),
        )


@dataclass(frozen=True, slots=True)
class AllocationCandidates:
    """The answer to a :class:`CandidatesQuery`."""

    allocation_requests: tuple[AllocationRequest, ...]
    provider_summaries: Mapping[str, ProviderSummary]

    def __len__(self) -> int:
        return len(self.allocation_requests)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> AllocationCandidates:
        """Parse a ``GET /allocation_candidates`` body."""
        return cls(
            tuple(AllocationRequest.from_json(r) for r in body.get("allocation_requests") or ()),
            {
                uuid: ProviderSummary.from_json(uuid, s)
                for uuid, s in (body.get("provider_summaries") or {}).items()
            },
        )
