"""How long writers that collided on one subject need to spread out, learned per subject.

A conflict on a write computed from a state just read means writers contend,
and they need a window to take turns in. A fixed window cannot suit every
level of contention (measured on 4 gunicorn workers over MariaDB, one
consumer updated by N writers, nova's client beside: a 3 s first window
kept Placement's CPU per update at or below nova's at 16 and 64 writers but
gave 2 writers a p99 of 1.4 s against nova's 0.8 s; a 0.2 s one gave 2
writers 24.6 updates/s and a p99 of 0.2 s but cost 52.5 ms of Placement CPU
per update at 16 writers against nova's 33). So the engine suggests the
window, and the policy's wait uses the suggestion (``backoff_hint`` on the
conflict; a policy of the caller's own may ignore it):

* it starts at two read-compute-write cycles of this write, as measured: the
  other writer needs about one to land, and collisions thin out once the
  window is twice as long; times the writes that landed during the cycle,
  when the conflict says (a consumer's "expected N but got M"), as each is
  one more writer to make room for;
* it doubles with each contended conflict of the operation;
* what an operation needed is remembered for its subject (halved: the next
  operation starts below it and doubles up only if it must), so a subject
  that sixteen writers hammer starts at a window that spreads sixteen, while
  one two writers touch stays at a few cycles. A success without a conflict
  halves the memory again, and it is forgotten once it falls to a cycle.

This is additive-increase, multiplicative-decrease in spirit (doubling
rather than adding, since a conflict says nothing about how many writers
there are): hand-written because tenacity's waits see one operation's
attempts, and the window has to carry from one operation to the next.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["MIN_WINDOW", "ContentionMemory"]

#: The smallest window suggested, in seconds: below this, timer and
#: scheduling noise (and an idle Placement's cycle of a few ms) dominate.
MIN_WINDOW = 0.05
# Subjects remembered at most; the least recently updated go first.
_SIZE = 4096


class ContentionMemory:
    """Per subject, the window writers needed lately; thread-safe.

    :param clock: monotonic seconds, to measure a write's cycle.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._windows: dict[str, float] = {}

    def window(
        self, subject: str, cycle: float, conflicts: int, landed: int | None = None
    ) -> float:
        """The window to suggest after the ``conflicts``-th contended conflict of an operation.

        :param cycle: seconds from the read the failed write was computed
            from to the conflict's answer.
        :param landed: writes that landed on the subject during that cycle,
            when the conflict says (a consumer's "expected N"); each is one
            more writer to make room for.
        """
        with self._lock:
            remembered = self._windows.get(subject, 0.0)
        start = max(max(MIN_WINDOW, 2 * cycle) * max(1, landed or 1), remembered)
        return float(start * 2 ** max(0, conflicts - 1))

    def done(self, subject: str, needed: float | None) -> None:
        """The operation on ``subject`` succeeded; ``needed`` is its last window, if it had one."""
        with self._lock:
            if needed is not None:
                self._windows.pop(subject, None)
                self._windows[subject] = needed / 2
                if len(self._windows) > _SIZE + _SIZE // 4:
                    # Trimmed in batches: popping a dict's oldest key one at a
                    # time scans the holes earlier pops left.
                    self._windows = dict(list(self._windows.items())[-_SIZE:])
                return
            remembered = self._windows.get(subject)
            if remembered is None:
                return
            if remembered / 2 <= MIN_WINDOW:
                del self._windows[subject]
            else:
                self._windows[subject] = remembered / 2
