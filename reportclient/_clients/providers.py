"""ProviderClient: resource providers, their fields and the catalogue, safely.

Reached as ``PlacementClient.providers``. Providers themselves (create,
rename, re-parent, delete) carry no generation on the wire, so those are
plain requests with typed errors, here; reshape and reconcile run on the
engine. Inventories, traits and aggregates (:mod:`.fields`) and the trait
and resource-class catalogue (:mod:`.catalog`) are the clients this one is
made of.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import EllipsisType
from typing import Any

from reportclient._clients.catalog import CatalogClient
from reportclient._clients.core import Core
from reportclient._clients.fields import FieldsClient
from reportclient._engine.attempts import run_attempts
from reportclient._engine.provider_ops import CASCADE_ROUNDS, UNSET, ProviderOps
from reportclient._engine.reconcile import AGENT_MAX_STALENESS, TreeMemory, reconcile
from reportclient._engine.reshape_write import ReshapeWrite
from reportclient._engine.tree_views import TreeViews
from reportclient._model.microversions import Microversion
from reportclient._model.provider_tree import ProviderSpec, ReconcileReport
from reportclient._model.providers import (
    ProviderAllocations,
    ResourceProvider,
)
from reportclient._model.reshape import Reshape, ReshapeState
from reportclient._model.validation import (
    validate_provider_name,
    validate_resources,
    validate_trait_filter,
    validate_uuid,
    validate_uuids,
)
from reportclient._wire.transport import validate_request_id
from reportclient.errors import InvalidInput, ProviderNotFound

__all__ = ["CASCADE_ROUNDS", "ProviderClient"]


_UNSET: Any = UNSET


class ProviderClient(FieldsClient, CatalogClient):
    """Resource providers and their generation-guarded fields.

    Thread-safe. Built by :class:`~reportclient.PlacementClient`, whose
    core (gateway, retry policy, contention memory, clock) it shares: a
    field read or written is trusted for the client's ``cache_ttl`` (0:
    never; see :mod:`reportclient._gateway.provider_cache`), and every
    :meth:`reconcile` that passes no ``max_staleness`` takes the client's
    ``reconcile_max_staleness``.
    """

    #: ``reconcile(specs, max_staleness=...)`` recommended for a compute agent: 300 s,
    #: nova's ``resource_provider_association_refresh`` (doc/source/providers.rst).
    AGENT_MAX_STALENESS = AGENT_MAX_STALENESS

    def __init__(self, core: Core) -> None:
        self._core = core
        self._max_staleness = core.max_staleness
        # The trees reconcile(max_staleness=...) last proved, on the same clock.
        self._trees = TreeMemory(core.clock)
        self._ops = ProviderOps(core.gateway, core.retry, core.contention, core.assumptions)

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
        return self._ops.create_provider(
            validate_provider_name(name),
            None if uuid is None else validate_uuid(uuid, "uuid"),
            None
            if parent_provider_uuid is None
            else validate_uuid(parent_provider_uuid, "parent_provider_uuid"),
            validate_request_id(global_request_id),
        )

    def get_provider(self, uuid: str, *, global_request_id: str | None = None) -> ResourceProvider:
        """Read one provider.

        :raises ProviderNotFound: it does not exist.
        """
        return self._ops.get_provider(
            validate_uuid(uuid, "uuid"), global_request_id=validate_request_id(global_request_id)
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

        Every filter is checked by the rule its value has everywhere else
        (a trait, an amount, a uuid as in :class:`CandidatesQuery`), before
        any request.

        :param name: the provider's name (1-200 characters, no NUL).
        :param member_of: aggregate uuids; a provider in any of them matches.
        :param in_tree: any provider's uuid; lists its whole tree.
        :param required: traits the provider must have; ``"!NAME"`` forbids
            one. An iterable of names, never one string.
        :param resources: capacity the provider must have free, per class
            (amounts from 1 to 2**31-1).
        :raises InvalidInput: a malformed filter, naming it.
        """
        query: dict[str, str] = {}
        if name is not None:
            query["name"] = validate_provider_name(name, "name")
        if uuid is not None:
            query["uuid"] = validate_uuid(uuid, "uuid")
        if member_of is not None:
            aggregates = validate_uuids(member_of, "member_of aggregate")
            if not aggregates:
                # "Any of none" matches nothing; Placement refuses an empty ``in:``.
                raise InvalidInput("member_of needs at least one aggregate uuid")
            query["member_of"] = "in:" + ",".join(sorted(aggregates))
        if in_tree is not None:
            query["in_tree"] = validate_uuid(in_tree, "in_tree")
        if required is not None:
            traits = validate_trait_filter(required, "required")
            if traits:
                query["required"] = ",".join(traits)
        if resources is not None:
            amounts = validate_resources(resources, "resources")
            if amounts:
                query["resources"] = ",".join(f"{rc}:{n}" for rc, n in amounts.items())
        return self._core.gateway.list_providers(query, validate_request_id(global_request_id))

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
            uuid, name, parent_provider_uuid, validate_request_id(global_request_id)
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
        return self._core.gateway.supports(version)

    # -- what is allocated ----------------------------------------------------------
    def get_provider_allocations(
        self, uuid: str, *, global_request_id: str | None = None
    ) -> ProviderAllocations:
        """``GET /resource_providers/{uuid}/allocations``: each consumer's resources here.

        :raises ProviderNotFound: it does not exist.
        """
        return self._core.gateway.provider_allocations(
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

    # -- a view of trees, as nova's resource tracker keeps one ----------------------
    def views(self, *, window: float | Callable[[], float] = AGENT_MAX_STALENESS) -> TreeViews:
        """A new, empty provider-tree view on this client (what ``reportclient.nova`` keeps).

        ``views().ensure(root)`` hands out a tree without a request while
        every provider in it was proven within ``window`` seconds, and
        proves it again past that with one listing; ``flush(specs)`` writes
        only the fields that differ from the view, each at the generation
        the view proved it at, and never one another writer changed since
        (:class:`~reportclient.ProviderChanged`). See
        :mod:`reportclient._engine.tree_views` and doc/source/providers.rst.

        :param window: seconds, or a function answering them on every call
            (nova's ``resource_provider_association_refresh`` is mutable);
            0: a provider once proven is never proven again, as in nova.
        :raises InvalidInput: a negative window.
        """
        if not callable(window):
            if isinstance(window, bool) or not isinstance(window, (int, float)) or window < 0:
                raise InvalidInput(f"window must be seconds >= 0, got {window!r}")
            fixed = float(window)

            def asked() -> float:
                return fixed

            return TreeViews(self._ops, self._core.clock, asked)
        return TreeViews(self._ops, self._core.clock, window)

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
            self._core.gateway,
            providers,
            consumers,
            compute,
            validate_request_id(global_request_id),
            memory=self._core.contention,
        )
        return run_attempts(write, self._core.retry)

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
