"""Retry policies, and the loop that runs an operation's attempts under one.

A policy (a tenacity value) decides *when* to try again and how long to
wait; *what* is worth retrying is the client's call (a conflict or an
unreachable server, never an over-capacity refusal, a change of premise or
an unknown outcome), so :func:`run_attempts` overrides ``retry=`` on a copy
of the policy for every operation. Jitter draws from one small injectable
function so tests can pin it.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

import tenacity

from reportclient.errors import (
    ConsumerChanged,
    GenerationConflict,
    OutcomeUnknown,
    PlacementError,
    PlacementUnavailable,
)

__all__ = ["NO_RETRY", "Attempts", "default_retry", "no_retry", "run_attempts", "wait_full_jitter"]

LOG = logging.getLogger("reportclient")

_RETRIABLE = (GenerationConflict, PlacementUnavailable)
# Subclasses of the retriable kinds that end an operation: retrying them
# would overwrite, or apply a mutation twice.
_TERMINAL = (ConsumerChanged, OutcomeUnknown)

#: Writes per operation before giving up.
DEFAULT_ATTEMPTS = 12
#: Seconds an operation may spend retrying, sleeps included.
DEFAULT_DEADLINE = 30.0
#: First backoff ceiling in seconds; doubles each attempt. Writers that
#: lost a race come back spread over this window, so it must be wide enough
#: for the writers that collided to take turns. Measured on 4 gunicorn
#: workers over MariaDB, 16 and 64 clients each adding to one consumer
#: (``bench/run.py --placement mariadb``), Placement CPU per successful
#: update against nova's client (which waits up to 2 s x attempt): 2 s cost
#: 1.02x at 16 clients and 0.97x at 64, 3 s 0.98x and 0.82x, 4 s 0.97x and
#: 0.81x but 13% fewer updates per second than 3 s (6 rounds per cell; the
#: README's production-shape runs with 3 s give 0.89-0.97x on MariaDB and
#: PostgreSQL). Earlier, 0.4 s cost 1.9 PUTs per update at 16 clients where
#: 2 s cost 1.4.
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


def _retriable(exc: BaseException | None) -> bool:
    return isinstance(exc, _RETRIABLE) and not isinstance(exc, _TERMINAL)


ResultT = TypeVar("ResultT", covariant=True)


class Attempts(Protocol[ResultT]):
    """One operation's attempts, as :func:`run_attempts` drives them.

    Implemented for consumer generations (:class:`reportclient.cycle.WriteCycle`)
    and provider generations (:class:`reportclient.provider_cycle.ProviderCycle`).
    """

    #: What the operation writes, for logs ("consumer <uuid>").
    @property
    def subject(self) -> str: ...

    #: The last failed write was computed from a state just read.
    @property
    def contended(self) -> bool: ...

    #: Writes whose answer was lost and which may still land.
    @property
    def pending(self) -> Sequence[object]: ...

    def attempt(self, number: int) -> ResultT: ...

    def still_pending(self, exc: PlacementError) -> OutcomeUnknown:
        """The error for giving up (``exc``) while a write in ``pending`` may still land."""
        ...


def run_attempts(cycle: Attempts[ResultT], policy: tenacity.Retrying) -> ResultT:
    """Run ``cycle``'s attempts until one succeeds or ``policy`` gives up.

    Most writes land at once, so the policy is only copied (a measurable
    share of a claim's CPU) after a first attempt has failed. A policy that
    gives up while a write may still land ends in :class:`OutcomeUnknown`.
    """
    try:
        return cycle.attempt(1)
    except _RETRIABLE as exc:
        if not _retriable(exc):
            raise
        first_failure = exc
    numbers = itertools.count(1)

    def attempt() -> ResultT:
        number = next(numbers)
        if number == 1:
            raise first_failure  # let the policy judge the attempt already made
        return cycle.attempt(number)

    try:
        # The call form, not the iterator: it honours a user's
        # retry_error_callback (whose value tenacity then returns).
        result: ResultT = _operation_policy(cycle, policy)(attempt)
    except _RETRIABLE as exc:
        if not _retriable(exc):
            raise
        LOG.error("%s: giving up after %d attempt(s): %s", cycle.subject, next(numbers) - 1, exc)
        if cycle.pending:
            raise cycle.still_pending(exc) from exc
        raise
    return result


def _operation_policy(cycle: Attempts[object], policy: tenacity.Retrying) -> tenacity.Retrying:
    """The user's policy, deciding only when and how long; we decide what.

    A stale consumer (or provider) generation on a write computed from the
    cache (or from the guess that the consumer is new) means that guess was
    wrong, not that writers are contending, so the re-read it calls for is not delayed and is
    logged at DEBUG. A conflict on a write computed from a state just read
    means contention: it backs off and warns, as does an unreachable server.
    """
    user_hook = policy.before_sleep
    user_wait = policy.wait

    def routine(exc: BaseException | None) -> bool:
        stale = isinstance(exc, GenerationConflict) and (
            exc.consumer_conflict or exc.provider_conflict
        )
        return stale and not cycle.contended

    def wait(state: tenacity.RetryCallState) -> float:
        if routine(state.outcome.exception() if state.outcome else None):
            return 0.0
        return float(user_wait(state))

    def log_retry(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        LOG.log(
            logging.DEBUG if routine(exc) else logging.WARNING,
            "%s: attempt %d failed: %s %s (request %s); retrying in %.3fs",
            cycle.subject,
            state.attempt_number,
            type(exc).__name__,
            getattr(exc, "detail", None) or getattr(exc, "message", exc),
            getattr(exc, "request_id", None),
            state.upcoming_sleep,
        )
        if user_hook is not None:
            user_hook(state)

    return policy.copy(
        retry=tenacity.retry_if_exception(_retriable),
        wait=wait,
        before_sleep=log_retry,
        reraise=True,
    )
