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
from reportclient._gateway.class_record import ClassListing
from reportclient._gateway.gateway import Gateway, TreeListing
from reportclient._model.assumptions import ProofAssumption
from reportclient._model.microversions import Microversion
from reportclient._model.providers import ProviderAllocations, ResourceProvider
from reportclient.errors import CannotDeleteParent, PlacementUnavailable, ProviderInUse

__all__ = ["CASCADE_ROUNDS", "UNSET", "ProviderOps"]

#: Rounds of "list the provider's consumers, delete their allocations, delete
#: the provider" a cascading delete makes. A consumer allocating between the
#: listing and the provider's delete makes the delete fail; one more round
#: clears it. A provider still in use after this many rounds is being
#: allocated against as fast as it is cleared: that is the caller's to stop.
CASCADE_ROUNDS = 3

#: "Not given" for ``parent_provider_uuid`` (None un-parents).
UNSET: Any = object()


class ProviderOps:
    """Providers and their fields on the engine, for reconcile and the provider client.

    :param gateway: the client's gateway (every route, both caches).
    :param retry: the client's policy, for field changes.
    :param assumptions: what the client's settings promise about other
        writers (:mod:`reportclient._model.assumptions`), for the proofs.
    """

    def __init__(
        self,
        gateway: Gateway,
        retry: tenacity.Retrying,
        contention: ContentionMemory,
        assumptions: frozenset[ProofAssumption] = frozenset(),
    ) -> None:
        self._gateway = gateway
        self._retry = retry
        self._contention = contention
        self.assumptions = assumptions
        #: The provider cache as reconcile may read it and carry it on.
        self.cache = gateway.fields

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

    def list_classes(self, request_id: str | None = None) -> ClassListing:
        """The resource classes, dated: what proves a cached inventory's custom class names."""
        return self._gateway.list_classes_dated(request_id)

    def get_provider(self, uuid: str, *, global_request_id: str | None = None) -> ResourceProvider:
        return self._gateway.get_provider(uuid, global_request_id)

    def read_provider(self, uuid: str, request_id: str | None = None) -> TreeListing:
        """One provider, with its own ``Last-Modified`` (see :class:`TreeListing`)."""
        return self._gateway.read_provider(uuid, request_id)

    def create_provider(
        self, name: str, uuid: str | None, parent: str | None, request_id: str | None
    ) -> ResourceProvider:
        """``POST`` a provider: under ``parent`` if given, at ``uuid`` if given."""
        body: dict[str, Any] = {"name": name}
        if uuid is not None:
            body["uuid"] = uuid
        if parent is not None:
            body["parent_provider_uuid"] = parent
        return self._gateway.create_provider(body, request_id)

    def update_provider(
        self, uuid: str, name: str | None, parent: str | None, request_id: str | None
    ) -> ResourceProvider:
        """Rename and/or re-parent; a lost answer is settled by reading (unguarded, idempotent).

        :param name: None: keep the provider's own (read first: the PUT needs it).
        :param parent: :data:`UNSET`: keep the provider's own; None: un-parent.
        """
        if name is None:
            name = self._gateway.get_provider(uuid, request_id).name
        body: dict[str, Any] = {"name": name}
        if parent is not UNSET:
            body["parent_provider_uuid"] = parent
        try:
            return self._gateway.update_provider(uuid, body, request_id)
        except PlacementUnavailable as exc:
            if not exc.outcome_unknown:
                raise
            now = self._gateway.get_provider(uuid, request_id)
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
        base: Any = None,
        global_request_id: str | None = None,
    ) -> tuple[Field, int, bool]:
        """Run one field change under the policy (``base``: a three-way write, see FieldWrite).

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
            base=base,
        )
        return run_attempts(write, self._retry), write.requests, write.wrote

    def ensure_resource_class(self, name: str, *, global_request_id: str | None = None) -> bool:
        return self._gateway.ensure("resource_classes", name, global_request_id)

    def ensure_trait(self, name: str, *, global_request_id: str | None = None) -> bool:
        return self._gateway.ensure("traits", name, global_request_id)
