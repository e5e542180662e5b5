"""Arranging traits, aggregates and hooks on the real Placement for the scheduling tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import requests
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from reportclient import PlacementClient
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import LATEST


def set_traits(admin: PlacementAdmin, rp: str, traits: Iterable[str]) -> None:
    """Create any custom traits, then replace the provider's traits."""
    names = sorted(traits)
    for name in names:
        if name.startswith("CUSTOM_"):
            assert admin.request("PUT", f"/traits/{name}").status_code in (201, 204)
    generation = admin.provider(rp)["generation"]
    body = {"traits": names, "resource_provider_generation": generation}
    response = admin.request("PUT", f"/resource_providers/{rp}/traits", json=body)
    assert response.status_code == 200, response.text


def set_aggregates(admin: PlacementAdmin, rp: str, aggregates: Iterable[str]) -> None:
    """Replace the provider's aggregates (1.19+ body with its generation)."""
    generation = admin.provider(rp)["generation"]
    body = {"aggregates": sorted(aggregates), "resource_provider_generation": generation}
    response = admin.request("PUT", f"/resource_providers/{rp}/aggregates", json=body)
    assert response.status_code == 200, response.text


def hooked_client(
    placement: EmbeddedPlacement, hook: Callable[[requests.Response], None]
) -> PlacementClient:
    """A client whose session calls ``hook(response)`` after every answer it receives.

    The hook runs between two of the client's requests, as another writer would act.
    """
    session = ks_session.Session(auth=token_endpoint.Token(placement.url, "admin"))

    def on_response(response: requests.Response, *args: object, **kwargs: object) -> None:
        hook(response)

    session.session.hooks["response"].append(on_response)
    return PlacementClient.from_session(
        session, endpoint_override=placement.url, microversion=LATEST
    )
