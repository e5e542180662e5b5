"""The gateway: the one path from a typed request to Placement and back, and to the caches.

Every request the library sends to Placement goes through :class:`Gateway`:
it builds the path and the body (:mod:`.routes`), sends it through the wire
(:class:`.wire.Wire`), parses the answer into a model value, and is the
only code that tells the consumer and provider caches what the answer, or
a lost answer, proved. The engine's writes, the clients' typed calls,
reconcile, cascades and raw requests all come here, so no answer reaches a
caller without the caches hearing of it (botocore's one ``_make_api_call``
path is the model).

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
* **a DELETE**: a consumer is stored as missing; a provider's fields are
  forgotten, whatever the answer (a lost one included);
* **a raw write** (:meth:`Gateway.raw`): every consumer and provider its
  path and body concern (:func:`.routes.concerns`) is forgotten, sent or
  lost; one the path does not tell forgets everything.

A conflict's "expected N" is the engine's evidence for its next attempt,
never a state here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from reportclient._gateway import routes
from reportclient._gateway.consumer_cache import (
    DEFAULT_CACHE_SIZE,
    DEFAULT_CACHE_TTL,
    CacheStats,
    ConsumerCache,
)
from reportclient._gateway.provider_cache import ProviderCache, Snapshot
from reportclient._gateway.wire import Answer, Wire
from reportclient._model.candidate_results import AllocationCandidates
from reportclient._model.consumers import AllocationWrite, ConsumerAllocations
from reportclient._model.microversions import (
    LEAN_VERSION,
    MAPPINGS_VERSION,
    Microversion,
)
from reportclient._model.providers import (
    ProviderAggregates,
    ProviderAllocations,
    ProviderInventories,
    ProviderTraits,
    ProviderWrite,
    ResourceProvider,
)
from reportclient._model.usages import ProjectUsages, ProviderUsages
from reportclient.errors import GenerationConflict, PlacementError, PlacementUnavailable

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_CACHE_TTL",
    "CacheStats",
    "Gateway",
    "Snapshot",
    "TreeListing",
    "server_time",
    "written_state",
]

Field = TypeVar("Field", ProviderInventories, ProviderTraits, ProviderAggregates)

#: Placement's 404 detail for a DELETE of a consumer that holds nothing.
_NO_ALLOCATIONS = "No allocations for consumer"


def _nothing_to_delete(exc: PlacementError) -> bool:
    """Placement's 404 for deleting a consumer that holds nothing.

    Told apart by its wording (the 404 has no code): any other 404, a
    wrong endpoint say, is an error, not an empty consumer.
    """
    return exc.status == 404 and _NO_ALLOCATIONS in (exc.detail or "")


def _may_have_landed(exc: BaseException) -> bool:
    """Whether a failed write may still have changed its subject."""
    return isinstance(exc, GenerationConflict) or (
        isinstance(exc, PlacementUnavailable) and exc.outcome_unknown
    )


def server_time(answer: Answer, header: str) -> float | None:
    """An HTTP-date header of ``answer`` as POSIX seconds; None when absent or unreadable."""
    value = answer.headers.get(header) if answer.headers else None
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@dataclass(frozen=True, slots=True)
class TreeListing:
    """One tree's providers, and what the server's clock said of them.

    :param modified: the newest ``updated_at``/``created_at`` of the listed
        providers (``Last-Modified``, 1.15+): every change to a provider's
        fields, and every allocation against it, moves its generation and
        so its ``updated_at``; a provider re-created under its uuid has a new
        ``created_at``. None when the server did not say.
    :param answered: when the server answered (``Date``); None unknown.
    """

    providers: list[ResourceProvider]
    modified: float | None
    answered: float | None


def written_state(
    write: AllocationWrite, send_type: bool, kept_type: str | None
) -> ConsumerAllocations:
    """The state an acknowledged allocation write made.

    Placement answers 204 without a body; its generation rule is new
    consumer -> 1, every write +1, and an empty write deletes the consumer.
    A wrong guess costs a retry.
    """
    if not write.allocations:
        return ConsumerAllocations.missing(write.consumer_uuid)
    return ConsumerAllocations(
        write.consumer_uuid,
        {rp: dict(res) for rp, res in write.allocations.items()},
        (write.consumer_generation or 0) + 1,
        write.project_id,
        write.user_id,
        write.consumer_type if send_type and write.consumer_type else kept_type,
    )


def _allocation_body(write: AllocationWrite, send_type: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "allocations": {rp: {"resources": dict(res)} for rp, res in write.allocations.items()},
        "consumer_generation": write.consumer_generation,
        "project_id": write.project_id,
        "user_id": write.user_id,
    }
    if send_type and write.consumer_type is not None:
        body["consumer_type"] = write.consumer_type
    return body


class Gateway:
    """Every Placement route, and the only writer of the consumer and provider caches.

    Thread-safe: the caches lock themselves, and nothing else is shared.

    :param wire: the transport (:class:`reportclient._wire.transport.Transport`).
    :param consumers: the client's consumer cache.
    :param providers: the client's provider-field cache.
    """

    def __init__(self, wire: Wire, consumers: ConsumerCache, providers: ProviderCache) -> None:
        self._wire = wire
        self._consumers = consumers
        self._providers = providers

    @classmethod
    def build(
        cls, wire: Wire, *, cache_size: int, cache_ttl: float, clock: Callable[[], float]
    ) -> Gateway:
        """A gateway with its own caches.

        :raises ValueError: for a cache size or ttl out of range.
        """
        return cls(
            wire, ConsumerCache(cache_size, cache_ttl, clock), ProviderCache(cache_ttl, clock)
        )

    # -- the wire ----------------------------------------------------------------
    @property
    def microversion(self) -> Microversion:
        return self._wire.microversion

    def supports(self, version: Microversion) -> bool:
        return self._wire.supports(version)

    # -- what the caches hold (read-only views) -----------------------------------
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

    def field_entry(self, uuid: str, kind: type[Snapshot]) -> tuple[Snapshot, float] | None:
        """A field's snapshot and when it was taken, however old; None in doubt."""
        return self._providers.entry(uuid, kind)

    def trusted_field(
        self, uuid: str, kind: type[Snapshot], generation: int | None = None
    ) -> tuple[Snapshot, float] | None:
        """A field's snapshot if young (and, given ``generation``, proven at it)."""
        return self._providers.trusted_entry(uuid, kind, generation)

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

    def carry_field(self, snapshot: Snapshot, taken_at: float, proven: float | None = None) -> None:
        """Keep a snapshot this client's own write or a listing carried on, as old as its proof.

        Reconcile's write of one field moves the provider's generation by
        one and changes nothing else: the other fields it knew at the old
        generation hold at the new one, proven when they were first read. A
        tree listing that shows nothing changed since a field's proof proves
        it again, as of the listing (``taken_at`` and ``proven`` its own).
        """
        self._providers.put(snapshot, taken_at, proven=proven)

    @contextmanager
    def _forgetting(
        self,
        consumers: Iterable[str] = (),
        fields: Iterable[tuple[str, type[Snapshot]]] = (),
    ) -> Iterator[None]:
        """Forget the subjects when the request may have changed them and no state says how."""
        try:
            yield
        except BaseException as exc:
            if _may_have_landed(exc):
                for consumer in consumers:
                    self._consumers.forget(consumer)
                for uuid, kind in fields:
                    self._providers.forget(uuid, kind)
            raise

    # -- consumers -----------------------------------------------------------------
    def read_consumer(
        self, consumer: str, request_id: str | None, at_most: Microversion | None = None
    ) -> ConsumerAllocations:
        """``GET /allocations/{consumer}``, stored by the ordering rule."""
        ticket = self._consumers.ticket()
        reply = self._wire.request(
            "GET",
            routes.consumer(consumer),
            consumer_uuid=consumer,
            global_request_id=request_id,
            at_most=at_most,
        )
        state = ConsumerAllocations.from_json(consumer, reply.body or {})
        self._consumers.put(state, sent=ticket)
        return state

    def put_consumer(
        self,
        write: AllocationWrite,
        *,
        send_type: bool,
        kept_type: str | None,
        mappings: Mapping[str, Sequence[str]] | None,
        request_id: str | None,
    ) -> ConsumerAllocations:
        """``PUT /allocations/{consumer}`` once; the state it made, stored.

        A write without a type goes at ``LEAN_VERSION`` so Placement keeps
        the consumer's own type. A conflict or a lost answer forgets the
        consumer; a refusal changes nothing.
        """
        body = _allocation_body(write, send_type)
        if mappings and write.allocations and self._wire.supports(MAPPINGS_VERSION):
            body["mappings"] = {group: list(rps) for group, rps in mappings.items()}
        ticket = self._consumers.ticket()
        with self._forgetting(consumers=(write.consumer_uuid,)):
            self._wire.request(
                "PUT",
                routes.consumer(write.consumer_uuid),
                json=body,
                consumer_uuid=write.consumer_uuid,
                global_request_id=request_id,
                at_most=(
                    None
                    if "consumer_type" in body
                    else MAPPINGS_VERSION
                    if "mappings" in body
                    else LEAN_VERSION
                ),
            )
        new = written_state(write, send_type, kept_type)
        self._consumers.put(new, sent=ticket, written=True)
        return new

    def post_allocations(
        self,
        writes: Sequence[tuple[AllocationWrite, str | None]],
        consumers: Iterable[str],
        *,
        send_type: bool,
        request_id: str | None,
    ) -> dict[str, ConsumerAllocations]:
        """``POST /allocations``, all or nothing; every consumer's state afterwards, stored.

        :param writes: each write with the type its consumer keeps when none is sent.
        :param consumers: every consumer of the operation; one without a write
            is missing afterwards (it had nothing and was left out).
        """
        named = list(consumers)
        body = {w.consumer_uuid: _allocation_body(w, send_type) for w, _kept in writes}
        ticket = self._consumers.ticket()
        with self._forgetting(consumers=named):
            self._wire.request("POST", routes.ALLOCATIONS, json=body, global_request_id=request_id)
        by_consumer = {w.consumer_uuid: (w, kept) for w, kept in writes}
        result = {}
        for consumer in named:
            sent = by_consumer.get(consumer)
            if sent is None:
                new = ConsumerAllocations.missing(consumer)
            else:
                # A POST writes at 1.28+ without a type unless one is sent.
                new = written_state(sent[0], send_type, sent[1] if send_type else None)
            self._consumers.put(new, sent=ticket, written=True)
            result[consumer] = new
        return result

    def delete_consumer(self, consumer: str, request_id: str | None) -> bool:
        """``DELETE /allocations/{consumer}``, unguarded; whether it held allocations.

        Stored as missing once answered (204, or Placement's 404 for a
        consumer holding nothing); forgotten when the answer is lost.
        """
        ticket = self._consumers.ticket()
        try:
            with self._forgetting(consumers=(consumer,)):
                self._wire.request(
                    "DELETE",
                    routes.consumer(consumer),
                    consumer_uuid=consumer,
                    global_request_id=request_id,
                )
        except PlacementError as exc:
            if not _nothing_to_delete(exc):
                raise
            deleted = False
        else:
            deleted = True
        self._consumers.put(ConsumerAllocations.missing(consumer), sent=ticket, written=True)
        return deleted

    # -- provider fields -------------------------------------------------------------
    def read_field(self, kind: type[Field], uuid: str, request_id: str | None) -> Field:
        """``GET /resource_providers/{uuid}/{field}``, stored by the ordering rule."""
        ticket = self._providers.ticket()
        reply = self._wire.request(
            "GET", routes.provider_field(uuid, kind.ROUTE), global_request_id=request_id
        )
        state = kind.from_json(uuid, reply.body or {})
        self._providers.put(state, sent=ticket, proven=server_time(reply, "date"))
        return state

    def put_field(self, kind: type[Field], write: ProviderWrite, request_id: str | None) -> Field:
        """``PUT`` one field with the generation it was computed from; the field as answered."""
        ticket = self._providers.ticket()
        with self._forgetting(fields=[(write.uuid, kind)]):
            reply = self._wire.request(
                "PUT",
                routes.provider_field(write.uuid, write.route),
                json=dict(write.body),
                global_request_id=request_id,
            )
        # Placement answers with the field and its new generation: no guess.
        new = kind.from_json(write.uuid, reply.body or {})
        self._providers.put(new, sent=ticket, written=True, proven=server_time(reply, "date"))
        return new

    # -- providers ---------------------------------------------------------------------
    def list_providers(
        self, query: Mapping[str, str], request_id: str | None
    ) -> list[ResourceProvider]:
        """``GET /resource_providers`` with filters."""
        body = self._get(routes.providers(query), request_id)
        return [ResourceProvider.from_json(rp) for rp in body["resource_providers"]]

    def list_tree(self, anchor: str, request_id: str | None) -> TreeListing:
        """``GET /resource_providers?in_tree=``: a tree, and when it last changed."""
        reply = self._wire.request(
            "GET", routes.providers({"in_tree": anchor}), global_request_id=request_id
        )
        return TreeListing(
            [ResourceProvider.from_json(rp) for rp in (reply.body or {})["resource_providers"]],
            server_time(reply, "last-modified"),
            server_time(reply, "date"),
        )

    def field_proven(self, uuid: str, kind: type[Snapshot]) -> float | None:
        """The server's time of the answer that proved a field's content, if known."""
        return self._providers.proven(uuid, kind)

    def get_provider(self, uuid: str, request_id: str | None) -> ResourceProvider:
        return ResourceProvider.from_json(self._get(routes.provider(uuid), request_id))

    def create_provider(self, body: Mapping[str, Any], request_id: str | None) -> ResourceProvider:
        """``POST /resource_providers``; its fields are known empty at generation 0.

        A provider re-created under an old uuid restarts at 0 with nothing:
        whatever was cached of the old one is replaced, proven by this answer.
        """
        tickets = [self._providers.ticket() for _ in range(3)]
        reply = self._wire.request(
            "POST", routes.PROVIDERS, json=dict(body), global_request_id=request_id
        )
        rp = ResourceProvider.from_json(reply.body)
        for kind, ticket in zip(
            (ProviderInventories, ProviderTraits, ProviderAggregates), tickets, strict=True
        ):
            self._providers.put(kind(rp.uuid, rp.generation), sent=ticket, written=True)
        return rp

    def update_provider(
        self, uuid: str, body: Mapping[str, Any], request_id: str | None
    ) -> ResourceProvider:
        """``PUT /resource_providers/{uuid}`` (name, parent): no field changes."""
        reply = self._wire.request(
            "PUT", routes.provider(uuid), json=dict(body), global_request_id=request_id
        )
        return ResourceProvider.from_json(reply.body)

    def delete_provider(self, uuid: str, request_id: str | None) -> None:
        """``DELETE /resource_providers/{uuid}``; its fields are forgotten whatever the answer.

        After a delete, answered or lost, the uuid may come back as another
        provider at the generations this client knew: nothing it cached of
        the old one may be trusted again.
        """
        try:
            self._wire.request("DELETE", routes.provider(uuid), global_request_id=request_id)
        finally:
            self._providers.forget(uuid)

    def provider_allocations(self, uuid: str, request_id: str | None) -> ProviderAllocations:
        body = self._get(routes.provider_allocations(uuid), request_id)
        return ProviderAllocations.from_json(uuid, body or {})

    def reshape(
        self,
        body: Mapping[str, Any],
        writes: Sequence[tuple[AllocationWrite, str | None]],
        providers: Iterable[str],
        consumers: Iterable[str],
        *,
        send_type: bool,
        request_id: str | None,
    ) -> None:
        """``POST /reshaper``; the consumers' new states stored, the providers' fields forgotten."""
        named_rps, named_consumers = list(providers), list(consumers)
        ticket = self._consumers.ticket()
        try:
            with self._forgetting(consumers=named_consumers):
                self._wire.request(
                    "POST", routes.RESHAPER, json=dict(body), global_request_id=request_id
                )
        finally:
            # Placement answers the reshape without the new generations.
            for rp in named_rps:
                self._providers.forget(rp)
        for write, kept in writes:
            self._consumers.put(written_state(write, send_type, kept), sent=ticket, written=True)

    # -- the catalogue, candidates and usages (nothing cached) --------------------------
    def ensure(self, route: str, name: str, request_id: str | None) -> bool:
        """``PUT /resource_classes/{name}`` or ``/traits/{name}``; True if it was created."""
        path = routes.trait(name) if route == "traits" else routes.resource_class(name)
        return self._wire.request("PUT", path, global_request_id=request_id).status == 201

    def list_traits(self, query: Mapping[str, str], request_id: str | None) -> list[str]:
        return list(self._get(routes.traits(query), request_id)["traits"])

    def get_trait(self, name: str, request_id: str | None) -> None:
        self._get(routes.trait(name), request_id)

    def delete_trait(self, name: str, request_id: str | None) -> None:
        self._wire.request("DELETE", routes.trait(name), global_request_id=request_id)

    def list_resource_classes(self, request_id: str | None) -> list[str]:
        body = self._get(routes.resource_classes(), request_id)
        return [rc["name"] for rc in body["resource_classes"]]

    def get_resource_class(self, name: str, request_id: str | None) -> str:
        return str(self._get(routes.resource_class(name), request_id)["name"])

    def delete_resource_class(self, name: str, request_id: str | None) -> None:
        self._wire.request("DELETE", routes.resource_class(name), global_request_id=request_id)

    def candidates(self, query: str, request_id: str | None) -> AllocationCandidates:
        path = routes.with_query(routes.CANDIDATES, query)
        return AllocationCandidates.from_json(self._get(path, request_id) or {})

    def provider_usages(self, uuid: str, request_id: str | None) -> ProviderUsages:
        return ProviderUsages.from_json(uuid, self._get(routes.provider_usages(uuid), request_id))

    def usages(
        self,
        project_id: str,
        user_id: str | None,
        query: str,
        grouped: bool,
        request_id: str | None,
    ) -> ProjectUsages:
        body = self._get(routes.usages(query), request_id) or {}
        return ProjectUsages.from_json(project_id, user_id, body, grouped=grouped)

    def _get(self, path: str, request_id: str | None) -> Any:
        return self._wire.request("GET", path, global_request_id=request_id).body

    # -- raw requests ---------------------------------------------------------------------
    def raw(
        self,
        method: str,
        path: str,
        *,
        json: Any,
        version: Microversion | None,
        request_id: str | None,
        timeout: tuple[float, float] | None,
    ) -> Any:
        """A request to a route the library has not typed; a write forgets what it concerns.

        The gateway cannot parse what a raw write left, so every consumer
        and provider its path and body name is forgotten once it is
        answered or lost (``routes.concerns``; a path it cannot read
        forgets everything). Answers in flight across that forget arrive
        in doubt.
        """
        touched = routes.concerns(method, path, json)
        try:
            return self._wire.send_raw(
                method,
                path,
                json=json,
                version=version,
                global_request_id=request_id,
                timeout=timeout,
            )
        finally:
            if touched.everything:
                self._consumers.clear()
                self._providers.clear()
            for consumer in touched.consumers:
                self._consumers.forget(consumer)
            for uuid in touched.providers:
                self._providers.forget(uuid)
