"""On the real Placement: claims after every read do not starve a provider field write.

A scheduler's claim lands on the provider right after each of the agent's
reads, more times than the policy has attempts. Placement moves the
provider generation on every claim, so each write conflicts; the re-read
shows the field untouched, and the write goes again at once, uncounted,
until one lands between claims (unit tests: tests/unit/engine/test_untouched_retries.py).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

import reportclient
from reportclient.testing import EmbeddedPlacement, PlacementAdmin

# > the 4 attempts the policy below allows, and within what a fresh client's
# retry budget lends (its floor: 1.2 retries a second over 10 s, issue 37);
# tests/unit/engine/test_retry_budget.py shows the budget ending a longer run.
CLAIMS = 10


@pytest.fixture
def node(placement_admin: PlacementAdmin) -> str:
    return placement_admin.create_provider(inventory={"VCPU": {"total": 64}})


class ClaimAfterReads(ks_adapter.Adapter):
    """An Adapter that lets a claim land on ``rp`` right after each of the first N GETs."""

    def __init__(self, *args: Any, admin: PlacementAdmin, rp: str, n: int, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.admin, self.rp, self.left = admin, rp, n
        self.statuses: list[tuple[str, int]] = []

    def request(self, url: str, method: str, **kwargs: Any) -> Any:
        response = super().request(url, method, **kwargs)
        self.statuses.append((method, response.status_code))
        if method == "GET" and self.rp in url and self.left:
            self.left -= 1
            claim = self.admin.put_allocations(
                str(uuid.uuid4()),
                {
                    "allocations": {self.rp: {"resources": {"VCPU": 1}}},
                    "consumer_generation": None,
                    "project_id": "p",
                    "user_id": "u",
                    "consumer_type": "INSTANCE",
                },
            )
            assert claim.status_code == 204, claim.text
        return response


def client_for(
    placement: EmbeddedPlacement, wire: ks_adapter.Adapter
) -> reportclient.PlacementClient:
    sleeps: list[float] = []
    policy = reportclient.default_retry(attempts=4, sleep=sleeps.append)
    client = reportclient.PlacementClient(wire, retry=policy, microversion="1.39")
    client.sleeps = sleeps  # type: ignore[attr-defined]
    return client


def wire_for(placement: EmbeddedPlacement, admin: PlacementAdmin, rp: str) -> ClaimAfterReads:
    session = ks_session.Session(auth=token_endpoint.Token(placement.url, placement.token))
    return ClaimAfterReads(
        session,
        service_type="placement",
        endpoint_override=placement.url,
        admin=admin,
        rp=rp,
        n=CLAIMS,
    )


def test_inventory_write_outlasts_more_claims_than_attempts(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, node: str
) -> None:
    wire = wire_for(real_placement, placement_admin, node)
    client = client_for(real_placement, wire)

    result = client.providers.set_inventory(node, "MEMORY_MB", 1024)

    assert placement_admin.inventory(node)["MEMORY_MB"]["total"] == 1024
    assert result.generation == placement_admin.provider(node)["generation"]
    assert placement_admin.usages(node)["VCPU"] == CLAIMS
    puts = [status for method, status in wire.statuses if method == "PUT"]
    assert puts == [409] * CLAIMS + [200]
    assert client.sleeps == [0.0] * CLAIMS  # type: ignore[attr-defined]


def test_trait_write_outlasts_more_claims_than_attempts(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin, node: str
) -> None:
    wire = wire_for(real_placement, placement_admin, node)
    client = client_for(real_placement, wire)

    client.providers.add_traits(node, ["HW_CPU_X86_AVX2"])

    traits = placement_admin.request("GET", f"/resource_providers/{node}/traits")
    assert traits.json()["traits"] == ["HW_CPU_X86_AVX2"]
    assert placement_admin.usages(node)["VCPU"] == CLAIMS
    puts = [status for method, status in wire.statuses if method == "PUT"]
    assert puts == [409] * CLAIMS + [200]
