"""ProviderClient: resource providers, and their inventories, traits and aggregates, safely.

Reached as ``PlacementClient.providers``. Providers themselves (create,
rename, re-parent, delete) carry no generation on the wire, so those are
plain requests with typed errors. Inventories, traits and aggregates are
guarded by the provider generation: every change is a
:class:`~reportclient._engine.field_write.FieldWrite` (read the field,
compute the new value from it, write it with the generation read) run under
the client's retry policy by the same engine as allocation writes. The change
is always expressed as what to do to the field (set one class, add a trait),
never as a whole value computed earlier, so a retry recomputes it from the
re-read and keeps what other writers did to the rest of the field.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from types import EllipsisType
from typing import Any

import tenacity

from reportclient._engine.contention import ContentionMemory
from reportclient._engine.field_write import Field
from reportclient._engine.guarded_write import run_attempts
from reportclient._engine.provider_ops import CASCADE_ROUNDS, UNSET, ProviderOps
from reportclient._engine.reconcile import AGENT_MAX_STALENESS, TreeMemory, reconcile
from reportclient._engine.reshape_write import ReshapeWrite
from reportclient._gateway.gateway import Gateway
from reportclient._model.microversions import Microversion
from reportclient._model.provider_tree import ProviderSpec, ReconcileReport
from reportclient._model.providers import (
    Inventory,
    InventoryMutator,
    ProviderAggregates,
    ProviderAllocations,
    ProviderInventories,
    ProviderTraits,
    ResourceProvider,
    inventories_from,
    inventories_of,
)
from reportclient._model.reshape import Reshape, ReshapeState
from reportclient._model.validation import (
    validate_custom_name,
    validate_max_staleness,
    validate_name_prefix,
    validate_names,
    validate_provider_name,
    validate_standard_name,
    validate_uuid,
    validate_uuids,
)
from reportclient._wire.transport import validate_request_id
from reportclient.errors import InvalidInput, ProviderNotFound

__all__ = ["CASCADE_ROUNDS", "ProviderClient"]


_UNSET: Any = UNSET


class ProviderClient:
    """Resource providers and their generation-guarded fields.

    Thread-safe. Built by :class:`~reportclient.PlacementClient`, whose
    transport, retry policy and clock it shares.

    :param gateway: the client's gateway; its provider cache trusts a field
        read or written for ``cache_ttl`` seconds (0: never; see
        :mod:`reportclient._gateway.provider_cache`).
    :param reconcile_max_staleness: the ``max_staleness`` of every
        :meth:`reconcile` that does not pass its own: None (strict, every
        write proven) or :attr:`AGENT_MAX_STALENESS` for a compute agent.
    """

    #: ``reconcile(specs, max_staleness=...)`` recommended for a compute agent: 300 s,
    #: nova's ``resource_provider_association_refresh`` (README "The agent setting").
    AGENT_MAX_STALENESS = AGENT_MAX_STALENESS

    def __init__(
        self,
        gateway: Gateway,
        *,
        retry: tenacity.Retrying,
        clock: Callable[[], float] = time.monotonic,
        contention: ContentionMemory | None = None,
        reconcile_max_staleness: float | None = None,
    ) -> None:
        self._max_staleness = validate_max_staleness(reconcile_max_staleness)
        self._gateway = gateway
        self._retry = retry
        # The trees reconcile(max_staleness=...) last proved, on the same clock.
        self._trees = TreeMemory(clock)
        # Shared with the PlacementClient that built this one.
        self._contention = contention if contention is not None else ContentionMemory(clock)
        self._ops = ProviderOps(gateway, retry, self._contention)

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
        body: dict[str, Any] = {"name": validate_provider_name(name)}
        if uuid is not None:
            body["uuid"] = validate_uuid(uuid, "uuid")
        if parent_provider_uuid is not None:
            body["parent_provider_uuid"] = validate_uuid(
                parent_provider_uuid, "parent_provider_uuid"
            )
        return self._gateway.create_provider(body, validate_request_id(global_request_id))

    def get_provider(self, uuid: str, *, global_request_id: str | None = None) -> ResourceProvider:
        """Read one provider.

        :raises ProviderNotFound: it does not exist.
        """
        return self._gateway.get_provider(
            validate_uuid(uuid, "uuid"), validate_request_id(global_request_id)
        )

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
        return self._gateway.list_providers(query, validate_request_id(global_request_id))

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
        The PUT carries no generation and sets what it says, so a lost answer
        is settled by reading: the provider as asked is the result.

        :raises DuplicateName: the new name is taken.
        :raises PlacementUnavailable: Placement did not answer; with
            ``outcome_unknown`` True, the write may still land and the read
            after it showed the provider otherwise (or failed).
        """
        uuid = validate_uuid(uuid, "uuid")
        if name is None and parent_provider_uuid is _UNSET:
            raise InvalidInput("update_provider needs a name or a parent_provider_uuid")
        if name is not None:
            name = validate_provider_name(name)
        if parent_provider_uuid is not _UNSET and parent_provider_uuid is not None:
            parent_provider_uuid = validate_uuid(parent_provider_uuid, "parent_provider_uuid")
        return self._ops.update_provider(
            uuid,
            name=name,
            parent_provider_uuid=parent_provider_uuid,
            global_request_id=validate_request_id(global_request_id),
        )

    def delete_provider(
        self, uuid: str, *, cascade: bool = False, global_request_id: str | None = None
    ) -> None:
        """Delete a provider (and with it its inventories, traits and aggregate links).

        :param cascade: first delete every allocation of every consumer the
            provider's allocations list, as nova does when it deletes a
            compute node: ``DELETE /allocations/{consumer}`` each, which
            removes the consumer's allocations on *every* provider, not only
            this one, and is unguarded by consumer generations (it removes
            whatever is there, including what was written since the
            listing). Then the provider is deleted. A consumer that
            allocates against it between the listing and that delete makes
            the delete fail; the listing is read again, up to
            :data:`CASCADE_ROUNDS` rounds in all. A child provider is never
            deleted for you: that is still ``CannotDeleteParent``.
        :raises ProviderInUse: it has allocations (with ``cascade``: it still
            had some after the last round).
        :raises CannotDeleteParent: it has child providers.
        :raises ProviderNotFound: it does not exist.
        """
        self._ops.delete_provider(
            validate_uuid(uuid, "uuid"),
            cascade=cascade,
            global_request_id=validate_request_id(global_request_id),
        )

    def supports(self, version: Microversion) -> bool:
        """Whether the microversion in use is at least ``version`` (e.g. ``REPARENT_VERSION``).

        The first call may negotiate the version with Placement (one ``GET /``).
        """
        return self._gateway.supports(version)

    # -- what is allocated ----------------------------------------------------------
    def get_provider_allocations(
        self, uuid: str, *, global_request_id: str | None = None
    ) -> ProviderAllocations:
        """``GET /resource_providers/{uuid}/allocations``: each consumer's resources here.

        :raises ProviderNotFound: it does not exist.
        """
        return self._gateway.provider_allocations(
            validate_uuid(uuid, "uuid"), validate_request_id(global_request_id)
        )

    def get_tree_allocations(
        self, root_uuid: str, *, global_request_id: str | None = None
    ) -> dict[str, ProviderAllocations]:
        """The allocations of every provider in a tree, by provider uuid.

        One ``GET /resource_providers?in_tree=`` and then one allocations
        read per provider: the reads are not one snapshot, each is as of
        its own provider generation. A provider deleted between the listing
        and its read is left out (it holds nothing); an unknown uuid gives
        an empty mapping, as Placement's listing does.

        :param root_uuid: the tree's root (any provider of the tree will do).
        """
        request_id = validate_request_id(global_request_id)
        out: dict[str, ProviderAllocations] = {}
        for rp in self.list_providers(in_tree=root_uuid, global_request_id=request_id):
            try:
                out[rp.uuid] = self.get_provider_allocations(rp.uuid, global_request_id=request_id)
            except ProviderNotFound:
                continue
        return out

    # -- resource classes and traits ----------------------------------------------
    def ensure_resource_class(self, name: str, *, global_request_id: str | None = None) -> bool:
        """Make a custom resource class exist; True if this call created it.

        ``PUT /resource_classes/{name}`` (1.7+) creates or confirms in one
        request, so two agents ensuring the same class both succeed.
        """
        return self._gateway.ensure(
            "resource_classes", validate_custom_name(name), validate_request_id(global_request_id)
        )

    def ensure_trait(self, name: str, *, global_request_id: str | None = None) -> bool:
        """Make a custom trait exist; True if this call created it (idempotent, race-safe)."""
        return self._gateway.ensure(
            "traits", validate_custom_name(name, "trait"), validate_request_id(global_request_id)
        )

    def list_traits(
        self,
        *,
        name_prefix: str | None = None,
        names: Iterable[str] | None = None,
        associated: bool | None = None,
        global_request_id: str | None = None,
    ) -> tuple[str, ...]:
        """``GET /traits``: the names of the traits Placement knows, sorted.

        :param name_prefix: only those starting with it (``"CUSTOM_"``).
        :param names: only those among these (the ones that exist).
        :param associated: True: only traits some provider has; False: only
            traits none has.
        :raises InvalidInput: both ``name_prefix`` and ``names`` (Placement
            takes one ``name`` filter), or a malformed one.
        """
        query: dict[str, str] = {}
        if name_prefix is not None and names is not None:
            raise InvalidInput("list_traits takes name_prefix or names, not both")
        if name_prefix is not None:
            query["name"] = "startswith:" + validate_name_prefix(name_prefix)
        if names is not None:
            query["name"] = "in:" + ",".join(sorted(validate_names(names)))
        if associated is not None:
            if not isinstance(associated, bool):
                raise InvalidInput(f"associated must be True, False or None, got {associated!r}")
            query["associated"] = "true" if associated else "false"
        return tuple(
            sorted(self._gateway.list_traits(query, validate_request_id(global_request_id)))
        )

    def get_trait(self, name: str, *, global_request_id: str | None = None) -> str:
        """``GET /traits/{name}``: ``name``, once Placement confirms the trait exists.

        :raises PlacementError: status 404 when it does not.
        """
        name = validate_standard_name(name, "trait")
        self._gateway.get_trait(name, validate_request_id(global_request_id))
        return name

    def delete_trait(self, name: str, *, global_request_id: str | None = None) -> None:
        """``DELETE /traits/{name}``: delete a custom trait no provider has.

        :raises InvalidInput: a standard trait (Placement refuses to delete those).
        :raises PlacementError: status 404 when it does not exist; status 409
            while a provider has it (Placement gives that no code of its own).
        """
        name = validate_custom_name(name, "trait")
        self._gateway.delete_trait(name, validate_request_id(global_request_id))

    def list_resource_classes(self, *, global_request_id: str | None = None) -> tuple[str, ...]:
        """``GET /resource_classes``: the names of every class, standard and custom, sorted."""
        return tuple(
            sorted(self._gateway.list_resource_classes(validate_request_id(global_request_id)))
        )

    def get_resource_class(self, name: str, *, global_request_id: str | None = None) -> str:
        """``GET /resource_classes/{name}``: its name, once Placement confirms it exists.

        :raises PlacementError: status 404 when it does not.
        """
        name = validate_standard_name(name)
        return self._gateway.get_resource_class(name, validate_request_id(global_request_id))

    def delete_resource_class(self, name: str, *, global_request_id: str | None = None) -> None:
        """``DELETE /resource_classes/{name}``: delete a custom class no inventory uses.

        :raises InvalidInput: a standard class (Placement refuses to delete those).
        :raises PlacementError: status 404 when it does not exist; status 409
            while some provider has inventory of it (no code of its own).
        """
        name = validate_custom_name(name)
        self._gateway.delete_resource_class(name, validate_request_id(global_request_id))

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
        every conflict. See :mod:`reportclient._engine.reshape_write`.

        :raises InventoryInUse: the target leaves allocations without inventory.
        :raises CapacityExceeded: the target's allocations do not fit.
        :raises OutcomeUnknown: the policy gave up while a lost reshape may still land.
        """
        write = ReshapeWrite(
            self._gateway,
            providers,
            consumers,
            compute,
            validate_request_id(global_request_id),
            memory=self._contention,
        )
        return run_attempts(write, self._retry)

    def reconcile(
        self,
        specs: Iterable[ProviderSpec],
        *,
        merge: bool = False,
        delete_roots: Iterable[str] = (),
        global_request_id: str | None = None,
        max_staleness: float | EllipsisType | None = ...,
    ) -> ReconcileReport:
        """Make provider trees match ``specs``, deleting what the caller dropped.

        See :func:`reportclient._engine.reconcile.reconcile` for every
        parameter and error, and its module for how requests are saved.

        :param merge: add and update only: remove no class, trait or
            aggregate, delete no provider of a described tree.
        :param delete_roots: uuids of roots the caller owns and no longer
            describes, each deleted with its tree.
        :param max_staleness: the agent setting: seconds this client trusts
            the tree it last proved and what it last read or wrote (an
            unchanged description then costs nothing). None proves every
            write. :attr:`AGENT_MAX_STALENESS` (300, nova's association
            refresh) is recommended for a compute agent. Not given: the
            client's ``reconcile_max_staleness`` (None unless configured).
        :raises ProviderInUse: a provider to delete still has allocations;
            raised after everything else is done, naming it.
        """
        return reconcile(
            self._ops,
            specs,
            merge=merge,
            delete_roots=delete_roots,
            global_request_id=global_request_id,
            max_staleness=self._max_staleness if max_staleness is ... else max_staleness,
            memory=self._trees,
        )

    # -- inventories ---------------------------------------------------------
    def get_inventories(
        self, uuid: str, *, global_request_id: str | None = None
    ) -> ProviderInventories:
        """Read a provider's inventories and generation."""
        return self._read(ProviderInventories, uuid, global_request_id)

    def set_inventory(
        self,
        uuid: str,
        resource_class: str,
        inventory: Inventory | int | Mapping[str, Any],
        *,
        global_request_id: str | None = None,
    ) -> ProviderInventories:
        """Make one class's inventory ``inventory``; every other class stays as re-read.

        :raises InventoryInUse: the new capacity is below what is allocated; not retried.
        """
        rc = validate_standard_name(resource_class)
        inv = Inventory.of(inventory)

        def put(current: dict[str, Inventory]) -> dict[str, Inventory]:
            current[rc] = inv
            return current

        return self._change(ProviderInventories, uuid, put, True, global_request_id)

    def remove_inventory(
        self, uuid: str, resource_class: str, *, global_request_id: str | None = None
    ) -> ProviderInventories:
        """Remove one class's inventory, guarded by the generation (unlike ``DELETE``).

        :raises InventoryInUse: it has allocations; not retried.
        """
        rc = validate_standard_name(resource_class)

        def drop(current: dict[str, Inventory]) -> dict[str, Inventory]:
            current.pop(rc, None)
            return current

        return self._change(ProviderInventories, uuid, drop, True, global_request_id)

    def set_inventories(
        self,
        uuid: str,
        inventories: Mapping[str, Inventory | int | Mapping[str, Any]],
        *,
        global_request_id: str | None = None,
    ) -> ProviderInventories:
        """Replace all of a provider's inventories (classes not named are removed)."""
        wanted = inventories_of(inventories, "set_inventories' inventories")
        return self._change(
            ProviderInventories, uuid, lambda _current: dict(wanted), True, global_request_id
        )

    def update_inventories(
        self,
        uuid: str,
        mutate: InventoryMutator,
        *,
        idempotent: bool = False,
        global_request_id: str | None = None,
    ) -> ProviderInventories:
        """Read-modify-write a provider's inventories with ``mutate``.

        ``mutate`` gets a copy of the inventories the write will replace and
        runs again on every attempt. Say ``idempotent=True`` only if applying
        it to its own result changes nothing: that lets a lost answer be
        settled by content; otherwise it raises :class:`OutcomeUnknown`
        whenever the generation cannot prove the write did not land.
        """
        if not callable(mutate):
            raise InvalidInput("mutate must be a function of the current inventories")

        def checked(current: dict[str, Inventory]) -> dict[str, Inventory]:
            return inventories_from(mutate(current), "update_inventories' mutate")

        return self._change(ProviderInventories, uuid, checked, idempotent, global_request_id)

    # -- traits ---------------------------------------------------------------
    def get_traits(self, uuid: str, *, global_request_id: str | None = None) -> ProviderTraits:
        """Read a provider's traits and generation."""
        return self._read(ProviderTraits, uuid, global_request_id)

    def add_traits(
        self, uuid: str, traits: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderTraits:
        """Add traits, keeping every trait the provider has (custom ones must exist)."""
        names = validate_names(traits)
        return self._change(ProviderTraits, uuid, lambda cur: cur | names, True, global_request_id)

    def remove_traits(
        self, uuid: str, traits: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderTraits:
        """Remove traits, keeping every other trait the provider has."""
        names = validate_names(traits)
        return self._change(ProviderTraits, uuid, lambda cur: cur - names, True, global_request_id)

    def set_traits(
        self, uuid: str, traits: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderTraits:
        """Make the provider's traits exactly ``traits``."""
        names = validate_names(traits)
        return self._change(ProviderTraits, uuid, lambda _c: set(names), True, global_request_id)

    # -- aggregates -------------------------------------------------------------
    def get_aggregates(
        self, uuid: str, *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Read a provider's aggregates and generation."""
        return self._read(ProviderAggregates, uuid, global_request_id)

    def add_aggregates(
        self, uuid: str, aggregates: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Add the provider to aggregates, keeping its other memberships."""
        uuids = validate_uuids(aggregates)
        return self._change(
            ProviderAggregates, uuid, lambda cur: cur | uuids, True, global_request_id
        )

    def remove_aggregates(
        self, uuid: str, aggregates: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Remove the provider from aggregates, keeping its other memberships."""
        uuids = validate_uuids(aggregates)
        return self._change(
            ProviderAggregates, uuid, lambda cur: cur - uuids, True, global_request_id
        )

    def set_aggregates(
        self, uuid: str, aggregates: Iterable[str], *, global_request_id: str | None = None
    ) -> ProviderAggregates:
        """Make the provider's aggregates exactly ``aggregates``."""
        uuids = validate_uuids(aggregates)
        return self._change(
            ProviderAggregates, uuid, lambda _c: set(uuids), True, global_request_id
        )

    # -- one field change under the policy ------------------------------------------
    def _change(
        self,
        kind: type[Field],
        uuid: str,
        compute: Callable[[Any], Any],
        idempotent: bool,
        request_id: str | None,
    ) -> Field:
        return self._ops.change(
            kind,
            validate_uuid(uuid, "uuid"),
            compute,
            idempotent=idempotent,
            global_request_id=validate_request_id(request_id),
        )[0]

    def _read(self, kind: type[Field], uuid: str, request_id: str | None) -> Field:
        return self._gateway.read_field(
            kind, validate_uuid(uuid, "uuid"), validate_request_id(request_id)
        )
