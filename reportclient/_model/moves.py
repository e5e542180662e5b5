"""What a move of allocations from one consumer to another did."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reportclient._model.consumers import ConsumerAllocations

__all__ = ["Move"]


@dataclass(frozen=True, slots=True)
class Move:
    """The outcome of :meth:`PlacementClient.move_allocations`.

    ``moved`` is what the source held and the target received; ``source``
    and ``target`` are both consumers as the move left them (a source
    emptied by the move is ``exists`` False).
    """

    source: ConsumerAllocations
    target: ConsumerAllocations
    moved: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
