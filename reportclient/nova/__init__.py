"""nova's ``SchedulerReportClient``, on reportclient: a drop-in for nova's services.

``reportclient.nova.SchedulerReportClient`` has the public interface of
``nova.scheduler.client.report.SchedulerReportClient`` (nova 34): the same
method names, arguments, return values and, when nova is importable, the
same ``nova.exception`` types. A deployment switches with one line where
nova builds its client::

    from reportclient.nova import SchedulerReportClient

Every call runs on reportclient's engine (:class:`~reportclient.PlacementClient`):
writes carry the generations they computed from and are recomputed from a
fresh read after a conflict, never replayed. Where nova's own behaviour is
the bug (the shelve race, a retry that replays a stale body, a consumer
generation conflict after a consumer was emptied) the signature is nova's
and the behaviour is fixed; doc/source/nova_adapter.rst lists every
difference. nova is never imported when this module is: it is looked up
for its exception types when one is raised, for its ``ProviderTree`` by
the two calls that return one, and for its association refresh option by
the calls on the provider-tree view (a library :class:`~reportclient.TreeViews`
kept as nova keeps its ``ProviderTree`` cache).
"""

from __future__ import annotations

from typing import Any

from keystoneauth1 import adapter as ks_adapter

from reportclient._adapters.keystoneauth import error_body, keystoneauth_error, response_of
from reportclient._clients.placement import PlacementClient
from reportclient.errors import InvalidInput, PlacementError
from reportclient.nova._allocations import AllocationCalls, doubled_up
from reportclient.nova._common import (
    ASSOCIATION_REFRESH,
    LOG,
    AggInfo,
    ProviderAllocInfo,
    TraitInfo,
    association_refresh_option,
    nova_module,
)
from reportclient.nova._common import request_id as _request_id
from reportclient.nova._errors import answer
from reportclient.nova._providers import ProviderCalls, specs_of
from reportclient.nova._query import query_from_string, query_of
from reportclient.retry import NO_RETRY

__all__ = [
    "ASSOCIATION_REFRESH",
    "AggInfo",
    "ProviderAllocInfo",
    "SchedulerReportClient",
    "TraitInfo",
    "doubled_up",
    "query_from_string",
    "query_of",
    "specs_of",
]


#: What nova 34 reports as the version of its allocation requests (its
#: SAME_SUBTREE_VERSION) and later passes to ``claim_resources``: the bodies
#: read at the client's own microversion have that shape, and the adapter's
#: claim reads the consumer rather than branching on the version.
CANDIDATES_VERSION = "1.36"


class _Context:
    """A global request id as nova's context carries one (checked as every call's is)."""

    def __init__(self, global_id: str | None) -> None:
        self.global_id = global_id


