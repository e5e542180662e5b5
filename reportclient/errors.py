"""The exceptions reportclient raises.

The hierarchy::

    PlacementError                 anything Placement (or the way to it) refused
    ├── InvalidInput               caught before the wire; also a ValueError
    │   └── AllocationsNotHeld     subtract_allocations: more than the consumer holds
    ├── GenerationConflict         409 placement.concurrent_update, retries spent
    │   ├── ConsumerChanged        another writer changed what a claim would replace
    │   └── ProviderChanged        another writer changed a field a view's flush would replace
    ├── ConsumerGone               the consumer an update presupposes does not exist
    ├── NothingToMove              a move's source consumer holds no allocations
    ├── CapacityExceeded           409 over capacity; retrying cannot help
    ├── InventoryInUse             409 placement.inventory.inuse; never retried
    ├── DuplicateName              409 placement.duplicate_name
    ├── ProviderInUse              409 placement.resource_provider.inuse
    │   └── CannotDeleteParent     409 ...cannot_delete_parent: it has children
    ├── ProviderNotFound           placement.resource_provider.not_found, or a 404 naming one
    ├── PlacementUnavailable       connection failure, timeout or 5xx
    │   ├── OutcomeUnknown         a write may or may not have landed; not re-applied
    │   └── PlacementOverloaded    retries refused by the client's budget; nothing landed
    ├── MicroversionUnsupported    the server cannot speak what we need
    ├── PlacementAuthError         no auth plugin, credentials or token refused (401)
    └── PlacementEndpointError     Placement not in the catalog, or discovery failed

Every error carries what an operator needs to find the request in
Placement's logs: status, code, title, detail, request id, method, URL and,
where there is one, the consumer. ``str()`` starts with the request id.
Tokens are never stored on an exception. The one place a response becomes
one of these is :mod:`reportclient._wire.responses`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reportclient._model.consumers import AllocationWrite, ConsumerAllocations
    from reportclient._model.providers import ProviderWrite

__all__ = [
    "AllocationsNotHeld",
    "CannotDeleteParent",
    "CapacityExceeded",
    "ConsumerChanged",
    "ConsumerGone",
    "DuplicateName",
    "GenerationConflict",
    "InvalidInput",
    "InventoryInUse",
    "MicroversionUnsupported",
    "NothingToMove",
    "OutcomeUnknown",
    "PlacementAuthError",
    "PlacementEndpointError",
    "PlacementError",
    "PlacementOverloaded",
    "PlacementUnavailable",
    "ProviderChanged",
    "ProviderInUse",
    "ProviderNotFound",
]

CONCURRENT_UPDATE = "placement.concurrent_update"
UNDEFINED_CODE = "placement.undefined_code"
INVENTORY_INUSE = "placement.inventory.inuse"
DUPLICATE_NAME = "placement.duplicate_name"
PROVIDER_IN_USE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
PROVIDER_NOT_FOUND = "placement.resource_provider.not_found"

# The one substring match we cannot avoid: the same code covers both a stale
# consumer generation and a race between writers inside the server.
_CONSUMER_CONFLICT = re.compile(r"consumer generation conflict - expected (\S+) but got (\S+)")
# Placement words a stale provider generation three ways (inventories and
# reshaper; traits and aggregates); an in-server race reads differently.
_PROVIDER_CONFLICT = re.compile(
    r"resource provider generation conflict|Resource provider's generation already changed"
)
# An allocation write's in-server race names what moved under it: Placement's
# ConcurrentUpdateDetected ("...updated the data") is raised only by a
# consumer's generation bump, its ResourceProviderConcurrentUpdateDetected
# ("...updated the resource provider data") once the provider bump has lost
# allocation_conflict_retry_count times (placement/objects/consumer.py,
# allocation.py, 16.0.0).
_CONSUMER_MOVED = re.compile(
    r"changed while attempting to allocate: Another thread concurrently updated the data\b"
)
# Every way Placement 16.0.0 words a 409 placement.concurrent_update (handlers/*.py,
# exception.py): a stale consumer or provider generation, or one of its in-server races.
_PLACEMENT_CONFLICT = re.compile(
    r"consumer generation conflict - expected \S+ but got \S+"
    r"|resource provider generation conflict"
    r"|Resource provider's generation already changed"
    r"|Another thread concurrently updated the"
    r"|was updated by another process"
)


class PlacementError(Exception):
    """Base class: a request Placement refused, or could not be made."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        title: str | None = None,
        detail: str | None = None,
        request_id: str | None = None,
        method: str | None = None,
        url: str | None = None,
        consumer_uuid: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.request_id = request_id
        self.method = method
        self.url = url
        self.consumer_uuid = consumer_uuid

    def __str__(self) -> str:
        if self.request_id is None and self.status is None and not (self.method or self.url):
            # Decided without a request of its own (a local check, the
            # configuration, or a verdict on what earlier reads returned):
            # naming a request would send an operator to Placement's logs
            # for one that does not exist.
            return self._unsent(self.message)
        parts = [f"Request {self.request_id or '(no request id)'}:"]
        if self.method and self.url:
            parts.append(f"{self.method} {self.url}")
        if self.status is not None:
            parts.append(f"-> {self.status}")
        if self.code:
            parts.append(f"[{self.code}]")
        parts.append(self.message)
        if self.consumer_uuid:
            parts.append(f"(consumer {self.consumer_uuid})")
        return " ".join(parts)

    def _unsent(self, message: str) -> str:
        return f"{message} (consumer {self.consumer_uuid})" if self.consumer_uuid else message

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, "
            f"request_id={self.request_id!r}, detail={self.detail!r})"
        )


