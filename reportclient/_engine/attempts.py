"""Running one operation's attempts: the policy decides when, within the client's bounds.

:func:`run_attempts` runs a :class:`~reportclient._engine.guarded_write.GuardedWrite`
under a copy of the caller's tenacity policy in which the engine decides
*what* is retried (:func:`~reportclient._engine.guarded_write.retriable`,
the attempt step's verdicts) and the policy only *when* and for how long.
Every retry the policy would make must also pass the client's bounds
(:mod:`reportclient._budget`): the operation's request bound, then its
retry budget. A retry the budget refuses ends an operation none of whose
writes can have landed in :class:`PlacementOverloaded`, and one whose write
may still land in :class:`OutcomeUnknown`, as any give-up does; a retried
write that lands gives its last retry's token back.
"""

from __future__ import annotations

import copy
import itertools
import logging
from typing import Any, TypeVar

import tenacity

from reportclient._budget import WRITE_ATTEMPT_REQUESTS, GiveUp, Operation, operation
from reportclient._engine.guarded_write import RETRIABLE, GuardedWrite, retriable
from reportclient.errors import (
    GenerationConflict,
    OutcomeUnknown,
    PlacementError,
    PlacementOverloaded,
)

__all__ = ["UNTOUCHED_RETRIES", "run_attempts"]

#: Each retry and each give-up.
RETRY_LOG = logging.getLogger("reportclient.retry")

ResultT = TypeVar("ResultT")

#: Most retries of one operation whose subject was found untouched after a
#: conflict; they are not counted against the policy's attempts (see
#: :func:`_operation_policy`). The request bound
#: (:data:`reportclient._budget.MAX_REQUESTS`) now ends them far sooner;
#: this stays the bound of a policy's count.
UNTOUCHED_RETRIES = 250


def _overloaded(write: GuardedWrite[Any, Any, Any], last: PlacementError) -> PlacementOverloaded:
    # A conflict is no sign of overload: the budget also runs dry when a
    # client's writes keep losing to other writers (claims moving a provider's
    # generation), and the message says which it was.
    why = (
        "its retries went to conflicts with other writers"
        if isinstance(last, GenerationConflict)
        else "Placement is overloaded"
    )
    return PlacementOverloaded(
        f"{write.subject}: not retried, {GiveUp.BUDGET.value} ({why}; last answer: {last.message})",
        last=last,
    )


def run_attempts(write: GuardedWrite[Any, Any, ResultT], policy: tenacity.Retrying) -> ResultT:
    """Run ``write``'s attempts until one succeeds or ``policy`` gives up.

    The client's other writers of the same subject wait for their turn
    (:mod:`reportclient._engine.turns`), so its own threads read each
    other's writes instead of colliding on them. Most writes land at once,
    so the policy is only copied (a measurable share of a claim's CPU) after
    a first attempt has failed. A policy that gives up while a write may
    still land ends in :class:`OutcomeUnknown`; a retry the client's budget
    refuses ends the others in :class:`PlacementOverloaded`.
    """
    budget = write.memory.budget if write.memory is not None else None
    try:
        with operation(budget) as this:
            if write.memory is None:
                return _run_attempts(write, policy, this)
            with write.memory.turns.turn(write.turn):  # a write of several subjects names None
                return _run_attempts(write, policy, this)
    except OutcomeUnknown:
        write.forget()
        raise


def _run_attempts(
    write: GuardedWrite[Any, Any, ResultT], policy: tenacity.Retrying, this: Operation
) -> ResultT:
    try:
        first = write.attempt(1)
    except RETRIABLE as exc:
        if not retriable(exc):
            raise
        first_failure = exc
    else:
        write.succeeded()
        return first
    numbers = itertools.count(1)
    granted_before = this.granted
    landed = [False]  # a callback's value is no success

    def attempt() -> ResultT:
        number = next(numbers)
        if number == 1:
            raise first_failure  # let the policy judge the attempt already made
        result = write.attempt(number)
        landed[0] = True
        return result

    try:
        # The call form, not the iterator: it honours a user's
        # retry_error_callback (whose value tenacity then returns).
        result: ResultT = _operation_policy(write, policy, this)(attempt)
    except RETRIABLE as exc:
        if not retriable(exc):
            raise
        why = "" if this.refused is None else f" ({this.refused.value})"
        RETRY_LOG.error(
            "%s: giving up after %d attempt(s)%s: %s",
            write.subject,
            next(numbers) - 1,
            why,
            exc,
        )
        if write.pending:
            raise write.still_pending(exc) from exc
        if this.refused is GiveUp.BUDGET:
            raise _overloaded(write, exc) from exc
        raise
    write.succeeded()
    if landed[0]:
        this.succeeded(granted_before=granted_before)
    return result


