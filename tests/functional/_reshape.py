"""Reshape set-up shared by the functional tests of reshapes against the real Placement."""

from __future__ import annotations

from reportclient import PlacementClient
from tests.functional._helpers import claim, new_id

#: Placement's reshaper policy is role:service (not admin), as nova's service token has.
SERVICE = {"X-Roles": "admin,service"}


def vgpu_consumer_before_reshape(client: PlacementClient) -> tuple[str, str, str]:
    """Through ``client``: a new root with VCPU 8 and VGPU 4, a new child without inventory,
    and a new consumer claiming VCPU 2 and VGPU 1 on the root, as before a reshape moves the
    VGPU to the child. Returns ``(root, child, consumer)``."""
    providers = client.providers
    root = providers.create_provider(f"cn-{new_id()}").uuid
    child = providers.create_provider(f"pgpu-{new_id()}", parent_provider_uuid=root).uuid
    providers.set_inventories(root, {"VCPU": 8, "VGPU": 4})
    consumer = new_id()
    claim(client, consumer, {root: {"VCPU": 2, "VGPU": 1}})
    return root, child, consumer
