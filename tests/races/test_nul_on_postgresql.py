"""A NUL character in an owner or a provider name: Placement on PostgreSQL answers 500.

PostgreSQL stores no NUL in a text column, so Placement 16.0.0 fails inside the write and
answers 500; a client that sent it would have to report a write that cannot have landed as
``OutcomeUnknown``. The raw requests show the 500; the client refuses the same values with
``InvalidInput`` before any request (a counting adapter sees none). Needs the PostgreSQL
cluster (skips without one; fails instead under REPORTCLIENT_REQUIRE_DATABASES=1).
"""

from __future__ import annotations

from typing import Any

import pytest
import requests
from requests.adapters import HTTPAdapter

import reportclient as rc
from reportclient.testing import PlacementAdmin, PlacementCluster
from tests.functional._helpers import raw_body
from tests.functional._lost_answers import client_over
from tests.races.runner import new_id, server_errors

# The races suite's ``cluster`` fixture (tests/races/conftest.py), on PostgreSQL alone.
pytestmark = [
    pytest.mark.functional,
    pytest.mark.parametrize("cluster", ["postgresql"], indirect=True),
]

NUL = "owner\x00x"


class _Counting(HTTPAdapter):
    """Counts every request the client sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(f"{request.method} {request.url}")
        return super().send(request, *args, **kwargs)


@pytest.mark.parametrize("field", ["project_id", "user_id"])
def test_a_nul_in_an_owner_is_a_500_on_postgresql_and_refused_locally(
    cluster: PlacementCluster, admin: PlacementAdmin, field: str
) -> None:
    rp = admin.create_provider(inventory={"VCPU": 4})
    consumer = new_id()
    errors = server_errors(cluster)

    raw = admin.put_allocations(consumer, raw_body({rp: {"VCPU": 1}}, None, **{field: NUL}))

    assert raw.status_code == 500, raw.text
    assert server_errors(cluster) == errors + 1
    adapter = _Counting()
    client = client_over(cluster.url, adapter)
    owner = {"project_id": "p", "user_id": "u", field: NUL}
    with pytest.raises(rc.InvalidInput, match=f"{field} must not contain a NUL"):
        client.claim(consumer, {rp: {"VCPU": 1}}, **owner)
    assert adapter.sent == []
    assert admin.get_allocations(consumer)["allocations"] == {}


def test_a_nul_in_a_provider_name_is_a_500_on_postgresql_and_refused_locally(
    cluster: PlacementCluster, admin: PlacementAdmin
) -> None:
    uuid = new_id()
    errors = server_errors(cluster)

    raw = admin.request("POST", "/resource_providers", json={"uuid": uuid, "name": f"cn\x00{uuid}"})

    assert raw.status_code == 500, raw.text
    assert server_errors(cluster) == errors + 1
    adapter = _Counting()
    client = client_over(cluster.url, adapter)
    with pytest.raises(rc.InvalidInput, match="provider name must not contain a NUL"):
        client.providers.create_provider(f"cn\x00{uuid}", uuid=uuid)
    with pytest.raises(rc.InvalidInput, match="provider name must not contain a NUL"):
        client.providers.reconcile([rc.ProviderSpec(uuid, f"cn\x00{uuid}")])
    assert adapter.sent == []
    assert admin.request("GET", f"/resource_providers/{uuid}").status_code == 404
