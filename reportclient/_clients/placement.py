"""PlacementClient: the one object users hold, made of the clients by resource.

Consumers' allocations (:mod:`.allocations`), scheduling reads
(:mod:`.scheduling`) and raw requests (:mod:`.raw`) are its methods;
providers, their fields and the catalogue are :attr:`PlacementClient.providers`
(:mod:`.providers`). All of them share one :class:`~.core.Core`: the
transport, the gateway (every route, both caches), the retry policy and the
contention memory, built from the keywords of :class:`~.core.ClientSettings`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from reportclient._clients.allocations import AllocationsClient
from reportclient._clients.batches import BatchesClient
from reportclient._clients.core import (
    SETTINGS,
    ClientSettings,
    Core,
    SessionOptions,
    Timeout,
    check_settings,
)
from reportclient._clients.providers import ProviderClient
from reportclient._clients.raw import RawClient
from reportclient._clients.scheduling import SchedulingClient
from reportclient._compat import Unpack
from reportclient._wire.negotiation import format_version
from reportclient._wire.transport import (
    DEFAULT_POOL_SIZE,
    DEFAULT_TIMEOUT,
    size_pool,
    validate_timeout,
)

__all__ = ["PlacementClient", "Timeout"]


class PlacementClient(AllocationsClient, BatchesClient, SchedulingClient, RawClient):
    """Conflict-safe access to consumers' allocations in Placement.

    Thread-safe: one client may serve many scheduler threads.

    :param adapter: a keystoneauth1 Adapter pointing at Placement.
    :param settings: the keywords of :class:`~reportclient.ClientSettings`
        (``retry``, ``cache_size``, ``cache_ttl``, ``clock``,
        ``microversion``, ``global_request_id``, ``timeout``,
        ``default_consumer_type``, ``reconcile_max_staleness``), each
        documented there.
    :raises InvalidInput: a setting out of range, before any request.
    """

    def __init__(self, adapter: ks_adapter.Adapter, **settings: Unpack[ClientSettings]) -> None:
        check_settings(settings, "PlacementClient")
        self._core = Core.build(adapter, settings)
        self._providers = ProviderClient(self._core)

    @classmethod
    def from_session(
        cls,
        session: ks_session.Session,
        *,
        pool_size: int | None = None,
        **options: Unpack[SessionOptions],
    ) -> PlacementClient:
        """Build a client over a keystoneauth1 Session.

        The keywords of :class:`~reportclient.ClientSettings` configure the
        client; the others go to the Adapter (``interface``,
        ``region_name``, ``endpoint_override``...).

        :param pool_size: connections kept per host; when given, the
            Session's transport adapters are replaced by keystoneauth's
            keep-alive adapter with that pool. None leaves the Session as is.
        """
        if pool_size is not None:
            size_pool(session.session, pool_size)
        settings: dict[str, Any] = {k: v for k, v in options.items() if k in SETTINGS}
        adapter_kwargs: dict[str, Any] = {k: v for k, v in options.items() if k not in SETTINGS}
        adapter_kwargs.setdefault("service_type", "placement")
        return cls(ks_adapter.Adapter(session, **adapter_kwargs), **settings)

    @classmethod
    def from_endpoint(
        cls,
        url: str,
        token: str | None = None,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        **options: Unpack[SessionOptions],
    ) -> PlacementClient:
        """Build a client for a Placement root URL and a fixed token.

        Without Keystone, as with Placement's ``noauth2`` strategy, the
        token is ``user[:project]`` (``"admin"`` for an administrator).

        :param pool_size: connections kept to Placement (default 64, so 64
            threads sharing the client open no connection beyond the pool).
        """
        auth = token_endpoint.Token(url, token) if token is not None else None
        # The Session's timeout is what bounds keystoneauth's version discovery.
        timeout = max(validate_timeout(options.get("timeout", DEFAULT_TIMEOUT)))
        session = ks_session.Session(auth=auth, timeout=timeout)
        options.setdefault("endpoint_override", url)
        return cls.from_session(session, pool_size=pool_size, **options)

    def __repr__(self) -> str:
        stats = self._core.gateway.cache_stats()
        return f"<PlacementClient {self._core.transport!r} cache {stats.size}/{stats.maxsize}>"

    @property
    def providers(self) -> ProviderClient:
        """Resource providers, inventories, traits, aggregates, reconcile and reshape."""
        return self._providers

    @property
    def microversion(self) -> str:
        """The microversion in use (negotiated on first use unless pinned)."""
        return format_version(self._core.gateway.microversion)

    @property
    def clock(self) -> Callable[[], float]:
        """The clock (seconds) the client's windows and ``cache_ttl`` are counted on.

        An adapter keeping a view (:meth:`ProviderClient.views`) asks it how
        old a proof is on the same clock the view counts its window on.
        """
        return self._core.clock

    @property
    def default_consumer_type(self) -> str:
        """The type given to a consumer a write creates when the caller names none."""
        return self._core.default_type
