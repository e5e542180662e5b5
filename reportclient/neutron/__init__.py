"""neutron-lib's ``PlacementAPIClient``, on reportclient: a drop-in for neutron's services.

``reportclient.neutron.PlacementAPIClient`` has the public interface of
``neutron_lib.placement.client.PlacementAPIClient`` (neutron-lib 5.0.1): the
same methods, keyword names, return values (a ``requests.Response`` where
neutron-lib returns one) and exception types (``neutron_lib.exceptions.placement``,
and keystoneauth's where neutron-lib lets them through). A deployment
switches with one line where neutron builds its client::

    from reportclient.neutron import PlacementAPIClient

Every call runs on a :class:`~reportclient.PlacementClient`, through its
gateway: reads and neutron's compare-and-swap writes are the requests
neutron-lib sends, at the microversion neutron asked for; from 1.28 the
writes neutron-lib gets wrong run on the library's engine (a QoS allocation
change re-read and recomputed under the retry policy, provider fields
written only when they differ from what the client proved, through a
provider view like nova's adapter keeps). doc/source/neutron_adapter.rst
lists every difference. Importing this module imports nothing of neutron or
neutron-lib: neutron-lib is looked up for its exception types when one is
raised, and without it the library's typed error is raised instead.
"""

from __future__ import annotations

import threading
from typing import Any

import tenacity
from keystoneauth1 import session as ks_session

from reportclient._adapters.keystoneauth import response_of
from reportclient._clients.placement import PlacementClient
from reportclient._engine.tree_views import TreeViews
from reportclient._model.microversions import Microversion
from reportclient.errors import InvalidInput, PlacementError
from reportclient.neutron._allocations import AllocationCalls
from reportclient.neutron._catalog import CatalogCalls
from reportclient.neutron._common import LOG, parse_api_version, plain
from reportclient.neutron._conf import client_from_neutron_conf
from reportclient.neutron._errors import answer
from reportclient.neutron._providers import ProviderCalls
from reportclient.retry import NO_RETRY

__all__ = ["GENERATION_CONFLICT_RETRIES", "PLACEMENT_API_LATEST_SUPPORTED", "PlacementAPIClient"]

#: neutron-lib's default ``openstack_api_version``.
PLACEMENT_API_LATEST_SUPPORTED = "placement 1.37"
#: neutron-lib's tries for a write below 1.28 (no engine there): re-read the
#: provider generation and send again, this many times in all.
GENERATION_CONFLICT_RETRIES = 10
#: Seconds the provider view hands a proven provider out without proving it
#: again (nova's ``resource_provider_association_refresh`` default).
REFRESH = 300.0


class PlacementAPIClient(ProviderCalls, CatalogCalls, AllocationCalls):
    """neutron-lib's Placement client interface over a :class:`~reportclient.PlacementClient`.

    Construction sends nothing and reads nothing but ``conf``'s
    ``[placement]`` options: the client is built on the first call, as
    neutron-lib builds its session.

    :param conf: neutron's ``oslo.config`` object (``cfg.CONF``): its
        ``[placement]`` group's keystoneauth auth and session options,
        ``region_name``, ``endpoint_type`` (the interface), and neutron-lib's
        ``auth_type = noauth`` with the endpoint in ``auth_section``.
    :param openstack_api_version: ``'placement X.Y'``: every request goes at
        that version with that version's shapes (the segments plugin's 1.1
        included); the library's own writes only where it is 1.28 or more.
    :param session: a keystoneauth Session to send through instead of the
        one ``[placement]``'s auth and session options make (neutron-lib's
        ``_client``); the client is still built here, pinned to the version.
    :param retry: the retry policy of the client built here (default
        :func:`~reportclient.default_retry`); tests pass one that records
        its sleeps instead of sleeping.
    :param client: a :class:`~reportclient.PlacementClient` to use as it is
        instead (a service sharing one client): it sends at its own
        microversion settings, so build it with ``exact_microversion=True``
        and neutron's version for neutron's versions on the wire.
    :param refresh: seconds the provider view trusts what it proved
        (:meth:`reportclient.ProviderClient.views`); 0: once proven, never again.
    :raises InvalidInput: a version that does not read ``placement X.Y``, a
        negative ``refresh``, or a ``session`` or ``retry`` with a ``client``.
    """

    def __init__(
        self,
        conf: Any,
        openstack_api_version: str = PLACEMENT_API_LATEST_SUPPORTED,
        *,
        session: ks_session.Session | None = None,
        retry: tenacity.Retrying | None = None,
        client: PlacementClient | None = None,
        refresh: float = REFRESH,
    ) -> None:
        self._version: Microversion = parse_api_version(openstack_api_version)
        self._openstack_api_version = openstack_api_version
        self._spelled = f"{self._version[0]}.{self._version[1]}"
        if isinstance(refresh, bool) or not isinstance(refresh, (int, float)) or refresh < 0:
            raise InvalidInput(f"refresh must be seconds >= 0, got {refresh!r}")
        self._conf = conf
        self._refresh = float(refresh)
        self._lock = threading.Lock()
        if client is not None and (session is not None or retry is not None):
            raise InvalidInput("a client is used as it is: no session or retry with it")
        self._session = session
        self._retry = retry
        self._client: PlacementClient | None = client
        self._view: TreeViews | None = None

    @property
    def placement(self) -> PlacementClient:
        """The reportclient client every call runs on (built from ``conf`` on first use)."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = client_from_neutron_conf(
                        self._conf, self._version, self._session, self._retry
                    )
        return self._client

    @property
    def _views(self) -> TreeViews:
        """The provider view the writes from 1.28 keep (built with the client)."""
        if self._view is None:
            placement = self.placement
            with self._lock:
                if self._view is None:
                    self._view = placement.providers.views(window=self._refresh)
        return self._view

    def _built(self) -> PlacementClient:
        """The client (and, from 1.28, its view), built before a call maps any error.

        Building reads ``[placement]``: an error there is the deployment's
        configuration, not an answer of Placement's, and is raised as it is
        (:class:`~reportclient.InvalidInput`), never as the call's
        neutron-lib or keystoneauth exception.
        """
        placement = self.placement
        if self._engine:
            _ = self._views
        return placement

    def _fresh(self) -> set[str]:
        """The providers the view proved within its window, on the client's clock."""
        now, window = self.placement.clock(), self._refresh
        return {
            uuid
            for uuid, at in self._views.refreshed().items()
            if window == 0 or now - at <= window
        }

    def __repr__(self) -> str:
        return f"<reportclient.neutron.PlacementAPIClient {self._openstack_api_version!r}>"

    def _raw(self, method: str, url: str, body: Any = None, *, what: str, **context: Any) -> Any:
        """One request as neutron-lib sends it (at its version, once), through the gateway.

        :returns: the answer (:class:`~reportclient.RawAnswer`).
        :raises: what neutron-lib's ``what`` raises for a failure (:mod:`._errors`).
        """
        placement = self._built()
        try:
            return placement.request(
                method, url, json=plain(body), microversion=self._spelled, retry=NO_RETRY
            )
        except PlacementError as exc:
            LOG.debug("%s: %s %s failed: %s", what, method, url, exc)
            answer(what, exc, **context)

    def _response(self, answered: Any, url: str) -> Any:
        """The ``requests.Response`` neutron-lib hands back for an answer."""
        return response_of(
            answered.status, answered.body, answered.headers, answered.request_id, url
        )
