"""Retry policies: tenacity values that decide when an operation tries again.

A policy decides *when* to try again and how long to wait; *what* is worth
retrying is the engine's call (a conflict or an unreachable server, never an
over-capacity refusal, a change of premise or an unknown outcome), so the
engine (:func:`reportclient._engine.attempts.run_attempts`) overrides
``retry=`` on a copy of the policy for every operation. Jitter draws from one
small injectable function so tests can pin it.

Whatever the policy, two bounds of the client's own apply to every retry
(``reportclient._budget`` says why): the client's :class:`RetryBudget`
(retries that fail at most 20% of first attempts, plus 1.2 a second; a
retry that succeeds is given back), and
:data:`MAX_REQUESTS` per operation.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import tenacity

from reportclient._budget import (
    DEFAULT_BUDGET_FLOOR,
    DEFAULT_BUDGET_RATIO,
    DEFAULT_BUDGET_WINDOW,
    MAX_REQUESTS,
    BudgetStats,
    RetryBudget,
)

__all__ = [
    "DEFAULT_BUDGET_FLOOR",
    "DEFAULT_BUDGET_RATIO",
    "DEFAULT_BUDGET_WINDOW",
    "MAX_REQUESTS",
    "NO_RETRY",
    "BudgetStats",
    "RetryBudget",
    "default_retry",
    "no_retry",
    "wait_contention",
    "wait_full_jitter",
]

#: Writes per operation before giving up.
DEFAULT_ATTEMPTS = 12
#: Seconds an operation may spend retrying, sleeps included.
DEFAULT_DEADLINE = 30.0
#: First backoff ceiling in seconds when Placement did not answer (and for a
#: conflict that carries no window from the engine); doubles each attempt.
#: Contending writers wait within the engine's window instead
#: (``reportclient._engine.contention``). 3 s was measured when it also
#: served conflicts: on 4 gunicorn workers over MariaDB, 16 and 64 clients
#: each adding to one consumer, it kept Placement's CPU per update at
#: 0.98x and 0.82x nova's (2 s: 1.02x and 0.97x); an unreachable server
#: needs no quicker knocking than that.
DEFAULT_BASE = 3.0
#: Largest single backoff in seconds.
DEFAULT_CAP = 8.0


class wait_full_jitter(tenacity.wait.wait_base):  # noqa: N801 - tenacity's naming
    """Sleep a uniform random share of an exponentially growing ceiling.

    After attempt *n* the ceiling is ``min(cap, base * 2 ** (n - 1))``; full
    jitter spreads schedulers that collided apart instead of letting them
    collide again in lockstep.

    :param rand: returns a float in [0, 1); pin it in tests.
    """

    def __init__(
        self,
        base: float = DEFAULT_BASE,
        cap: float = DEFAULT_CAP,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.base = base
        self.cap = cap
        self.rand = rand

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        ceiling = min(self.cap, self.base * 2 ** (retry_state.attempt_number - 1))
        return float(ceiling * self.rand())


class wait_contention(wait_full_jitter):  # noqa: N801 - tenacity's naming
    """Full jitter over the engine's window for contending writers, else :class:`wait_full_jitter`.

    After a conflict between writers contending on a subject, the engine
    lends the policy's wait the window, learned per subject, that they need
    to take turns in (``reportclient._engine.contention`` says how), as the
    ``contention_window`` of the retry state it passes (the exception the
    caller may catch carries none). The sleep is a uniform share of
    ``min(cap, window)``. Anything else (Placement unreachable, a 5xx, a
    wait called outside the engine) backs off as :class:`wait_full_jitter`
    does.

    Its ``base``, ``cap`` and ``rand`` are :class:`wait_full_jitter`'s, which
    it extends rather than wraps so the two cannot drift apart.

    :param rand: returns a float in [0, 1); pin it in tests.
    """

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        window = getattr(retry_state, "contention_window", None)
        if isinstance(window, int | float) and window > 0:
            return float(min(self.cap, window) * self.rand())
        return super().__call__(retry_state)


def _sleep(seconds: float) -> None:
    # Looked up at each call, not bound at import: services that monkey-patch
    # time.sleep after importing us (eventlet) must get their own sleep.
    time.sleep(seconds)


def default_retry(
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    deadline: float = DEFAULT_DEADLINE,
    base: float = DEFAULT_BASE,
    cap: float = DEFAULT_CAP,
    sleep: Callable[[float], None] = _sleep,
    rand: Callable[[], float] = random.random,
) -> tenacity.Retrying:
    """The policy a client uses unless given another.

    Stops after ``attempts`` tries or ``deadline`` seconds, whichever comes
    first, and backs off with full jitter between tries: over the engine's
    window for contending writers after a conflict, over
    ``min(cap, base * 2 ** (n - 1))`` when Placement did not answer
    (:class:`wait_contention`).
    """
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts) | tenacity.stop_after_delay(deadline),
        wait=wait_contention(base, cap, rand),
        sleep=sleep,
        reraise=True,
    )


def no_retry() -> tenacity.Retrying:
    """A policy that tries once: conflicts surface to the caller at once."""
    return tenacity.Retrying(stop=tenacity.stop_after_attempt(1), sleep=_sleep, reraise=True)


#: Shared single-try policy; safe to share because clients copy it per call.
NO_RETRY = no_retry()
