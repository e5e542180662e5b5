"""Provider operations on the engine: what reconcile and ``ProviderClient`` share.

Providers themselves (create, rename, re-parent, delete) carry no
generation on the wire, so those are single requests through the gateway,
with the one settle a lost rename needs (read: the provider as asked is
the result) and the cascade's rounds. A field change is a
:class:`~reportclient._engine.field_write.FieldWrite` under the client's
policy. Reconcile runs on this object, never on a client: the engine does
not call back up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tenacity

from reportclient._engine.attempts import run_attempts
from reportclient._engine.contention import ContentionMemory
from reportclient._engine.field_write import Field, FieldWrite
from reportclient._gateway.gateway import Gateway, Snapshot, TreeListing
from reportclient._model.microversions import Microversion
from reportclient._model.providers import ProviderAllocations, ResourceProvider
from reportclient.errors import CannotDeleteParent, PlacementUnavailable, ProviderInUse

__all__ = ["CASCADE_ROUNDS", "UNSET", "FieldMemory", "ProviderOps"]

#: Rounds of "list the provider's consumers, delete their allocations, delete
#: the provider" a cascading delete makes. A consumer allocating between the
#: listing and the provider's delete makes the delete fail; one more round
#: clears it. A provider still in use after this many rounds is being
#: allocated against as fast as it is cleared: that is the caller's to stop.
CASCADE_ROUNDS = 3

#: "Not given" for ``parent_provider_uuid`` (None un-parents).
UNSET: Any = object()


class FieldMemory:
    """What reconcile may ask of the provider cache, through the gateway (read, and carry)."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def entry(self, uuid: str, kind: type[Snapshot]) -> tuple[Snapshot, float] | None:
        """The field's last snapshot and when it was taken, however old; None in doubt."""
        return self._gateway.field_entry(uuid, kind)

    def trusted_entry(
        self, uuid: str, kind: type[Snapshot], generation: int | None = None
    ) -> tuple[Snapshot, float] | None:
        """The snapshot if young (and, given ``generation``, proven at it)."""
        return self._gateway.trusted_field(uuid, kind, generation)

    def put(
        self, snapshot: Snapshot, taken_at: float | None = None, proven: float | None = None
    ) -> None:
        """Carry a snapshot on: our write moved its generation, or a listing re-proved it."""
        if taken_at is None:
            return
        if proven is None:  # carried, not re-proven: as old as its proof on the server too
            proven = self._gateway.field_proven(snapshot.uuid, type(snapshot))
        self._gateway.carry_field(snapshot, taken_at, proven)

    def proven(self, uuid: str, kind: type[Snapshot]) -> float | None:
        """The server's time of the answer that proved the field's content, if known."""
        return self._gateway.field_proven(uuid, kind)


class ProviderOps:
    """Providers and their fields on the engine, for reconcile and the provider client.

    :param gateway: the client's gateway (every route, both caches).
    :param retry: the client's policy, for field changes.
    """

    def __init__(
        self, gateway: Gateway, retry: tenacity.Retrying, contention: ContentionMemory
    ) -> None:
        self._gateway = gateway
        self._retry = retry
        self._contention = contention
        self.cache = FieldMemory(gateway)

    @property
    def gateway(self) -> Gateway:
        return self._gateway

    def supports(self, version: Microversion) -> bool:
        return self._gateway.supports(version)

    def list_providers(
        self, *, name: str, global_request_id: str | None = None
    ) -> list[ResourceProvider]:
        """The providers named ``name`` (reconcile names the one holding a name it wanted)."""
        return self._gateway.list_providers({"name": name}, global_request_id)

    def list_tree(self, anchor: str, *, global_request_id: str | None = None) -> TreeListing:
        """A tree's providers, with the server's times (see :class:`TreeListing`)."""
        return self._gateway.list_tree(anchor, global_request_id)

    def get_provider(self, uuid: str, *, global_request_id: str | None = None) -> ResourceProvider:
        return self._gateway.get_provider(uuid, global_request_id)

    def create_provider(
        self,
        name: str,
        *,
        uuid: str | None = None,
        parent_provider_uuid: str | None = None,
        global_request_id: str | None = None,
    ) -> ResourceProvider:
        body: dict[str, Any] = {"name": name}
        if uuid is not None:
            body["uuid"] = uuid
        if parent_provider_uuid is not None:
            body["parent_provider_uuid"] = parent_provider_uuid
        return self._gateway.create_provider(body, global_request_id)

    def update_provider(
        self,
        uuid: str,
        *,
        name: str | None = None,
        parent_provider_uuid: str | None = UNSET,
        global_request_id: str | None = None,
    ) -> ResourceProvider:
        """Rename and/or re-parent; a lost answer is settled by reading (unguarded, idempotent)."""
        if name is None:
            name = self._gateway.get_provider(uuid, global_request_id).name
        body: dict[str, Any] = {"name": name}
        if parent_provider_uuid is not UNSET:
            body["parent_provider_uuid"] = parent_provider_uuid
        try:
            return self._gateway.update_provider(uuid, body, global_request_id)
        except PlacementUnavailable as exc:
            if not exc.outcome_unknown:
                raise
            now = self._gateway.get_provider(uuid, global_request_id)
            if now.name == body["name"] and now.parent_provider_uuid == body.get(
                "parent_provider_uuid", now.parent_provider_uuid
            ):
                return now
            raise

    def delete_provider(
        self, uuid: str, *, cascade: bool = False, global_request_id: str | None = None
    ) -> None:
        """Delete a provider, first (``cascade``) every allocation of its consumers."""
        rounds = CASCADE_ROUNDS if cascade else 1
        for round_ in range(1, rounds + 1):
            if cascade:
                held = self._gateway.provider_allocations(uuid, global_request_id)
                for consumer in held.consumers:
                    self._gateway.delete_consumer(consumer, global_request_id)
            try:
                self._gateway.delete_provider(uuid, global_request_id)
            except CannotDeleteParent:
                raise
            except ProviderInUse:
                if round_ == rounds:
                    raise
                continue  # allocated against since the listing: list again
            break

    def provider_allocations(
        self, uuid: str, *, global_request_id: str | None = None
    ) -> ProviderAllocations:
        return self._gateway.provider_allocations(uuid, global_request_id)

    def read(self, kind: type[Field], uuid: str, request_id: str | None = None) -> Field:
        """Read one field of a provider (the gateway caches it)."""
        return self._gateway.read_field(kind, uuid, request_id)

    def change(
        self,
        kind: type[Field],
        uuid: str,
        compute: Callable[[Any], Any],
        *,
        idempotent: bool,
        start: Field | None = None,
        start_read: bool = True,
        global_request_id: str | None = None,
    ) -> tuple[Field, int, bool]:
        """Run one field change under the policy.

        :returns: the field as Placement holds it afterwards, the number of
            requests sent, and whether a write landed.
        """
        write = FieldWrite(
            self._gateway,
            kind,
            uuid,
            compute,
            idempotent=idempotent,
            request_id=global_request_id,
            start=start,
            start_read=start_read,
            memory=self._contention,
        )
        return run_attempts(write, self._retry), write.requests, write.wrote

    def ensure_resource_class(self, name: str, *, global_request_id: str | None = None) -> bool:
        return self._gateway.ensure("resource_classes", name, global_request_id)

    def ensure_trait(self, name: str, *, global_request_id: str | None = None) -> bool:
        return self._gateway.ensure("traits", name, global_request_id)
