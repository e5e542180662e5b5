"""The gateway's routes that touch no cache: the catalogue, candidates and usages.

Traits and resource classes are names, not generation-guarded state; an
allocation-candidates or usages answer is stale as soon as it is read. So
nothing here is stored, and nothing here forgets.
"""

from __future__ import annotations

from collections.abc import Mapping

from reportclient._gateway import routes
from reportclient._gateway.sending import Sending
from reportclient._model.candidate_results import AllocationCandidates
from reportclient._model.usages import ProjectUsages, ProviderUsages

__all__ = ["CatalogueRoutes"]


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
