"""The client's retry budget, and the bounds every operation's retries meet.

A retry is more load on a Placement that is already failing or behind: the
issue-37 measurement (claims offered at 100/s beside provider writers, on a
Placement that served 49-56/s) had writers re-sending for their whole 30 s
deadline, 70-150 conflicts each, and one ``set_inventory`` under a policy
of ``stop_after_attempt(3)`` sent 253 PUTs and 254 GETs. Two bounds close
that, whatever policy the caller passes:

* **the budget** (Finagle's ``RetryBudget``, gRPC's ``retryThrottling``,
  the AWS SDKs' adaptive mode): each operation's first attempt deposits one
  token, each retry of any operation (a write's next attempt, counted by the
  policy or not, or a read sent again) withdraws one, and a retry that
  succeeds gives its token back (the AWS SDKs' standard mode: only retries
  that fail are charged). Over the last ``window`` seconds the retries not
  given back may number ``ratio`` x first attempts plus ``floor`` x
  ``window``, the floor being what a quiet client may always spend. When
  Placement is healthy a client retries far less than that and never
  notices; when it is saturated or failing its retries fail too, and the
  budget turns the client's extra load into failures it reports at once
  (:class:`~reportclient.errors.PlacementOverloaded`) instead of requests
  the server must still refuse. The refund is what lets a writer that
  loses races to claims on its provider (each claim moves the generation)
  complete below Placement's capacity: before it, agents writing back to
  back beside claims at half the capacity completed 74-91% of their
  writes, every failure the budget's; with it, 90-100%, and agents
  beginning a write a second complete all of theirs at 0.5x and 0.8x
  (``doc/source/benchmarks.rst``, saturation). What it lets through is
  bounded too: at most one retry per write or read that succeeds, beside
  the charged ones;
* **the request bound** (:data:`MAX_REQUESTS`): no retry starts that could
  take one operation past that many requests.

The decision is :func:`next_retry`, pure; :class:`RetryBudget` keeps the
counts under a lock; :func:`operation` marks the requests of one operation
so that its reads, retried or not, deposit nothing of their own.
"""

from __future__ import annotations

import enum
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from dataclasses import dataclass

from reportclient._numbers import is_non_negative_number
from reportclient.errors import InvalidInput

__all__ = [
    "DEFAULT_BUDGET_FLOOR",
    "DEFAULT_BUDGET_RATIO",
    "DEFAULT_BUDGET_WINDOW",
    "MAX_REQUESTS",
    "BudgetStats",
    "Charge",
    "GiveUp",
    "Operation",
    "RetryBudget",
    "allows",
    "current",
    "next_retry",
    "operation",
]

#: Retries allowed per first attempt (Finagle's ``percentCanRetry``).
DEFAULT_BUDGET_RATIO = 0.2
#: Retries per second a client may always spend, however few its first
#: attempts: ``floor x window`` is 12, so a compute agent that writes once
#: a minute can still spend one operation's whole default policy (12
#: attempts, 11 retries) on the conflicts it meets.
DEFAULT_BUDGET_FLOOR = 1.2
#: Seconds over which first attempts and retries are counted.
DEFAULT_BUDGET_WINDOW = 10.0
#: Most requests one operation sends, whatever its policy: no retry starts
#: that could take it past this. An attempt sends at most three (a read,
#: the write, a read after its conflict or its lost answer).
MAX_REQUESTS = 32
#: Requests one attempt of a write may send; a read's is one.
WRITE_ATTEMPT_REQUESTS = 3
# Buckets per window: a deposit leaves the count within a tenth of a window.
_BUCKETS = 10


class GiveUp(enum.Enum):
    """Why an operation gets no further retry."""

    POLICY = "the retry policy stopped"
    BOUND = f"the operation reached its bound of {MAX_REQUESTS} requests"
    BUDGET = "the client's retry budget is spent"


def allows(first_attempts: int, retries: int, *, ratio: float, floor: float, window: float) -> bool:
    """Whether one more retry keeps a window's retries within its budget.

    :param first_attempts: operations begun in the window.
    :param retries: retries made in it and not given back.
    """
    return retries + 1 <= ratio * first_attempts + floor * window


def next_retry(*, policy_stops: bool, requests: int, cost: int, bound: int) -> GiveUp | None:
    """Before a retry: why not (None: ask the budget, then go).

    The policy is asked first, so that a policy's own stop is never reported
    as overload, and the budget last, since asking it spends a token.

    :param requests: requests the operation has sent so far.
    :param cost: most requests the next attempt may send.
    """
    if policy_stops:
        return GiveUp.POLICY
    if requests + cost > bound:
        return GiveUp.BOUND
    return None


@dataclass(frozen=True, slots=True)
class BudgetStats:
    """Totals since the budget was made (the benchmark's retries per first attempt)."""

    first_attempts: int
    #: Retries granted, the ones given back included.
    retries: int
    refused: int
    #: Retries given back because they succeeded (:meth:`RetryBudget.refund`).
    refunded: int = 0


@dataclass(frozen=True, slots=True)
class Charge:
    """One retry a budget granted: the bucket of the window it was counted in."""

    bucket: int


