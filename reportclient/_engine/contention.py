"""How long writers that collided on one subject wait before trying again.

A conflict on a write computed from a state just read means writers
contend, and they need a window to take turns in; the engine lends it to
the policy's wait (``contention_window`` on the retry state, see
:mod:`.attempt_step`) and the default policy's wait takes a uniform
share of it (a policy of the caller's own may ignore it). A fixed window
cannot suit every level of contention. Measured on 4 gunicorn
workers over MariaDB, N writers (one client each) adding to one consumer,
nova's client beside (``python -m bench run --placement mariadb --contention-only
--fixed-window --with-nova``): a fixed 3 s first window gave 2 writers 9-10
updates/s and a p99 of 1.9-2.7 s where nova made 10-18 and 1.1-2.2 s;
windows starting at 0.05 s and doubling made 25-39 updates/s with a p99 of
0.3-0.6 s at 2 writers but cost 1.3-1.6x nova's Placement CPU per update at
4 and 16, because the losers of one collision, retrying together inside a
small window, collide again (70-80% of second attempts did).

So the window is shaped by what a conflict says about the crowd:

* the first retry of an operation waits within ``MIN_WINDOW`` (1 s), or
  ``CYCLES`` (5) read-compute-write cycles if that is longer, each widened
  for the writers the conflict shows (next point); or what this client's
  last collisions on the subject needed, if that is more. A cycle long
  beside an unloaded one (20-40 ms here) means Placement queues, and when
  writers of one subject are released together the queue is theirs: at 64
  writers the first conflict's cycle was 0.3-0.6 s. With two cycles (under
  1 s) 72% of second attempts collided again; with eight (about 2.6 s) 39%
  did and Placement CPU per update fell from 46 to 36 ms (MariaDB, 4
  workers, 4 rounds; nova 38.8-40.0). But eight cost 64 writers their
  updates/s and p99 in every run after that (0.85-0.94x and 1.10-1.16x
  nova's, at 0.83-0.86x its CPU per update), and sixteen more so (0.85x,
  1.15x). In one 12-round MariaDB run, nova twice beside, five cycles made
  1.04x nova's updates/s at 0.98x its p99 and 0.87x its CPU per update;
  six made 0.95x, 1.05x and 0.89x; eight 0.89x, 1.16x and 0.83x. So five:
  at 2, 4 and 16 writers the cycle is short and the floor decides;
* a conflict that says writes landed during the cycle (a consumer's
  "expected N but got M") shows M - N writers that took their turn while
  this one computed. The floor makes room for them and this one, 1 s each
  (M - N + 1); the cycles count M - N, since a long cycle already queued
  behind the writes that landed. A conflict that does not say (Placement's
  in-server race, where two writes from one generation met inside the
  server, or a provider's) keeps the floor. At 2 writers nearly every
  conflict is the in-server race (11-12 of the 12-16 conflicts in 240
  updates); at 16 writers about a fifth are. Making room only for the
  writes that landed (one landed: 1 s) made 16 writers collide a second
  time more often than nova's client, whose first window is 2 s. MariaDB,
  16 writers, 12 rounds, nova twice beside, updates/s, p99 and CPU per
  update against nova: 0.75x, 1.30x and 1.08x, with 1.50 PUTs per update
  against nova's 1.42-1.43; counting this writer too, 0.89x, 1.03x and
  0.99x with 1.42 (nova against itself 0.89x, 0.99x and 1.02x). At 2
  writers (24 rounds): 1.09x, 0.61x and 1.05x before, 1.30x, 0.62x and
  1.03x after (nova again 1.26x, 0.87x, 0.97x). A 2 s floor on every
  conflict instead cost 2 writers their lead on p99 (1.02x nova's, 12
  rounds). Counting this writer in the cycles as well widened 64 writers'
  windows past what five cycles were tuned for: their p50 rose to
  1.35-1.54x nova's and PostgreSQL's updates/s fell to 0.85x (full runs,
  2026-12-02);
* from an operation's second contended conflict, the window is half the
  one before, never under ``LATER_FLOOR`` (3 s). The crowd the first
  window spread has been landing meanwhile, so a writer that collides
  again meets fewer writers than its first window was sized for, and it
  has waited longest. Windows used to grow instead, as nova's scheduler
  client's do (2 s per collision so far: 4 s, 6 s, then the policy's 8 s
  cap), and the writers that collided three or four times made the tail:
  in five full runs 64 writers made 0.85-0.93x nova's updates/s at
  1.08-1.13x its p99. A model of the burst (``python -m bench model``:
  writers behind a 2-core, 4-worker server; it reproduced that day's
  64-writer cell within 3% on updates/s and 5% on p99, nova's 14.8%
  give-ups included) put halving windows ahead of growing ones at every
  writer count. Measured, MariaDB, 6 rounds, nova
  beside (2026-12-02, a machine three times slower per request than the
  day before): 64 writers made 1.22x nova's updates/s at 1.00x its p99
  and 0.87x its CPU per update, where growing windows made 1.01x, 1.18x
  and 0.74x; 16 writers 1.30x and 0.77x, but with a 2 s floor they spent
  1.17x nova's CPU per update (1.72 PUTs per update against 1.55): the
  writers of 16 that keep coming back do not drain like a burst, hence
  3 s, which the model put at nova's CPU per update at 16 writers and
  still well ahead at 64;
* the window an operation got through after (its last: the narrowest,
  once windows halve) is remembered for its subject, the widest of the
  recent operations' windows, and fades by half every ``HALF_LIFE``
  seconds without a collision.

With that shape, in one full run per database (2026-12-03, 12-24 rounds
per cell, nova twice beside), every cell from 2 to 64 writers was at or
above nova's updates/s and at or below its p99 and Placement CPU per
update, or within the run's noise; 64 writers made 1.35x and 1.36x nova's
updates/s at 0.81x and 0.69x its p99 and 1.00x its CPU per update
(MariaDB, PostgreSQL), and 16 writers 1.28x and 1.22x at 0.81x, with
0.95x and 1.03x (interval 1.00-1.06) the CPU. doc/source/retry.rst, "Retry
policy", has the tables. Hand-written because tenacity's waits see one
operation's attempts, not the conflict's detail or the subject's past.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from reportclient._budget import RetryBudget
from reportclient._engine.turns import Turns

__all__ = ["HALF_LIFE", "LATER_FLOOR", "MIN_WINDOW", "ContentionMemory"]

#: The first retry's window, in seconds, unless a cycle, the writes that
#: landed or the subject's past ask for more.
MIN_WINDOW = 1.0
# Subjects remembered at most; the least recently updated go first.
_SIZE = 4096
#: Seconds over which a remembered window halves when no collision renews it.
HALF_LIFE = 30.0
#: From an operation's second contended conflict, its window halves each
#: time but stays at least this many seconds (see above).
LATER_FLOOR = 3.0
#: The first window spans at least this many read-compute-write cycles (see above).
CYCLES = 5.0


class ContentionMemory:
    """Per subject, the window writers needed lately, and whose turn it is; thread-safe.

    :param clock: monotonic seconds, to measure a write's cycle.
    :param budget: the client's retry budget, which every write's retries
        spend from (:mod:`reportclient._budget`); None spends none.
    """

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, budget: RetryBudget | None = None
    ) -> None:
        self.clock = clock
        self.budget = budget
        #: The client's writers of one subject, one at a time.
        self.turns = Turns()
        self._lock = threading.Lock()
        self._windows: dict[str, tuple[float, float]] = {}

    def window(
        self,
        subject: str,
        cycle: float,
        conflicts: int,
        landed: int | None = None,
        previous: float | None = None,
    ) -> float:
        """The window to suggest after the ``conflicts``-th contended conflict of an operation.

        :param cycle: seconds from the read the failed write was computed
            from to the conflict's answer.
        :param landed: writes that landed on the subject during that cycle,
            when the conflict says (a consumer's "expected N"): the floor
            makes room for those writers and this one (``landed + 1``
            seconds), the cycles for ``landed``. ``None`` (or 0) keeps the
            floor.
        :param previous: the window this operation was given after its
            previous contended conflict; from the second conflict on, the
            window is half of it, never under ``LATER_FLOOR``.
        """
        if conflicts > 1 and previous is not None:
            # The crowd the first window spread has been landing since: what
            # is left of it is smaller, and this writer has waited longest.
            return float(max(LATER_FLOOR, previous / 2))
        landed = landed or 0
        # The floor makes room for every writer the conflict shows, this one
        # included; the cycles already queued behind the ones that landed.
        first = max(MIN_WINDOW * (landed + 1), CYCLES * cycle * max(1, landed))
        start = max(first, self._remembered(subject))
        if conflicts <= 1:
            return float(start)
        return float(max(LATER_FLOOR, start))

    def _remembered(self, subject: str) -> float:
        with self._lock:
            found = self._windows.get(subject)
        if found is None:
            return 0.0
        window, when = found
        return float(window * 0.5 ** ((self.clock() - when) / HALF_LIFE))

    def done(self, subject: str, needed: float | None, conflicts: int = 0) -> None:
        """The operation on ``subject`` succeeded after ``conflicts`` contended conflicts.

        :param needed: the last window suggested to it, if any. An operation
            that needed none leaves the memory to fade with time: most
            operations on a hot subject get through at once, and the ones
            that collide still need the window the others needed.
        """
        if needed is None or conflicts == 0:
            return
        # The widest window a recent operation needed: the losers of one
        # collision retry together, and they need what the unluckiest needed.
        keep = max(needed, self._remembered(subject))
        with self._lock:
            self._windows.pop(subject, None)
            self._windows[subject] = (keep, self.clock())
            if len(self._windows) > _SIZE + _SIZE // 4:
                # Trimmed in batches: popping a dict's oldest key one at a
                # time scans the holes earlier pops left.
                self._windows = dict(list(self._windows.items())[-_SIZE:])
