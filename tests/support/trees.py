"""Provider trees as an agent describes them to ``providers.reconcile``."""

from __future__ import annotations

from reportclient import ProviderSpec

__all__ = ["node"]


def node(root: str, *children: str) -> list[ProviderSpec]:
    """A compute node and its device children, as one agent describes them."""
    return [ProviderSpec(root, f"cn-{root}", inventories={"VCPU": 8})] + [
        ProviderSpec(child, f"dev-{child}", parent=root, inventories={"CUSTOM_GPU": 1})
        for child in children
    ]