class InvalidInput(PlacementError, ValueError):
    """The caller's input is malformed; nothing was sent."""

    def _unsent(self, message: str) -> str:
        return f"Refused locally, before any request: {super()._unsent(message)}"


class AllocationsNotHeld(InvalidInput):
    """A subtraction asks for more than the consumer holds; nothing was written.

    Raised by :func:`~reportclient.subtract_allocations` inside ``mutate``,
    so it is checked against the state each attempt reads, not at call time:
    the read went out, no write did. It ends the operation (it is never
    retried: the next read would show the same, or another writer's, state),
    unless an earlier write of the same operation may still land, when the
    operation ends in :class:`OutcomeUnknown` chained from it. ``state`` is
    the consumer as read; ``missing`` says, per provider and class, how much
    more the subtraction asked for than it holds.
    """

    def __init__(
        self,
        message: str,
        *,
        state: ConsumerAllocations,
        missing: Mapping[str, Mapping[str, int]],
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("consumer_uuid", state.consumer_uuid)
        super().__init__(message, **kwargs)
        self.state = state
        self.missing = {rp: dict(res) for rp, res in missing.items()}


class GenerationConflict(PlacementError):
    """A write kept losing races (``placement.concurrent_update``).

    ``attempts`` is how many writes were tried before giving up;
    ``consumer_conflict`` tells a stale consumer generation apart from a
    race between writers inside Placement.
    """

    def __init__(self, message: str, *, attempts: int = 1, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.attempts = attempts

    @property
    def consumer_conflict(self) -> bool:
        """True when Placement reported a consumer generation mismatch."""
        return bool(self.detail and _CONSUMER_CONFLICT.search(self.detail))

    @property
    def server_generation(self) -> int | None:
        """The generation Placement said it holds ("expected N"), if it said one.

        None for "expected null" and for conflicts that are not about the
        consumer generation.
        """
        match = _CONSUMER_CONFLICT.search(self.detail or "")
        if match and match.group(1).isdigit():
            return int(match.group(1))
        return None

    @property
    def consumer_moved(self) -> bool:
        """True when an allocation write lost Placement's in-server race to a writer of a consumer.

        The consumer's generation matched when Placement checked it and had
        moved by the time the write's transaction bumped it: another write
        of the same consumer landed in between, which is contention on the
        consumer and not on the providers ("Inventory and/or allocations
        changed while attempting to allocate: Another thread concurrently
        updated the data"; a provider race reads "...the resource provider
        data"). Shown on the real Placement in
        ``tests/functional/test_in_server_races.py``.
        """
        return bool(self.detail and _CONSUMER_MOVED.search(self.detail))

    @property
    def provider_conflict(self) -> bool:
        """True when Placement reported a stale resource provider generation."""
        return bool(self.detail and _PROVIDER_CONFLICT.search(self.detail))

    @property
    def explained(self) -> bool:
        """True when the conflict is worded as Placement words its own.

        A stale consumer or provider generation, or one of Placement's
        in-server races: something a write can lose to, and win after. A
        409 ``placement.concurrent_update`` worded otherwise (a proxy's, a
        test double's, a server this library does not know) says nothing a
        retry could act on, unless a read shows the subject changed.
        """
        return bool(self.detail and _PLACEMENT_CONFLICT.search(self.detail))

    def __str__(self) -> str:
        return f"{super().__str__()} after {self.attempts} attempt(s)"


class ConsumerChanged(GenerationConflict):
    """Another writer changed the consumer a claim would have replaced.

    ``state`` is what Placement holds now (just read); ``known`` is what this
    client knew when the claim began (None: it took the consumer for new);
    ``conflict`` the 409 that made the claim read, if one did (its
    ``explained`` says whether Placement worded it as its own). Nothing was
    overwritten. Read ``state``, decide, and claim again, or pass
    ``overwrite=True`` to replace whatever the consumer holds.
    """

    def __init__(
        self,
        message: str,
        *,
        state: ConsumerAllocations,
        known: ConsumerAllocations | None,
        conflict: GenerationConflict | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.state = state
        self.known = known
        self.conflict = conflict


class ProviderChanged(GenerationConflict):
    """Another writer changed a provider field that a write computed from a view would replace.

    A tree view's flush (:mod:`reportclient._engine.tree_views`) writes a
    field at the generation the view proved it at; when Placement has moved
    on and the field, read again, no longer holds what the view showed, the
    change was computed from content that is gone, and writing it would
    remove the other writer's. Nothing was written. ``state`` is the field
    as just read (a ``ProviderInventories``, ``ProviderTraits`` or
    ``ProviderAggregates``); ``known`` is its value in the view. Read the
    tree again, recompute, and flush again.
    """

    def __init__(self, message: str, *, state: Any, known: Any, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.state = state
        self.known = known


class ConsumerGone(PlacementError):
    """The consumer an update presupposes does not exist (deleted, or never created).

    Updates never create a consumer: creating is what ``claim`` does. ``state``
    is the consumer as just read (``exists`` False).
    """

    def __init__(self, message: str, *, state: ConsumerAllocations, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.state = state


class NothingToMove(PlacementError):
    """A move's source consumer holds no allocations (missing, or emptied meanwhile).

    Moving nothing is refused rather than done silently: the caller's premise
    (that the source held something) is wrong. ``state`` is the source as just
    read. Nothing was written.
    """

    def __init__(self, message: str, *, state: ConsumerAllocations, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.state = state


class CapacityExceeded(PlacementError):
    """Placement refused to allocate the inventory asked for; retrying cannot help.

    Raised for every "Unable to allocate inventory" 409: more than the
    capacity left, an amount outside min_unit/max_unit/step_size, or a
    resource class the provider has no inventory of. ``detail`` says which.
    """


class InventoryInUse(PlacementError):
    """Inventory cannot be removed or shrunk below what is allocated from it.

    ``placement.inventory.inuse``: retrying the same write cannot help, so it
    is never retried; move or release the allocations first (or reshape).
    """


class DuplicateName(PlacementError):
    """Another resource provider already has this name (or uuid)."""


class ProviderInUse(PlacementError):
    """The provider still has allocations against it and cannot be deleted."""


class CannotDeleteParent(ProviderInUse):
    """The provider has child providers; delete them first."""


class ProviderNotFound(PlacementError):
    """The resource provider named in the request does not exist."""


class PlacementUnavailable(PlacementError):
    """Placement could not be reached, timed out, or answered 5xx.

    ``outcome_unknown`` is True when a request may have been applied even
    though no answer proves it (reset connection, read timeout, any 5xx).
    """

    def __init__(self, message: str, *, outcome_unknown: bool = True, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.outcome_unknown = outcome_unknown


class OutcomeUnknown(PlacementUnavailable):
    """A write was sent, no answer proves whether it landed, and it is not re-applied.

    Raised when a read after a lost answer cannot tell whether the write
    landed (the fate rule, ``reportclient._engine.fate``) and Placement does
    not already hold what the operation wants: nothing is written again on
    such a guess, idempotent or not. Also raised for any operation that ends
    while one of its writes may still land (a refusal, a caller's callback
    raising, the policy giving up), chained from what ended it. ``sent`` is
    the write (its allocations and the generation it carried); ``state`` is
    what a read showed afterwards, or None when no read succeeded. For a
    provider write ``sent`` is a :class:`~reportclient.ProviderWrite` and
    ``state`` the provider's field as read (a ``ProviderInventories``,
    ``ProviderTraits`` or ``ProviderAggregates``). Built with ``lost=``, the
    error of the write whose answer was lost, it carries that error's status,
    code and request id.
    """

    def __init__(
        self,
        message: str,
        *,
        sent: AllocationWrite | ProviderWrite,
        state: Any,
        writes: Sequence[AllocationWrite] = (),
        states: Mapping[str, ConsumerAllocations] | None = None,
        lost: PlacementUnavailable | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("consumer_uuid", getattr(sent, "consumer_uuid", None))
        if lost is not None:
            kwargs.setdefault("status", lost.status)
            kwargs.setdefault("code", lost.code)
            kwargs.setdefault("request_id", lost.request_id)
        super().__init__(message, outcome_unknown=True, **kwargs)
        self.sent = sent
        self.state = state
        #: A multi-consumer write (one POST): every consumer's part of it.
        self.writes: tuple[AllocationWrite, ...] = tuple(writes)
        #: A multi-consumer write: each consumer as read afterwards (None: unread).
        self.states = states


class PlacementOverloaded(PlacementUnavailable):
    """Placement kept failing or conflicting, and the client's retry budget is spent.

    The operation stopped instead of adding retries to a Placement that is
    already behind (``reportclient.retry.RetryBudget``); no write of it can
    have landed (``outcome_unknown`` is False), so it is safe to try again
    later. ``last`` is the Placement error the refused retry would have
    answered (a :class:`GenerationConflict`, a 503...); its status, code
    and request id are this error's too. An operation whose write may have
    landed raises :class:`OutcomeUnknown` instead.
    """

    def __init__(self, message: str, *, last: PlacementError, **kwargs: Any) -> None:
        for name in ("status", "code", "title", "request_id", "method", "url", "consumer_uuid"):
            kwargs.setdefault(name, getattr(last, name))
        kwargs.setdefault("detail", last.detail)
        super().__init__(message, outcome_unknown=False, **kwargs)
        self.last = last


class MicroversionUnsupported(PlacementError):
    """The server's microversion range does not meet the client's needs."""


class PlacementAuthError(PlacementError):
    """No auth plugin, credentials Keystone refused, or a 401 from Placement.

    ``__cause__`` is keystoneauth1's exception (``MissingAuthPlugin``,
    ``Unauthorized``...), stripped of what held a credential.
    """


class PlacementEndpointError(PlacementError):
    """keystoneauth1 found no Placement endpoint; nothing was sent.

    ``__cause__`` is its ``EndpointNotFound`` or ``DiscoveryFailure``.
    """
