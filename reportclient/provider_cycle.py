"""One provider-field write's read -> compute -> write attempts, under provider generations.

The provider-generation twin of :class:`reportclient.cycle.WriteCycle`, run
by the same :func:`reportclient.retry.run_attempts` engine. A provider's
inventories, traits and aggregates each have their own route but share one
generation, so a cycle reads exactly the field it writes (the read answers
with the generation), computes the new value from a copy of what it read,
and writes it back carrying that generation. On
``placement.concurrent_update`` the next attempt re-reads and recomputes:
whatever another writer changed (another resource class, another trait) is
in the re-read and survives, because ``compute`` only changes what the
caller asked for.

When a write's answer is lost, the generation decides, as for consumers: a
write carrying N lands only while Placement holds N and makes N+1. A fresh
read at N means it has not landed (the next write carries N too, so at most
one of them can); at N+1 holding something else, exactly one write came
after N and it was not this one. Anything else (N+1 holding what the write
asked for, N+2 or more, a generation that went back because the provider
was re-created) cannot say whether it landed: an idempotent change is then
computed and written again, which is safe, and one that is not raises
:class:`OutcomeUnknown` (``total + 4`` applied twice is not applied once).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from reportclient.errors import (
    GenerationConflict,
    OutcomeUnknown,
    PlacementError,
    PlacementUnavailable,
)
from reportclient.provider_cache import ProviderCache
from reportclient.provider_models import (
    ProviderAggregates,
    ProviderInventories,
    ProviderTraits,
    ProviderWrite,
)
from reportclient.transport import Transport

__all__ = ["Field", "ProviderCycle", "read_field"]

LOG = logging.getLogger("reportclient")

Field = TypeVar("Field", ProviderInventories, ProviderTraits, ProviderAggregates)


def read_field(
    transport: Transport, kind: type[Field], uuid: str, request_id: str | None = None
) -> Field:
    """``GET /resource_providers/{uuid}/{route}`` as a typed snapshot."""
    reply = transport.request(
        "GET", f"/resource_providers/{uuid}/{kind.ROUTE}", global_request_id=request_id
    )
    return kind.from_json(uuid, reply.body or {})


class ProviderCycle(Generic[Field]):
    """The attempts of one change to one field (inventories, traits or aggregates) of a provider.

    :param kind: which field, as its snapshot type.
    :param compute: returns the field's new value from a copy of its
        current value (a dict of inventories, or a set of names); called
        again on every attempt, always on a state just read or trusted.
    :param idempotent: ``compute`` applied to its own result changes nothing
        (setting a class's inventory, adding a trait); decides what a lost
        answer allows.
    :param start: a snapshot to compute the first attempt from instead of a read.
    :param start_read: ``start`` was just read; otherwise it is what the caller
        inferred (a provider it created, a field its own write left unchanged),
        and a conflict on it is a wrong guess, re-read at once, not contention.
    """

    def __init__(
        self,
        transport: Transport,
        cache: ProviderCache,
        kind: type[Field],
        uuid: str,
        compute: Callable[[Any], Any],
        *,
        idempotent: bool,
        request_id: str | None = None,
        start: Field | None = None,
        start_read: bool = True,
    ) -> None:
        self._transport = transport
        self._start_read = start_read
        self._cache = cache
        self._kind: type[Field] = kind
        self.uuid = uuid
        self._compute = compute
        self._idempotent = idempotent
        self._request_id = request_id
        self._start_with: Field | None = start
        self._need_read = False
        self._lost: PlacementUnavailable | None = None
        #: Writes whose answer was lost and which may still land, with the value each asked for.
        self.pending: list[ProviderWrite] = []
        self._asked: list[Any] = []
        #: The last snapshot read during this operation.
        self.last_read: Field | None = None
        #: Whether the last failed write was computed from a state just read.
        self.contended = False
        #: Requests this operation sent (reads and writes), for reconcile's accounting.
        self.requests = 0
        #: Whether a write of this operation was acknowledged.
        self.wrote = False

    @property
    def subject(self) -> str:
        """What this operation writes, for logs."""
        return f"provider {self.uuid} {self._kind.ROUTE}"

    def attempt(self, number: int) -> Field:
        """Run attempt ``number``; return the field once Placement holds what was asked.

        :raises GenerationConflict: the write lost a race (retriable).
        :raises PlacementUnavailable: Placement did not answer (retriable).
        :raises OutcomeUnknown: a write may have landed and cannot be risked again.
        :raises InventoryInUse: inventory would shrink below its usage; never retried.
        """
        current, fresh, cached = self._start()
        done = self._settle(current) if fresh and self.pending else None
        if done is not None:
            return done
        desired = self._compute(current.value)
        if current.holds(desired) and cached:
            # A snapshot from the cache proves nothing about now (another
            # writer may have changed the field since): nothing to write is
            # reported only from a state Placement just returned.
            current, fresh = self._read(), True
            desired = self._compute(current.value)
        if current.holds(desired):
            return current
        write = ProviderWrite(
            self.uuid, self._kind.ROUTE, current.generation, current.body(desired)
        )
        try:
            return self._write(write)
        except GenerationConflict as exc:
            self._cache.discard(self.uuid, self._kind)
            self._need_read = True
            self.contended = fresh
            exc.attempts = number
            raise
        except PlacementUnavailable as exc:
            if not exc.outcome_unknown:
                raise
            self.pending.append(write)
            self._asked.append(desired)
            self._lost = exc
            self._cache.discard(self.uuid, self._kind)
            self._need_read = True
            return self._after_lost_answer(exc)
        except PlacementError as exc:
            if self.pending:
                raise self._unknown(self.last_read, f"{exc.message}; but ") from exc
            raise

    def still_pending(self, exc: PlacementError) -> OutcomeUnknown:
        """The error for giving up (``exc``) while a write of ours may still land."""
        return self._unknown(self.last_read, f"gave up ({exc.message}) while ")

    def _start(self) -> tuple[Field, bool, bool]:
        """The snapshot this attempt computes from: (it, just read, taken from the cache)."""
        if self._start_with is not None and not self._need_read:
            start, self._start_with = self._start_with, None
            fresh, self._start_read = self._start_read, True
            return start, fresh, False
        if not self._need_read and not self.pending:
            cached = self._cache.trusted(self.uuid, self._kind)
            if isinstance(cached, self._kind):
                return cached, False, True
        return self._read(), True, False

    def _read(self) -> Field:
        self.requests += 1
        state = read_field(self._transport, self._kind, self.uuid, self._request_id)
        self._cache.put(state)
        self._need_read = False
        self.last_read = state
        return state

    def _after_lost_answer(self, error: PlacementUnavailable) -> Field:
        """Read at once; settle the operation if the read proves enough, else retry later."""
        try:
            state = self._read()
        except PlacementUnavailable:
            raise error from error.__cause__
        done = self._settle(state)
        if done is not None:
            LOG.info("%s: answer lost, but Placement holds what was asked", self.subject)
            return done
        self._start_with = state
        self.contended = False
        raise error

    def _settle(self, state: Field) -> Field | None:
        """Apply what a fresh read proves about writes whose answers were lost."""
        if self._idempotent and state.holds(self._compute(state.value)):
            self.pending.clear()
            self._asked.clear()
            return state
        still_open = []
        for write, asked in zip(self.pending, self._asked, strict=True):
            if state.generation == write.generation:
                still_open.append((write, asked))  # not landed; our next write excludes it
            elif state.generation == write.generation + 1 and not state.holds(asked):
                continue  # the one write since N was another's: this one never landed
            elif not self._idempotent:
                # It may have landed before others wrote on top (N+2 and on).
                raise self._unknown(state) from self._lost
        self.pending[:] = [w for w, _ in still_open]
        self._asked[:] = [a for _, a in still_open]
        return None

    def _write(self, write: ProviderWrite) -> Field:
        self.requests += 1
        reply = self._transport.request(
            "PUT",
            f"/resource_providers/{self.uuid}/{write.route}",
            json=dict(write.body),
            global_request_id=self._request_id,
        )
        self.wrote = True
        # Any open write carried a generation this one consumed.
        self.pending.clear()
        self._asked.clear()
        # Placement answers with the field and its new generation: no guess.
        new = self._kind.from_json(self.uuid, reply.body or {})
        self._cache.put(new)
        return new

    def _unknown(self, state: Field | None, prefix: str = "") -> OutcomeUnknown:
        lost = self._lost
        write = self.pending[-1] if self.pending else None
        now = "was not read" if state is None else f"is at generation {state.generation}"
        sent = write or ProviderWrite(self.uuid, self._kind.ROUTE, -1, {})
        return OutcomeUnknown(
            f"{prefix}a {self._kind.ROUTE} write carrying provider generation "
            f"{sent.generation} may or may not have landed "
            f"({lost.message if lost else 'no answer'}); the provider {now}",
            sent=sent,
            state=state,
            lost=lost,
            method="PUT",
            url=f"/resource_providers/{self.uuid}/{self._kind.ROUTE}",
        )
