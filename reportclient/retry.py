"""Retry policies: tenacity values the client copies for each operation.

A policy decides *when* to try again and how long to wait; *what* is worth
retrying is the client's call (a consumer conflict or an unreachable server,
never an over-capacity refusal), so the client overrides ``retry=`` on every
copy. Jitter draws from one small injectable function so tests can pin it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import tenacity

__all__ = ["NO_RETRY", "default_retry", "no_retry", "wait_full_jitter"]

#: Writes per operation before giving up.
DEFAULT_ATTEMPTS = 12
#: Seconds an operation may spend retrying, sleeps included.
DEFAULT_DEADLINE = 30.0
#: First backoff ceiling in seconds; doubles each attempt.
DEFAULT_BASE = 0.05
#: Largest single backoff in seconds.
DEFAULT_CAP = 2.0


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
    first, and backs off with full jitter between tries.
    """
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts) | tenacity.stop_after_delay(deadline),
        wait=wait_full_jitter(base, cap, rand),
        sleep=sleep,
        reraise=True,
    )


def no_retry() -> tenacity.Retrying:
    """A policy that tries once: conflicts surface to the caller at once."""
    return tenacity.Retrying(stop=tenacity.stop_after_attempt(1), sleep=_sleep, reraise=True)


#: Shared single-try policy; safe to share because clients copy it per call.
NO_RETRY = no_retry()
