"""The last dated listing of the resource classes this client received.

A custom class renamed (``PUT /resource_classes/{name}`` with a body,
1.2-1.6) changes every inventory naming it and moves no provider; it moves
the class's ``updated_at``, which the listing's ``Last-Modified`` shows.
So a listing of the classes is what proves a cached inventory's class
names (:func:`reportclient._engine.proofs.catalogue_proves`), and the
gateway keeps the last one. Only the gateway writes here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ClassListing", "ClassRecord"]


@dataclass(frozen=True, slots=True)
class ClassListing:
    """One ``GET /resource_classes``, dated.

    :param modified: its ``Last-Modified`` (1.15+): the newest ``updated_at``
        or ``created_at`` of every class; a rename moves the renamed class's
        ``updated_at``, a create gives a new ``created_at``. None unknown.
    :param answered: the server's ``Date``; None unknown.
    :param taken_at: when it was answered, on the client's clock.
    """

    names: frozenset[str]
    modified: float | None
    answered: float | None
    taken_at: float


class ClassRecord:
    """The last :class:`ClassListing` this client received; dropped by its own class writes."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._last: ClassListing | None = None

    def get(self) -> ClassListing | None:
        with self._lock:
            return self._last

    def put(self, listing: ClassListing) -> None:
        with self._lock:
            if self._last is None or listing.taken_at >= self._last.taken_at:
                self._last = listing

    def drop(self) -> None:
        with self._lock:
            self._last = None
