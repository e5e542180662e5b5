"""ProviderClient: resource providers, and their inventories, traits and aggregates, safely.

Reached as ``PlacementClient.providers``. Providers themselves (create,
rename, re-parent, delete) carry no generation on the wire, so those are
plain requests with typed errors. Inventories, traits and aggregates are
guarded by the provider generation: every change is a
:class:`~reportclient.provider_cycle.ProviderCycle` (read the field, compute
the new value from it, write it with the generation read) run under the
client's retry policy by the same engine as allocation writes; those
methods live in :mod:`reportclient.provider_fields`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from reportclient._engine.guarded_write import run_attempts
from reportclient._engine.reshape_write import ReshapeWrite
from reportclient.errors import InvalidInput
from reportclient.models import validate_uuid
from reportclient.provider_fields import InventoryMutator, ProviderFields
from reportclient.provider_models import (
    ResourceProvider,
    validate_custom_name,
)
from reportclient.reshaper import Reshape, ReshapeState
from reportclient.transport import Microversion, validate_request_id

if TYPE_CHECKING:
    from reportclient.reconcile import ProviderSpec, ReconcileReport

__all__ = ["REPARENT_VERSION", "InventoryMutator", "ProviderClient"]

#: A provider's parent may be changed or removed (earlier: set once, at creation).
REPARENT_VERSION: Microversion = (1, 37)

_UNSET: Any = object()


class ProviderClient(ProviderFields):
    """Resource providers and their generation-guarded fields.

    Thread-safe. Built by :class:`~reportclient.PlacementClient`, whose
    transport, retry policy and clock it shares.

    :param cache_ttl: seconds a provider field read or written is trusted
        for the next write's content and generation (0: never; see
        :mod:`reportclient.provider_cache`).
    """

    # -- providers -----------------------------------------------------------
    def create_provider(
        self,
        name: str,
        *,
        uuid: str | None = None,
        parent_provider_uuid: str | None = None,
        global_request_id: str | None = None,
    ) -> ResourceProvider:
        """Create a provider (generation 0), under a parent if given.

        :raises DuplicateName: the name (or uuid) is taken.
        :raises PlacementError: 400 when the parent does not exist.
        """
        body: dict[str, Any] = {"name": _name(name)}
        if uuid is not None:
            body["uuid"] = validate_uuid(uuid, "uuid")
        if parent_provider_uuid is not None:
            body["parent_provider_uuid"] = validate_uuid(
                parent_provider_uuid, "parent_provider_uuid"
            )
        reply = self._request("POST", "/resource_providers", body, global_request_id)
        return ResourceProvider.from_json(reply)

    def get_provider(self, uuid: str, *, global_request_id: str | None = None) -> ResourceProvider:
        """Read one provider.

        :raises ProviderNotFound: it does not exist.
        """
        path = f"/resource_providers/{validate_uuid(uuid, 'uuid')}"
        return ResourceProvider.from_json(self._request("GET", path, None, global_request_id))

    def list_providers(
        self,
        *,
        name: str | None = None,
        uuid: str | None = None,
        member_of: Iterable[str] | None = None,
        in_tree: str | None = None,
        required: Iterable[str] | None = None,
        resources: Mapping[str, int] | None = None,
        global_request_id: str | None = None,
    ) -> list[ResourceProvider]:
        """List providers matching every filter given.

        :param member_of: aggregate uuids; a provider in any of them matches.
        :param in_tree: any provider's uuid; lists its whole tree.
        :param required: traits the provider must have; ``"!NAME"`` forbids one.
        :param resources: capacity the provider must have free, per class.
        """
        query: dict[str, str] = {}
        if name is not None:
            query["name"] = name
        if uuid is not None:
            query["uuid"] = validate_uuid(uuid, "uuid")
        if member_of is not None:
            query["member_of"] = "in:" + ",".join(validate_uuid(a, "aggregate") for a in member_of)
        if in_tree is not None:
            query["in_tree"] = validate_uuid(in_tree, "in_tree")
        if required is not None:
            query["required"] = ",".join(required)
        if resources is not None:
            query["resources"] = ",".join(f"{rc}:{n}" for rc, n in resources.items())
        path = "/resource_providers" + (f"?{urlencode(query)}" if query else "")
        reply = self._request("GET", path, None, global_request_id)
        return [ResourceProvider.from_json(rp) for rp in reply["resource_providers"]]

    def update_provider(
        self,
        uuid: str,
        *,
        name: str | None = None,
        parent_provider_uuid: str | None = _UNSET,
        global_request_id: str | None = None,
    ) -> ResourceProvider:
        """Rename and/or re-parent a provider (``parent_provider_uuid=None`` un-parents, 1.37+).

        Placement's PUT needs the name, so one that is not changing is read first.

        :raises DuplicateName: the new name is taken.
        """
        uuid = validate_uuid(uuid, "uuid")
        if name is None and parent_provider_uuid is _UNSET:
            raise InvalidInput("update_provider needs a name or a parent_provider_uuid")
        body: dict[str, Any] = {}
        if name is None:
            name = self.get_provider(uuid, global_request_id=global_request_id).name
        body["name"] = _name(name)
        if parent_provider_uuid is not _UNSET:
            if parent_provider_uuid is not None:
                parent_provider_uuid = validate_uuid(parent_provider_uuid, "parent_provider_uuid")
            body["parent_provider_uuid"] = parent_provider_uuid
        reply = self._request("PUT", f"/resource_providers/{uuid}", body, global_request_id)
        return ResourceProvider.from_json(reply)

    def delete_provider(self, uuid: str, *, global_request_id: str | None = None) -> None:
        """Delete a provider (and with it its inventories, traits and aggregate links).

        :raises ProviderInUse: it has allocations.
        :raises CannotDeleteParent: it has child providers.
        :raises ProviderNotFound: it does not exist.
        """
        uuid = validate_uuid(uuid, "uuid")
        self._request("DELETE", f"/resource_providers/{uuid}", None, global_request_id)
        self.cache.discard(uuid)

    # -- resource classes and traits ----------------------------------------------
    def ensure_resource_class(self, name: str, *, global_request_id: str | None = None) -> bool:
        """Make a custom resource class exist; True if this call created it.

        ``PUT /resource_classes/{name}`` (1.7+) creates or confirms in one
        request, so two agents ensuring the same class both succeed.
        """
        path = f"/resource_classes/{validate_custom_name(name)}"
        reply = self._transport.request(
            "PUT", path, global_request_id=validate_request_id(global_request_id)
        )
        return reply.status == 201

    def ensure_trait(self, name: str, *, global_request_id: str | None = None) -> bool:
        """Make a custom trait exist; True if this call created it (idempotent, race-safe)."""
        path = f"/traits/{validate_custom_name(name, 'trait')}"
        reply = self._transport.request(
            "PUT", path, global_request_id=validate_request_id(global_request_id)
        )
        return reply.status == 201

    # -- reshape and reconcile ----------------------------------------------------
    def reshape(
        self,
        providers: Iterable[str],
        consumers: Iterable[str],
        compute: Callable[[ReshapeState], Reshape],
        *,
        global_request_id: str | None = None,
    ) -> Reshape:
        """Move inventories and allocations atomically with ``POST /reshaper`` (1.30+).

        ``compute`` gets the named providers' inventories and consumers'
        allocations as just read and returns the target; it runs again after
        every conflict. See :mod:`reportclient.reshaper`.

        :raises InventoryInUse: the target leaves allocations without inventory.
        :raises CapacityExceeded: the target's allocations do not fit.
        :raises OutcomeUnknown: the policy gave up while a lost reshape may still land.
        """
        write = ReshapeWrite(
            self._transport,
            self.cache,
            self._consumer_cache,
            providers,
            consumers,
            compute,
            validate_request_id(global_request_id),
        )
        return run_attempts(write, self._retry)

    def reconcile(
        self,
        specs: Iterable[ProviderSpec],
        *,
        merge: bool = False,
        global_request_id: str | None = None,
    ) -> ReconcileReport:
        """Make a provider tree match ``specs``; see :func:`reportclient.reconcile.reconcile`."""
        from reportclient.reconcile import reconcile

        return reconcile(self, specs, merge=merge, global_request_id=global_request_id)

    def _request(self, method: str, path: str, body: Any, request_id: str | None) -> Any:
        reply = self._transport.request(
            method, path, json=body, global_request_id=validate_request_id(request_id)
        )
        return reply.body


def _name(name: str) -> str:
    if not isinstance(name, str) or not 1 <= len(name) <= 200:
        raise InvalidInput(f"a provider name is a string of 1-200 characters, got {name!r}")
    return name
