"""One write operation's read -> compute -> write attempts.

A :class:`WriteCycle` carries what earlier attempts of the same operation
learned (that the cache was wrong, the generation a conflict revealed, a
state read after a lost answer) into the next attempt. Deciding *whether*
there is a next attempt is the retry policy's job, in :mod:`client`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from reportclient.cache import ConsumerCache
from reportclient.errors import GenerationConflict, PlacementError, PlacementUnavailable
from reportclient.models import (
    Allocations,
    ConsumerAllocations,
    is_valid_name,
    normalize_allocations,
)
from reportclient.transport import CONSUMER_TYPE_VERSION, Transport

__all__ = ["Mutator", "Reader", "WriteCycle"]

LOG = logging.getLogger("reportclient")

#: Given the consumer's current state, return the allocations it should hold.
Mutator = Callable[[ConsumerAllocations], Allocations]
#: Reads a consumer from Placement (and refreshes the cache).
Reader = Callable[[str, str | None], ConsumerAllocations]

DEFAULT_CONSUMER_TYPE = "INSTANCE"


class WriteCycle:
    """The attempts of one claim, update or release of one consumer.

    :param owner: (project_id, user_id) to write, or None to keep the
        consumer's own (a release).
    :param ctype: the consumer type asked for, or None to keep the
        consumer's own.
    """

    def __init__(
        self,
        transport: Transport,
        cache: ConsumerCache,
        read: Reader,
        consumer: str,
        mutate: Mutator,
        owner: tuple[str, str] | None,
        ctype: str | None,
        request_id: str | None,
    ) -> None:
        self._transport = transport
        self._cache = cache
        self._reader = read
        self.consumer = consumer
        self._mutate = mutate
        self._owner = owner
        self._ctype = ctype
        self._request_id = request_id
        self._need_read = False
        self._prefetched: ConsumerAllocations | None = None
        self._hint: int | None = None

    def attempt(self, number: int) -> ConsumerAllocations:
        """Run attempt ``number``; return the consumer's state once it holds what was asked.

        :raises GenerationConflict: the write lost a race (retriable).
        :raises PlacementUnavailable: Placement did not answer (retriable).
        """
        # Negotiated once per client, before anything that could write: a
        # failed GET / proves nothing was written.
        send_type = self._transport.supports(CONSUMER_TYPE_VERSION)
        if self._prefetched is not None:
            current, fresh, self._prefetched = self._prefetched, True, None
        elif self._need_read:
            current, fresh = self._read(), True
        else:
            # Optimistic: a consumer nobody told us about is new.
            known = self._cache.get(self.consumer)
            current, fresh = known or ConsumerAllocations.missing(self.consumer), False
        desired = normalize_allocations(self._mutate(current))
        if not desired and not fresh and not current.exists:
            # Emptying a consumer we believe missing: an empty write as a new
            # consumer would leave Placement an invisible generation-0 record
            # if it is, so look instead.
            current, fresh = self._read(), True
            desired = normalize_allocations(self._mutate(current))
        if self._owner is None and fresh and not current.allocations:
            return current  # a release with nothing left to release
        owner = self._owner or _owner_of(current)
        if fresh and _already_holds(current, desired, owner, self._ctype):
            return current
        try:
            return self._write(current, desired, owner, send_type)
        except GenerationConflict as exc:
            self._cache.discard(self.consumer)
            self._need_read = True
            self._hint = exc.server_generation
            exc.attempts = number
            raise
        except PlacementUnavailable as write_error:
            if not write_error.outcome_unknown:
                raise  # nothing reached Placement; what we knew still holds
            # The write may have landed: look before writing again.
            self._cache.discard(self.consumer)
            self._need_read = True
            try:
                reread = self._read()
            except PlacementUnavailable:
                # The caller's question is the write's fate, so the write's
                # error is raised (the read's is its __context__).
                raise write_error from write_error.__cause__
            if reread.allocations == desired and reread.exists == bool(desired):
                LOG.info("consumer %s: lost answer, but the write had landed", self.consumer)
                return reread
            self._prefetched = reread
            raise

    def _read(self) -> ConsumerAllocations:
        """Read the consumer, trusting a conflict's "expected N" over an empty GET.

        Placement keeps a generation for a consumer that was written empty
        while it did not exist, yet GET shows that consumer as missing; only
        the conflict's detail reveals the generation it expects.
        """
        state = self._reader(self.consumer, self._request_id)
        if self._hint is not None and not state.exists and not state.allocations:
            return dataclasses.replace(state, generation=self._hint)
        return state

    def _write(
        self,
        current: ConsumerAllocations,
        desired: dict[str, dict[str, int]],
        owner: tuple[str, str],
        send_type: bool,
    ) -> ConsumerAllocations:
        body: dict[str, Any] = {
            "allocations": {rp: {"resources": res} for rp, res in desired.items()},
            "consumer_generation": current.generation,
            "project_id": owner[0],
            "user_id": owner[1],
        }
        ctype = _type_to_send(self._ctype, current) if send_type else None
        if ctype is not None:
            body["consumer_type"] = ctype
        self._transport.request(
            "PUT",
            f"/allocations/{self.consumer}",
            json=body,
            consumer_uuid=self.consumer,
            global_request_id=self._request_id,
        )
        if desired:
            # Placement answers 204 without a body; its generation rule is
            # new consumer -> 1, every write +1. A wrong guess costs a retry.
            new = ConsumerAllocations(
                self.consumer, desired, (current.generation or 0) + 1, owner[0], owner[1], ctype
            )
        else:
            new = ConsumerAllocations.missing(self.consumer)  # an empty write deletes it
        self._cache.put(new)
        return new


def _type_to_send(requested: str | None, current: ConsumerAllocations) -> str:
    """The caller's type, else the consumer's own, else INSTANCE.

    Consumers written before 1.38 read back as ``unknown``, which Placement
    refuses on a write, so only a valid type is carried over.
    """
    if requested is not None:
        return requested
    if current.consumer_type is not None and is_valid_name(current.consumer_type):
        return current.consumer_type
    return DEFAULT_CONSUMER_TYPE


def _owner_of(state: ConsumerAllocations) -> tuple[str, str]:
    if state.project_id is None or state.user_id is None:
        raise PlacementError(
            "Placement did not report the consumer's project and user",
            consumer_uuid=state.consumer_uuid,
        )
    return state.project_id, state.user_id


def _already_holds(
    current: ConsumerAllocations,
    desired: dict[str, dict[str, int]],
    owner: tuple[str, str],
    ctype: str | None,
) -> bool:
    """Whether writing ``desired`` would change nothing Placement holds."""
    if not desired:
        return not current.exists
    return (
        current.exists
        and current.allocations == desired
        and (current.project_id, current.user_id) == owner
        and (ctype is None or current.consumer_type in (None, ctype))
    )
