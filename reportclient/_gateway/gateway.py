"""The gateway: the one path from a typed request to Placement and back, and to the caches.

Every request the library sends to Placement goes through :class:`Gateway`:
it builds the path and the body (:mod:`.routes`), sends it through the wire
(:class:`reportclient._wire.transport.Transport`), parses the answer into a model value, and is the
only code that tells the consumer and provider caches what the answer, or
a lost answer, proved. The engine's writes, the clients' typed calls,
reconcile, cascades and raw requests all come here, so no answer reaches a
caller without the caches hearing of it (botocore's one ``_make_api_call``
path is the model).

Its routes come in three families, a module each: allocations
(:mod:`.consumer_routes`), providers and their fields
(:mod:`.provider_routes`), and what touches no cache, the catalogue,
candidates and usages (:mod:`.catalogue_routes`). What they share, the
wire, the caches and the forget rule below, is :mod:`.sending`. This module
holds the rest: the caches' read-only views, what the engine itself proves,
and raw requests.

What each kind of answer does to the caches, written once:

* **an answer with a state** (a read, an acknowledged write): stored under
  the ticket taken before the request was sent, by the ordering rule of
  :mod:`.ordering` (an answer that overlapped a different one is kept in
  doubt, never trusted);
* **a lost answer** (reset, read timeout, 5xx after the request may have
  reached Placement) and **a conflict**: the subject is forgotten, and
  answers in flight across the forget arrive in doubt;
* **a refusal** (400, 404, capacity, in use): nothing was written, the
  caches keep what they hold;
* **a DELETE**: a consumer is stored as missing; a provider's fields and
  record are forgotten, whatever the answer (a lost one included);
* **a provider document** (a listing, a read, a create, a rename): its
  record is stored (:mod:`.provider_records`), and a tree listing proves
  its tree whole, so a tree view knows its members without listing again;
* **a raw write** (:meth:`Gateway.raw`): every consumer and provider its
  path and body concern (:func:`.routes.concerns`) is forgotten, sent or
  lost; one the path does not tell forgets everything;
* **a catalogue write** (a resource class renamed through :meth:`Gateway.raw`,
  a class or a trait deleted, raw or typed): every cached field naming it,
  of any provider (no generation moved), and answers of that field in
  flight arrive in doubt.

A conflict's "expected N" is the engine's evidence for its next attempt,
never a state here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from reportclient._gateway import routes
from reportclient._gateway.catalogue_routes import CatalogueRoutes
from reportclient._gateway.consumer_cache import (
    DEFAULT_CACHE_SIZE,
    DEFAULT_CACHE_TTL,
    CacheStats,
    ConsumerCache,
)
from reportclient._gateway.consumer_routes import ConsumerRoutes, written_state
from reportclient._gateway.provider_cache import FIELD_KINDS, Field, ProviderCache, Snapshot
from reportclient._gateway.provider_records import ProviderRecords
from reportclient._gateway.provider_routes import (
    FieldView,
    ProviderRoutes,
    TreeListing,
    server_time,
)
from reportclient._model.consumers import ConsumerAllocations
from reportclient._model.microversions import Microversion
from reportclient._model.providers import ResourceProvider
from reportclient._model.raw import RawRequest

if TYPE_CHECKING:  # an annotation only: the gateway never imports the wire (setup.cfg)
    from reportclient._wire.transport import Reply, Transport

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_CACHE_TTL",
    "FIELD_KINDS",
    "CacheStats",
    "Field",
    "FieldView",
    "Gateway",
    "Snapshot",
    "TreeListing",
    "server_time",
    "written_state",
]


class Gateway(ConsumerRoutes, ProviderRoutes, CatalogueRoutes):
    """Every Placement route, and the only writer of the consumer and provider caches.

    Thread-safe: the caches lock themselves, and nothing else is shared.

    :param wire: the transport (:class:`reportclient._wire.transport.Transport`).
    :param consumers: the client's consumer cache.
    :param providers: the client's provider-field cache.
    """

    @classmethod
    def build(
        cls, wire: Transport, *, cache_size: int, cache_ttl: float, clock: Callable[[], float]
    ) -> Gateway:
        """A gateway with its own caches.

        :raises ValueError: for a cache size or ttl out of range.
        """
        return cls(
            wire,
            ConsumerCache(cache_size, cache_ttl, clock),
            ProviderCache(cache_ttl, clock),
            ProviderRecords(),
        )

    # -- the wire ----------------------------------------------------------------
    @property
    def microversion(self) -> Microversion:
        return self._wire.microversion

    def supports(self, version: Microversion) -> bool:
        return self._wire.supports(version)

    # -- what the caches hold (read-only views) -----------------------------------
    @property
    def fields(self) -> FieldView:
        """What the engine may read of the provider cache, and carry on."""
        return FieldView(self._providers)

    def cache_stats(self) -> CacheStats:
        return self._consumers.stats()

    def consumer_entry(self, consumer: str) -> tuple[ConsumerAllocations, bool] | None:
        """The cached state and whether a write may be computed from it, or None."""
        return self._consumers.lookup(consumer)

    def consumer_known(self, consumer: str) -> ConsumerAllocations | None:
        """What this client last knew of a consumer, however old or in doubt (a claim's premise)."""
        return self._consumers.known(consumer)

    def consumer_cached(self, consumer: str) -> ConsumerAllocations | None:
        """The cached state however old, or None (also when overlapping answers put it in doubt)."""
        return self._consumers.get(consumer)

    def provider_record(self, uuid: str) -> ResourceProvider | None:
        """The provider as an answer last showed it (name, parent, root, generation), or None."""
        return self._records.get(uuid)

    def tree_members(self, root: str) -> list[ResourceProvider] | None:
        """``root``'s tree, parents first, if a listing (and this client's own writes since)
        proved it whole; None otherwise."""
        return self._records.tree(root)

    # -- what the engine itself proves ---------------------------------------------
    def keep_known(self, state: ConsumerAllocations) -> None:
        """Keep ``state`` as what the client knows, never to be written from."""
        self._consumers.put(state, trusted=False)

    def forget_consumer(self, consumer: str) -> None:
        """Forget a consumer whose state a conflict or an open write put in doubt."""
        self._consumers.forget(consumer)

    def forget_field(self, uuid: str, kind: type[Snapshot] | None = None) -> None:
        """Forget one field of a provider (or all of them)."""
        self._providers.forget(uuid, kind)

    def forget_provider(self, uuid: str) -> None:
        """Forget a provider: its record, its tree's wholeness and its fields (a caller said so)."""
        self._providers.forget(uuid)
        self._records.forget(uuid)

    # -- raw requests ---------------------------------------------------------------------
    def raw(self, request: RawRequest) -> Reply:
        """A request to a route the library has not typed; a write forgets what it concerns.

        The gateway cannot parse what a raw write left, so every consumer
        and provider its path and body name is forgotten once it is
        answered or lost (``routes.concerns``; a path it cannot read
        forgets everything). Answers in flight across that forget arrive
        in doubt.
        """
        touched = routes.concerns(request.method, request.path, request.json)
        try:
            return self._wire.send_raw(request)
        finally:
            if touched.everything:
                self._consumers.clear()
                self._providers.clear()
                self._records.clear()
            for consumer in touched.consumers:
                self._consumers.forget(consumer)
            for uuid in touched.providers:
                self._providers.forget(uuid)
                self._records.forget(uuid)
            self._forget_names(touched.classes, touched.traits)
