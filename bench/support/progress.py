"""Where a long run is: one line per phase or cell on stderr, with what is left.

A cluster bench runs for minutes to an hour with nothing on stdout until its tables, so each
finished step (a cell, a phase) says on stderr what it was, how far the run is, how long it
has taken and about how long the rest will, at the average pace so far. ``--quiet``
silences it; the tables on stdout never change. The clock and the stream are injected, so a
test pins every line without sleeping.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress", "duration"]


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``: as precise as a person reading it needs."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Progress:
    """Counts the units of work a run has done out of ``total`` and prints a line per step.

    :param entry: the subcommand, first on every line (several benches may share a log).
    :param total: units in the whole run (cells, periods, workloads).
    :param unit: what a unit is, for the line (``"cells"``).
    :param quiet: print nothing (``--quiet``).
    """

    def __init__(
        self,
        entry: str,
        total: float,
        unit: str = "cells",
        *,
        quiet: bool = False,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.entry, self.total, self.unit, self.quiet = entry, total, unit, quiet
        self._stream = stream
        self._clock = clock
        self._began = clock()
        self.units = 0.0
        #: Units of the step :meth:`begin` announced, counted done when the next one begins.
        self._pending = 0.0

    def done(self, what: str, units: float = 1.0) -> None:
        """A step of ``units`` has finished: say so, how far the run is and what is left."""
        self.units += units
        self._print(f"{self._far()} {what}{self._left()}")

    def begin(self, what: str, units: float = 1.0) -> None:
        """A step of ``units`` begins; the one begun before it has finished.

        For runs whose parts announce themselves as they start (the ``run`` workloads).
        """
        self.units += self._pending
        self._pending = units
        self._print(f"{self._far()} {what}{self._left()}")

    def note(self, what: str) -> None:
        """A line with the time only: a step's own detail, or what the run is waiting on."""
        self._print(what)

    def _far(self) -> str:
        return f"{self.units:g}/{self.total:g} {self.unit}:"

    def _left(self) -> str:
        elapsed = self._clock() - self._began
        if self.units <= 0 or self.units >= self.total:
            return ""
        rest = elapsed / self.units * (self.total - self.units)
        return f"; about {duration(rest)} left"

    def _print(self, text: str) -> None:
        if self.quiet:
            return
        elapsed = self._clock() - self._began
        stream = self._stream if self._stream is not None else sys.stderr
        print(f"  [{duration(elapsed):>10}] {self.entry} {text}", file=stream, flush=True)