def _operation_policy(
    write: GuardedWrite[Any, Any, Any], policy: tenacity.Retrying, this: Operation
) -> tenacity.Retrying:
    """The user's policy, deciding only when and how long; the engine decides what.

    A stale consumer (or provider) generation on a write computed from the
    cache (or from the guess that the consumer is new) means that guess was
    wrong, not that writers are contending, so the re-read it calls for is
    not delayed and is logged at DEBUG. A conflict on a write computed from a
    state just read means contention: it backs off and warns, as does an
    unreachable server.

    A write whose re-read after the conflict shows what it changes untouched
    lost no race on it: a provider field whose generation moved under
    allocations (or a write of another field), a consumer whose allocation
    write lost Placement's in-server race to other allocations on the same
    providers. It is retried at once and **not counted** against the
    policy's attempts, so schedulers claiming on a provider cannot use up a
    compute agent's attempts (issue 21: at 100 claims/s on one provider, 12
    counted attempts finished 0-43% of inventory and trait writes). The
    policy's deadline still bounds them, as does :data:`UNTOUCHED_RETRIES`;
    a policy that allows a single attempt (:func:`~reportclient.no_retry`)
    still gets exactly one.

    Where the policy would go on, the client's bounds are asked last
    (:meth:`reportclient._budget.Operation.retry`): no retry may take the
    operation past :data:`~reportclient._budget.MAX_REQUESTS` requests, and
    every retry, untouched or counted, spends from the client's budget; the
    retry that lands gives its token back (:meth:`~reportclient._budget.
    Operation.succeeded`).
    """
    user_hook = policy.before_sleep
    user_wait = policy.wait
    user_stop = policy.stop
    user_give_up = policy.retry_error_callback
    free = [0]  # untouched retries so far, not counted as attempts

    def routine(exc: BaseException | None) -> bool:
        return isinstance(exc, GenerationConflict) and write.next is not None and write.next.at_once

    def counted(state: tenacity.RetryCallState) -> tenacity.RetryCallState:
        """``state`` as the policy sees it: untouched retries are not attempts.

        The window the engine lends a contended conflict rides on this copy
        (``contention_window``), never on the exception a caller catches.
        """
        window = write.window
        if not free[0] and window is None:
            return state
        seen = copy.copy(state)
        seen.attempt_number = state.attempt_number - free[0]
        seen.contention_window = window  # type: ignore[attr-defined]
        return seen

    def stop(state: tenacity.RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if (
            isinstance(exc, GenerationConflict)
            and write.next is not None
            and not write.next.counted
            and free[0] < UNTOUCHED_RETRIES
            and not (state.attempt_number == 1 and user_stop(state))
        ):
            free[0] += 1
        policy_stops = bool(user_stop(counted(state)))
        return this.retry(policy_stops=policy_stops, cost=WRITE_ATTEMPT_REQUESTS) is not None

    def wait(state: tenacity.RetryCallState) -> float:
        if routine(state.outcome.exception() if state.outcome else None):
            return 0.0
        return float(user_wait(counted(state)))

    def log_retry(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        RETRY_LOG.log(
            logging.DEBUG if routine(exc) else logging.WARNING,
            "%s: attempt %d failed: %s %s (request %s); retrying in %.3fs",
            write.subject,
            state.attempt_number,
            type(exc).__name__,
            getattr(exc, "detail", None) or getattr(exc, "message", exc),
            getattr(exc, "request_id", None),
            state.upcoming_sleep,
        )
        if user_hook is not None:
            user_hook(state)

    def give_up(state: tenacity.RetryCallState) -> Any:
        """The caller's callback, unless a write of ours may still land: then OutcomeUnknown.

        A callback's value (nova-style ``lambda state: None``) would hide
        the open write, and a callback's own exception would escape bare;
        either way the caller must hear first that a write may land.
        """
        assert user_give_up is not None
        exc = state.outcome.exception() if state.outcome else None
        if not write.pending and this.refused is GiveUp.BUDGET and isinstance(exc, PlacementError):
            # Not the policy's give-up: the caller's callback is not asked.
            raise _overloaded(write, exc) from exc
        if not write.pending or not isinstance(exc, PlacementError):
            return user_give_up(state)
        try:
            user_give_up(state)
        except Exception as raised:
            raise write.still_pending(exc) from raised
        raise write.still_pending(exc) from exc

    return policy.copy(
        retry=tenacity.retry_if_exception(retriable),
        stop=stop,
        wait=wait,
        before_sleep=log_retry,
        reraise=True,
        retry_error_callback=give_up if user_give_up is not None else None,
    )