class RetryBudget:
    """First attempts and retries over a sliding window; thread-safe, shared by a client.

    :param ratio: retries allowed per first attempt (0.2: one in five).
    :param floor: retries per second allowed however few the first attempts.
    :param window: seconds over which both are counted.
    :param clock: monotonic seconds; tests pass a fake.
    :raises InvalidInput: for a negative or non-finite number, or a window
        that is not positive.
    """

    def __init__(
        self,
        ratio: float = DEFAULT_BUDGET_RATIO,
        floor: float = DEFAULT_BUDGET_FLOOR,
        *,
        window: float = DEFAULT_BUDGET_WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (("ratio", ratio), ("floor", floor), ("window", window)):
            if not is_non_negative_number(value):
                raise InvalidInput(f"retry budget {name} must be a number >= 0, got {value!r}")
        if window <= 0:
            raise InvalidInput(f"retry budget window must be > 0 seconds, got {window!r}")
        self.ratio = float(ratio)
        self.floor = float(floor)
        self.window = float(window)
        self._clock = clock
        self._lock = threading.Lock()
        # [bucket index, first attempts, retries not given back], oldest first.
        self._buckets: deque[list[int]] = deque()
        self._totals = [0, 0, 0, 0]

    def __repr__(self) -> str:
        return f"<RetryBudget ratio={self.ratio:g} floor={self.floor:g}/s window={self.window:g}s>"

    def _bucket(self) -> list[int]:
        index = math.floor(self._clock() * _BUCKETS / self.window)
        while self._buckets and self._buckets[0][0] <= index - _BUCKETS:
            self._buckets.popleft()
        if not self._buckets or self._buckets[-1][0] != index:
            self._buckets.append([index, 0, 0])
        return self._buckets[-1]

    def deposit(self) -> None:
        """An operation's first attempt: one more retry in five (by default) allowed."""
        with self._lock:
            self._bucket()[1] += 1
            self._totals[0] += 1

    def try_withdraw(self) -> bool:
        """Spend one retry if the window allows it; False (nothing spent) if not."""
        return self.charge() is not None

    def charge(self) -> Charge | None:
        """Spend one retry if the window allows it: the charge, to refund it by; None if not."""
        with self._lock:
            bucket = self._bucket()
            firsts = sum(b[1] for b in self._buckets)
            retries = sum(b[2] for b in self._buckets)
            if not allows(firsts, retries, ratio=self.ratio, floor=self.floor, window=self.window):
                self._totals[2] += 1
                return None
            bucket[2] += 1
            self._totals[1] += 1
            return Charge(bucket[0])

    def refund(self, charge: Charge | None = None) -> None:
        """A retry succeeded: give its token back.

        With its ``charge``, exactly that retry is given back, while it is
        still in the window; once it has left the window it counts for
        nothing, and neither is another retry given back in its place (that
        would lend the window a token another operation's failed retry
        spent). Without one, the newest retry still in the window.
        """
        with self._lock:
            self._bucket()
            for bucket in reversed(self._buckets):
                if charge is not None and bucket[0] != charge.bucket:
                    continue
                if bucket[2]:
                    bucket[2] -= 1
                    self._totals[3] += 1
                return

    def stats(self) -> BudgetStats:
        """First attempts, retries, refused and refunded retries since the budget was made."""
        with self._lock:
            return BudgetStats(*self._totals)


@dataclass(slots=True)
class Operation:
    """The requests of one operation so far, and the budget its retries spend."""

    budget: RetryBudget | None
    requests: int = 0
    #: Why the last retry was refused, once one was.
    refused: GiveUp | None = None
    #: Retries the budget granted this operation so far.
    granted: int = 0
    #: The last of them (what a success refunds).
    last_charge: Charge | None = None

    def retry(self, *, policy_stops: bool, cost: int) -> GiveUp | None:
        """Decide a retry (:func:`next_retry`), spending from the budget if it goes."""
        reason = next_retry(
            policy_stops=policy_stops, requests=self.requests, cost=cost, bound=MAX_REQUESTS
        )
        if reason is None and self.budget is not None:
            charge = self.budget.charge()
            if charge is not None:
                self.granted += 1
                self.last_charge = charge
            else:
                reason = GiveUp.BUDGET
        if reason is not GiveUp.POLICY:
            self.refused = reason
        return reason

    def succeeded(self, *, granted_before: int) -> None:
        """A write or read that began when :attr:`granted` was ``granted_before`` succeeded.

        If it was retried, its last retry succeeded and is refunded: that
        retry's own charge, whatever the retries before it cost, and nothing
        once that charge has left the window. An operation of several writes
        (reconcile's) gets one back for each write that succeeded on a retry.
        """
        if self.budget is not None and self.granted > granted_before:
            self.budget.refund(self.last_charge)


_CURRENT: ContextVar[Operation | None] = ContextVar("reportclient_operation", default=None)


def current() -> Operation | None:
    """The operation the calling thread is in, if any."""
    return _CURRENT.get()


class _Scope:
    """:func:`operation`'s context manager: a class, not a generator.

    Every request of the client enters one, most of them nested in their
    write's operation (a claim enters two: the engine's and its PUT's). A
    nested entry costs 0.34 us here against 0.8 us for a generator's, an
    outer one 1.0 against 1.5 (``timeit``, CPython 3.11).
    """

    __slots__ = ("_budget", "_token")

    def __init__(self, budget: RetryBudget | None) -> None:
        self._budget = budget
        self._token: Token[Operation | None] | None = None

    def __enter__(self) -> Operation:
        outer = _CURRENT.get()
        if outer is not None:
            return outer
        if self._budget is not None:
            self._budget.deposit()
        this = Operation(self._budget)
        self._token = _CURRENT.set(this)
        return this

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None


def operation(budget: RetryBudget | None) -> AbstractContextManager[Operation]:
    """Run an operation: its first attempt deposits, and its requests are counted.

    Inside another operation (a write's read, a callback writing through the
    same client) the outer one is yielded: one deposit, one count, one bound.
    The nested entry is one ``ContextVar`` lookup and returns the outer
    operation itself.
    """
    return _Scope(budget)
