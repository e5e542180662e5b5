"""The gateway's provider routes: providers, their fields, what is allocated against them.

A field read or write answers with the field and the provider's
generation, stored in the provider cache under its ticket with the
server's time that proved it; creating a provider proves its three fields
empty at generation 0; deleting one forgets them whatever the answer.
:class:`FieldView` is what the engine may ask of that cache: read it, and
re-stamp a snapshot a listing proved again. This client's own write of
one field carries the other fields it knew to the new generation here, in
the gateway, under the cache's lock (:meth:`ProviderCache.carry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reportclient._gateway import routes
from reportclient._gateway.provider_cache import FIELD_KINDS, Field, ProviderCache, Snapshot
from reportclient._gateway.sending import Sending, server_time
from reportclient._model.providers import ProviderAllocations, ProviderWrite, ResourceProvider
from reportclient.errors import PlacementUnavailable, ProviderNotFound

__all__ = ["FieldView", "ProviderRoutes", "TreeListing", "server_time"]


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


class FieldView:
    """The provider cache as the engine sees it: read, and re-stamp what a listing proved."""

    def __init__(self, providers: ProviderCache) -> None:
        self._providers = providers

    def entry(self, uuid: str, kind: type[Snapshot]) -> tuple[Snapshot, float] | None:
        """The field's last snapshot and when it was taken, however old; None in doubt."""
        return self._providers.entry(uuid, kind)

    def trusted_entry(
        self, uuid: str, kind: type[Snapshot], generation: int | None = None
    ) -> tuple[Snapshot, float] | None:
        """The snapshot if young (and, given ``generation``, proven at it)."""
        return self._providers.trusted_entry(uuid, kind, generation)

    def proven(self, uuid: str, kind: type[Snapshot]) -> float | None:
        """The server's time of the answer that proved the field's content, if known."""
        return self._providers.proven(uuid, kind)

    def reprove(self, snapshot: Snapshot, taken_at: float, proven: float | None) -> bool:
        """A field proven again without a read of it, if it is still the entry the caller took.

        A tree listing whose ``Last-Modified`` predates the field's proof, or
        the provider's own, proves its content as of that answer, for
        another window. The cache applies it only while nothing was stored
        for the field since (:meth:`ProviderCache.reprove`): this client's
        other threads may have written it meanwhile.
        """
        return self._providers.reprove(snapshot, taken_at, proven)


class ProviderRoutes(Sending):
    """``/resource_providers`` and each provider's fields and allocations."""

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
        if new.generation == write.generation + 1:
            self._providers.carry(write.uuid, kind, write.generation)
        return new

    # -- providers ---------------------------------------------------------------------
    def list_providers(
        self, query: Mapping[str, str], request_id: str | None
    ) -> list[ResourceProvider]:
        """``GET /resource_providers`` with filters."""
        return self.list_dated(query, request_id).providers

    def list_dated(self, query: Mapping[str, str], request_id: str | None) -> TreeListing:
        """``GET /resource_providers`` with filters, and when the listed providers last changed."""
        ticket = self._records.ticket()
        reply = self._wire.request("GET", routes.providers(query), global_request_id=request_id)
        found = [ResourceProvider.from_json(rp) for rp in (reply.body or {})["resource_providers"]]
        self._records.put(found, sent=ticket)
        return TreeListing(found, server_time(reply, "last-modified"), server_time(reply, "date"))

    def list_tree(self, anchor: str, request_id: str | None) -> TreeListing:
        """``GET /resource_providers?in_tree=``: a tree, and when it last changed."""
        ticket = self._records.ticket()
        reply = self._wire.request(
            "GET", routes.providers({"in_tree": anchor}), global_request_id=request_id
        )
        listing = TreeListing(
            [ResourceProvider.from_json(rp) for rp in (reply.body or {})["resource_providers"]],
            server_time(reply, "last-modified"),
            server_time(reply, "date"),
        )
        self._records.listed(anchor, listing.providers, ticket)
        return listing

    def get_provider(self, uuid: str, request_id: str | None) -> ResourceProvider:
        return self.read_provider(uuid, request_id).providers[0]

    def read_provider(self, uuid: str, request_id: str | None) -> TreeListing:
        """``GET /resource_providers/{uuid}``, and when it last changed (its ``Last-Modified``).

        :raises ProviderNotFound: it does not exist (its record is dropped).
        """
        ticket = self._records.ticket()
        try:
            reply = self._wire.request("GET", routes.provider(uuid), global_request_id=request_id)
        except ProviderNotFound:
            self._records.dropped(uuid, answered=True)
            raise
        rp = ResourceProvider.from_json(reply.body)
        self._records.put([rp], sent=ticket)
        return TreeListing([rp], server_time(reply, "last-modified"), server_time(reply, "date"))

    def create_provider(self, body: Mapping[str, Any], request_id: str | None) -> ResourceProvider:
        """``POST /resource_providers``; its fields are known empty at generation 0.

        A provider re-created under an old uuid restarts at 0 with nothing:
        whatever was cached of the old one is replaced, proven by this answer.
        """
        tickets = [self._providers.ticket() for _ in FIELD_KINDS]
        ticket = self._records.ticket()
        named = body.get("uuid")
        try:
            reply = self._wire.request(
                "POST", routes.PROVIDERS, json=dict(body), global_request_id=request_id
            )
        except PlacementUnavailable as exc:
            if exc.outcome_unknown and isinstance(named, str):
                self._records.forget(named)
            raise
        rp = ResourceProvider.from_json(reply.body)
        answered = server_time(reply, "date")
        for kind, ticket_ in zip(FIELD_KINDS, tickets, strict=True):
            self._providers.put(
                kind(rp.uuid, rp.generation), sent=ticket_, written=True, proven=answered
            )
        self._records.created(rp, ticket)
        return rp

    def update_provider(
        self, uuid: str, body: Mapping[str, Any], request_id: str | None
    ) -> ResourceProvider:
        """``PUT /resource_providers/{uuid}`` (name, parent): no field changes."""
        ticket = self._records.ticket()
        try:
            reply = self._wire.request(
                "PUT", routes.provider(uuid), json=dict(body), global_request_id=request_id
            )
        except PlacementUnavailable as exc:
            if exc.outcome_unknown:
                self._records.forget(uuid)
            raise
        rp = ResourceProvider.from_json(reply.body)
        self._records.put([rp], sent=ticket)
        return rp

    def delete_provider(self, uuid: str, request_id: str | None) -> None:
        """``DELETE /resource_providers/{uuid}``; its fields are forgotten whatever the answer.

        After a delete, answered or lost, the uuid may come back as another
        provider at the generations this client knew: nothing it cached of
        the old one may be trusted again. Its record goes too; the tree it
        was in stays whole only when the answer says it is gone.
        """
        answered = False
        try:
            self._wire.request("DELETE", routes.provider(uuid), global_request_id=request_id)
            answered = True
        except ProviderNotFound:
            answered = True
            raise
        finally:
            self._providers.forget(uuid)
            self._records.dropped(uuid, answered=answered)

    def provider_allocations(self, uuid: str, request_id: str | None) -> ProviderAllocations:
        body = self._get(routes.provider_allocations(uuid), request_id)
        return ProviderAllocations.from_json(uuid, body or {})