class SchedulerReportClient(AllocationCalls, ProviderCalls):
    """nova's report client interface over a :class:`~reportclient.PlacementClient`.

    :param adapter: a keystoneauth1 Adapter for Placement, as nova's
        ``SchedulerReportClient(adapter=None)`` takes; None builds nova's own
        (``nova.utils.get_sdk_adapter("placement", admin=True)``, which needs nova).
    :param client: a :class:`~reportclient.PlacementClient` to use instead
        (then ``adapter`` is only used by :meth:`get` and friends).
    :param association_refresh: seconds the provider-tree view is handed out
        without proving it again (0: once proven, never again), as nova's
        ``[compute] resource_provider_association_refresh``. None (the
        default): that option, read on every call when nova is installed
        (it is mutable), else :data:`ASSOCIATION_REFRESH`.
    """

    def __init__(
        self,
        adapter: ks_adapter.Adapter | None = None,
        *,
        client: PlacementClient | None = None,
        association_refresh: float | None = None,
    ) -> None:
        if client is None:
            if adapter is None:
                adapter = self._default_adapter()
            client = PlacementClient(adapter)
        if association_refresh is not None and (
            isinstance(association_refresh, bool)
            or not isinstance(association_refresh, (int, float))
            or association_refresh < 0
        ):
            raise InvalidInput(
                f"association_refresh must be seconds >= 0, got {association_refresh!r}"
            )
        #: nova's attribute name for the Adapter its raw get/put/post/delete use.
        self._client = adapter
        self._placement = client
        self._association_refresh = association_refresh
        self._views = client.providers.views(window=self._refresh_window)

    def _refresh_window(self) -> float:
        """The view's window: the keyword, else nova's option (mutable: read every call)."""
        if self._association_refresh is not None:
            return float(self._association_refresh)
        return association_refresh_option()

    @staticmethod
    def _default_adapter() -> ks_adapter.Adapter:
        """nova's adapter from its ``[placement]`` options (the one nova's client builds)."""
        adapter: ks_adapter.Adapter = nova_module("nova.utils").get_sdk_adapter(
            "placement", admin=True
        )
        return adapter

    @property
    def placement(self) -> PlacementClient:
        """The reportclient client every call runs on."""
        return self._placement

    # -- nova's raw requests: answers returned, never raised ----------------------------------
    def _raw(self, method: str, url: str, data: Any, version: str | None, rid: str | None) -> Any:
        """One request through the client's gateway, answered as keystoneauth answers nova.

        Sent once (nova's are): a write it concerns is forgotten by the
        client's caches like any raw write. Any status comes back as a
        ``requests.Response`` (nova's ``raise_exc=False``); a failure with no
        answer raises keystoneauth's exception of the same kind.
        """
        try:
            answered = self._placement.request(
                method,
                url,
                json=data,
                microversion=version,
                global_request_id=_request_id(_Context(rid)),
                retry=NO_RETRY,
            )
        except InvalidInput as exc:
            # Refused before the wire (a path with dot segments, say): a 400,
            # as Placement answers what it cannot route.
            return response_of(400, error_body(exc, status=400), {}, None, url)
        except PlacementError as exc:
            if exc.status is None:
                raise keystoneauth_error(exc) from exc
            return response_of(exc.status, error_body(exc), {}, exc.request_id, url)
        return response_of(
            answered.status, answered.body, answered.headers, answered.request_id, url
        )

    def get(
        self, url: str, version: str | None = None, global_request_id: str | None = None
    ) -> Any:
        """``GET url``: the response, whatever its status (as nova's)."""
        return self._raw("GET", url, None, version, global_request_id)

    def post(
        self, url: str, data: Any, version: str | None = None, global_request_id: str | None = None
    ) -> Any:
        """``POST url`` with a JSON body: the response, whatever its status (sent once)."""
        return self._raw("POST", url, data, version, global_request_id)

    def put(
        self, url: str, data: Any, version: str | None = None, global_request_id: str | None = None
    ) -> Any:
        """``PUT url`` with a JSON body: the response, whatever its status (sent once)."""
        return self._raw("PUT", url, data, version, global_request_id)

    def delete(
        self, url: str, version: str | None = None, global_request_id: str | None = None
    ) -> Any:
        """``DELETE url``: the response, whatever its status (sent once)."""
        return self._raw("DELETE", url, None, version, global_request_id)

    # -- nova's provider cache: the view ------------------------------------------------------
    def clear_provider_cache(self, init: bool = False) -> None:
        """Drop every tree from the view: the next call proves each one it asks for anew."""
        if not init:
            LOG.info("Clearing the report client's provider cache.")
        self._views.clear()

    def invalidate_resource_provider(self, name_or_uuid: str, cacheonly: bool = False) -> None:
        """Make the provider stale; unless ``cacheonly``, drop it (and what hangs from it).

        No request: the next ``get_provider_tree_and_ensure_root`` proves it again.
        """
        held = self._shown(name_or_uuid)
        self._views.invalidate(held[0].uuid if held else name_or_uuid, keep=cacheonly)

    # -- scheduling ---------------------------------------------------------------------------
    def get_allocation_candidates(self, context: Any, resources: Any) -> tuple[Any, Any, Any]:
        """``(allocation_requests, provider_summaries, microversion)`` for a ``ResourceRequest``.

        As nova, ``(None, None, None)`` when Placement refuses the query.
        """
        try:
            found = self._placement.get_allocation_candidates(
                query_of(resources), global_request_id=_request_id(context)
            )
        except PlacementError as exc:
            LOG.error("allocation candidates for %s failed: %s", resources, exc)
            failed: tuple[Any, Any, Any] = answer("get_allocation_candidates", exc)
            return failed
        requests = [ar.to_json() for ar in found.allocation_requests]
        summaries = {
            uuid: {
                "resources": {
                    rc: {"capacity": r.capacity, "used": r.used} for rc, r in s.resources.items()
                },
                "traits": sorted(s.traits),
                "parent_provider_uuid": s.parent_provider_uuid,
                "root_provider_uuid": s.root_provider_uuid,
            }
            for uuid, s in found.provider_summaries.items()
        }
        return requests, summaries, CANDIDATES_VERSION

    # -- usages -------------------------------------------------------------------------------
    def _usages(
        self, method: str, context: Any, project_id: str, user_id: str | None = None
    ) -> dict[str, int]:
        try:
            got = self._placement.get_usages(
                project_id, user_id=user_id, global_request_id=_request_id(context)
            )
        except PlacementError as exc:
            failed: dict[str, int] = answer(method, exc, project_id=project_id, user_id=user_id)
            return failed
        return dict(got.usages)

    def get_usages_counts_for_limits(self, context: Any, project_id: str) -> dict[str, int]:
        """The project's usage per resource class (``{"VCPU": 2, ...}``).

        :raises UsagesRetrievalFailed: Placement answered with an error.
        """
        return self._usages("get_usages_counts_for_limits", context, project_id)

    def get_usages_counts_for_quota(
        self, context: Any, project_id: str, user_id: str | None = None
    ) -> dict[str, dict[str, int]]:
        """``{"project": {"cores", "ram"}, "user": {...}}`` as nova's quota counts them.

        Cores are VCPU plus PCPU, as nova counts them.

        :raises UsagesRetrievalFailed: Placement answered with an error.
        """

        def counts(usages: dict[str, int]) -> dict[str, int]:
            return {
                "cores": usages.get("VCPU", 0) + usages.get("PCPU", 0),
                "ram": usages.get("MEMORY_MB", 0),
            }

        method = "get_usages_counts_for_quota"
        out = {"project": counts(self._usages(method, context, project_id))}
        if user_id:
            out["user"] = counts(self._usages(method, context, project_id, user_id))
        return out
