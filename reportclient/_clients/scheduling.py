"""What a scheduler reads: allocation candidates and usages (part of ``PlacementClient``)."""

from __future__ import annotations

from typing import Any

from reportclient._clients.core import Core
from reportclient._model.candidate_results import AllocationCandidates
from reportclient._model.candidates import CandidatesQuery
from reportclient._model.microversions import CONSUMER_TYPE_VERSION
from reportclient._model.usages import ProjectUsages, ProviderUsages, usages_query
from reportclient._model.validation import validate_uuid
from reportclient._wire.negotiation import format_version
from reportclient._wire.transport import validate_request_id
from reportclient.errors import InvalidInput, MicroversionUnsupported

__all__ = ["SchedulingClient"]


class SchedulingClient:
    """Allocation candidates and usages: reads, nothing cached."""

    _core: Core

    def get_allocation_candidates(
        self,
        query: CandidatesQuery | None = None,
        *,
        global_request_id: str | None = None,
        **query_kwargs: Any,
    ) -> AllocationCandidates:
        """``GET /allocation_candidates``: where the resources asked for fit.

        Pass a :class:`CandidatesQuery`, or its keywords
        (``get_allocation_candidates(resources={"VCPU": 1}, limit=5)``).

        :raises InvalidInput: a malformed query, before any request.
        :raises MicroversionUnsupported: the query needs a newer microversion
            than the one in use; nothing was sent.
        """
        if query is None:
            query = CandidatesQuery(**query_kwargs)
        elif query_kwargs:
            raise InvalidInput("pass a CandidatesQuery or its keywords, not both")
        if self._core.gateway.microversion < query.version():
            raise MicroversionUnsupported(
                f"this query needs placement {format_version(query.version())}; "
                f"the client speaks {format_version(self._core.gateway.microversion)}"
            )
        return self._core.gateway.candidates(
            query.query_string(), validate_request_id(global_request_id)
        )

    def get_provider_usages(
        self, provider_uuid: str, *, global_request_id: str | None = None
    ) -> ProviderUsages:
        """``GET /resource_providers/{uuid}/usages``: used amount per inventoried class.

        :raises PlacementError: status 404 for an unknown provider.
        """
        rp = validate_uuid(provider_uuid, "resource provider uuid")
        return self._core.gateway.provider_usages(rp, validate_request_id(global_request_id))

    def get_usages(
        self,
        project_id: str,
        *,
        user_id: str | None = None,
        consumer_type: str | None = None,
        global_request_id: str | None = None,
    ) -> ProjectUsages:
        """``GET /usages``: a project's (or one of its users') allocations, summed.

        :param consumer_type: only consumers of this type, or ``"all"`` /
            ``"unknown"`` (microversion 1.38+).
        """
        version = self._core.gateway.microversion
        query = usages_query(project_id, user_id, consumer_type, version)
        grouped = version >= CONSUMER_TYPE_VERSION
        return self._core.gateway.usages(
            project_id, user_id, query, grouped, validate_request_id(global_request_id)
        )
