"""Clients the unit tests build, and the writes they repeat as the one project and user."""

from __future__ import annotations

from typing import Any

import reportclient
from reportclient.fixture import FakePlacement, make_client
from tests.support.wire import PROJECT, URL, USER

__all__ = ["claim", "client_on", "endpoint_client", "providers_on", "update"]


def client_on(
    fake: FakePlacement,
    sleeps: list[float] | None = None,
    *,
    rand: float = 0.5,
    microversion: str = "1.39",
    **kwargs: Any,
) -> reportclient.PlacementClient:
    """A client of ``fake`` pinned to ``microversion`` that never sleeps (``sleeps`` records).

    ``rand`` is the jitter the policy draws (0.5: the middle of the window; 1.0: its top).
    """
    record = sleeps.append if sleeps is not None else (lambda _s: None)
    policy = reportclient.default_retry(sleep=record, rand=lambda: rand)
    return make_client(fake, microversion=microversion, retry=policy, **kwargs)


def claim(client: reportclient.PlacementClient, consumer: str, allocs: Any, **kwargs: Any) -> Any:
    return client.claim(consumer, allocs, project_id=PROJECT, user_id=USER, **kwargs)


def update(client: reportclient.PlacementClient, consumer: str, mutate: Any) -> Any:
    return client.update_allocations(consumer, mutate, project_id=PROJECT, user_id=USER)


def providers_on(fake: FakePlacement, **kwargs: Any) -> Any:
    """The provider client of a never-sleeping ``client_on(fake, **kwargs)``."""
    return client_on(fake, **kwargs).providers


def endpoint_client(sleeps: list[float], **policy: Any) -> reportclient.PlacementClient:
    """A client of the requests-mock ``URL`` at 1.39 whose policy (``default_retry``'s
    keywords) records its sleeps in ``sleeps``."""
    retry = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5, **policy)
    return reportclient.PlacementClient.from_endpoint(
        URL, token="t", microversion="1.39", retry=retry
    )
