"""The gateway's catalogue routes (traits, resource classes), candidates and usages.

Traits and resource classes are names, not generation-guarded state; an
allocation-candidates or usages answer is stale as soon as it is read, and
none of them is stored. Two things are, because they prove provider
fields: the last dated listing of the resource classes
(:class:`ClassListing`: a class renamed moves its ``updated_at``, which is
how a cached inventory naming a custom class is proven to mean what it
meant, :mod:`reportclient._engine.proofs`), and the forgetting a catalogue
write owes the provider cache: a class deleted or a trait deleted by this
client forgets every cached field naming it, as the raw rule does for a
rename (:func:`.routes.concerns`).
"""

from __future__ import annotations

from collections.abc import Mapping

from reportclient._gateway import routes
from reportclient._gateway.class_record import ClassListing
from reportclient._gateway.sending import Sending, server_time
from reportclient._model.candidate_results import AllocationCandidates
from reportclient._model.usages import ProjectUsages, ProviderUsages

__all__ = ["CatalogueRoutes", "ClassListing"]


class CatalogueRoutes(Sending):
    """``/traits``, ``/resource_classes``, ``/allocation_candidates`` and ``/usages``."""

    def ensure(self, route: str, name: str, request_id: str | None) -> bool:
        """``PUT /resource_classes/{name}`` or ``/traits/{name}``; True if it was created."""
        path = routes.trait(name) if route == "traits" else routes.resource_class(name)
        return self._wire.request("PUT", path, global_request_id=request_id).status == 201

    def list_traits(self, query: Mapping[str, str], request_id: str | None) -> list[str]:
        return list(self._get(routes.traits(query), request_id)["traits"])

    def get_trait(self, name: str, request_id: str | None) -> None:
        self._get(routes.trait(name), request_id)

    def delete_trait(self, name: str, request_id: str | None) -> None:
        try:
            self._wire.request("DELETE", routes.trait(name), global_request_id=request_id)
        finally:
            self._forget_names(traits=[name])

    def list_resource_classes(self, request_id: str | None) -> list[str]:
        body = self._get(routes.resource_classes(), request_id)
        return [rc["name"] for rc in body["resource_classes"]]

    def get_resource_class(self, name: str, request_id: str | None) -> str:
        return str(self._get(routes.resource_class(name), request_id)["name"])

    def delete_resource_class(self, name: str, request_id: str | None) -> None:
        try:
            self._wire.request("DELETE", routes.resource_class(name), global_request_id=request_id)
        finally:
            self._forget_names(classes=[name])

    def list_classes_dated(self, request_id: str | None) -> ClassListing:
        """``GET /resource_classes``, dated; kept as the client's last (:meth:`class_listing`)."""
        reply = self._wire.request("GET", routes.resource_classes(), global_request_id=request_id)
        listing = ClassListing(
            frozenset(rc["name"] for rc in (reply.body or {})["resource_classes"]),
            server_time(reply, "last-modified"),
            server_time(reply, "date"),
            self._classes.clock(),
        )
        self._classes.put(listing)
        return listing

    def class_listing(self) -> ClassListing | None:
        """The last dated listing of the resource classes, however old; None if none."""
        return self._classes.get()

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
