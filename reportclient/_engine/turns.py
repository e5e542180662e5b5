"""One client's writers of one subject take turns instead of colliding in Placement.

A service shares one client between its threads (nova's scheduler and
conductor share one report client between their greenthreads), and two of
them writing the same consumer would otherwise read the same generation,
send two writes, lose one to a conflict and back off for up to a second.
Taking turns inside the client costs the second writer only the time the
first one's write takes: it then reads what the first one wrote (or, with a
cache, writes from it at once).

This only orders writers inside one client. Writers in other processes are
what the generations and the retry policy are for, and nothing here waits
for them.

Invariants:

* a thread holds at most one turn: an operation started while its thread
  holds one (a callback writing through the same client) does not take
  another, so no thread waits for a turn while holding one, and turns
  cannot deadlock each other;
* a callback that waits for another thread to write the same subject
  through the same client would wait for ever: callbacks compute, they do
  not wait on other writers;
* a writer's wait for its turn is bounded by the writer ahead of it (whose
  policy bounds its attempts), not by its own policy, which starts when its
  turn does;
* a subject's entry lives only while a writer holds or waits for its turn,
  so the table holds no more entries than there are writing threads.

Hand-written because a lock per key with reference counting is not
something the standard library, tenacity or oslo.concurrency's
process-wide named locks offer per client object.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["Turns"]


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Writers holding or waiting for the turn.
    users: int = 0


class Turns:
    """Per subject, this client's writers one at a time; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._local = threading.local()

    @contextlib.contextmanager
    def turn(self, subject: str | None) -> Iterator[None]:
        """Hold ``subject``'s turn for the ``with`` block (no turn for None or if one is held)."""
        if subject is None or getattr(self._local, "holding", None) is not None:
            yield
            return
        with self._lock:
            entry = self._entries.setdefault(subject, _Entry())
            entry.users += 1
        try:
            with entry.lock:
                self._local.holding = subject
                try:
                    yield
                finally:
                    self._local.holding = None
        finally:
            with self._lock:
                entry.users -= 1
                if not entry.users:
                    del self._entries[subject]

    def waiting(self, subject: str) -> int:
        """Writers holding or waiting for ``subject``'s turn."""
        with self._lock:
            entry = self._entries.get(subject)
            return entry.users if entry is not None else 0

    def __len__(self) -> int:
        """Subjects some writer holds or waits for."""
        with self._lock:
            return len(self._entries)
