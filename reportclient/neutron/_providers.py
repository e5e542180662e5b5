"""neutron-lib's provider, inventory and aggregate calls.

Reads are the requests neutron-lib sends (at neutron's version, answered in
that version's shapes). From 1.28 the report plugin's writes run on the
library's provider view (:meth:`reportclient.ProviderClient.views`, what the
nova adapter keeps): ``ensure_resource_provider`` proves the provider's tree
once per window, and a field write that holds what the view proved sends
nothing; one that differs is written at the generation the view proved it
at, and a write another writer raced is redone as neutron-lib does it, read
and replaced under the retry policy. An agent re-synced with nothing changed
costs no write. Below 1.28 (the segments plugin's 1.1) every write is
neutron-lib's own request; the generation conflict is read from the status
and the detail (there is no ``code`` before 1.23), never a ``KeyError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reportclient._gateway import routes
from reportclient._model.providers import ProviderInventories, inventories_of
from reportclient._model.tree_view import ProviderView, TreeView
from reportclient.errors import (
    GenerationConflict,
    InvalidInput,
    PlacementError,
)
from reportclient.neutron._common import (
    MEMBER_OF,
    NESTED,
    PROVIDER_BODY,
    Base,
    plain,
    provider_body,
    text,
)
from reportclient.neutron._errors import answer, fail, is_generation_conflict
from reportclient.retry import NO_RETRY

__all__ = ["ProviderCalls"]

#: neutron-lib's tries for a write without a generation (below 1.28 here).
_TRIES = 10


def _root_of(view: TreeView, held: ProviderView) -> str:
    at, seen = held, {held.uuid}
    while at.parent is not None and (up := view.get(at.parent)) is not None:
        if up.uuid in seen:
            break
        seen.add(up.uuid)
        at = up
    return at.parent or at.uuid


class ProviderCalls(Base):
    """Resource providers, their inventories and aggregates (neutron-lib's methods)."""

    _fresh: Any

    # -- providers ------------------------------------------------------------------
    def create_resource_provider(self, resource_provider: Mapping[str, Any]) -> Any:
        """``POST /resource_providers``: the provider (None below 1.20, as neutron-lib)."""
        answered = self._raw(
            "POST", routes.providers(), resource_provider, what="create_resource_provider"
        )
        return answered.body if self._version >= PROVIDER_BODY else None

    def update_resource_provider(
        self, resource_provider: Mapping[str, Any], *, _what: str = "update_resource_provider"
    ) -> Any:
        """``PUT /resource_providers/{uuid}`` with the name (and parent): the provider.

        :raises PlacementResourceProviderNotFound: no such provider.
        :raises PlacementResourceProviderNameNotUnique: the name is another's.
        """
        uuid = text(resource_provider["uuid"])
        body = {k: v for k, v in resource_provider.items() if k != "uuid"}
        url = routes.provider(uuid)
        answered = self._raw(
            "PUT", url, body, what=_what, resource_provider=uuid, name=body.get("name")
        )
        if self._engine:
            # Renamed or moved: the view proves its tree again when next asked.
            self._views.invalidate(uuid)
        return answered.body

    def ensure_resource_provider(self, resource_provider: Mapping[str, Any]) -> Any:
        """Create the provider, or bring its name and parent to ``resource_provider``.

        From 1.28 the view answers without a request while it proved the
        provider itself within its window with that name and parent
        (neutron-lib sends a ``PUT`` every time); otherwise one listing
        proves its tree and a missing provider is created, a renamed or
        moved one updated with neutron-lib's own ``PUT``.

        Only the provider's own proof is asked for, not its tree's: the
        call is about that provider's name and parent, which this client
        proved (listed, or created) within the window. Asking the view to
        ensure the provider again would prove its whole tree again whenever
        another member (the compute node, listed but never proven by this
        client) is not fresh, which is what the report plugin's second
        ensure of the agent's provider in one sync cost: a listing and six
        field reads, on top of neutron-lib's requests.
        """
        if not self._engine:
            try:
                return self.update_resource_provider(resource_provider)
            except Exception as exc:
                if type(exc).__name__ != "PlacementResourceProviderNotFound" and not (
                    isinstance(exc, PlacementError) and exc.status == 404
                ):
                    raise
            return self.create_resource_provider(resource_provider)
        uuid = text(resource_provider["uuid"])
        name = resource_provider.get("name")
        parent = resource_provider.get("parent_provider_uuid")
        parent = None if parent is None else text(parent, "parent_provider_uuid")
        self._built()
        try:
            # current() reads only what the gateway forgot since it proved it.
            view = self._views.current() if uuid in self._fresh() else None
            held = None if view is None else view.get(uuid)
            if view is None or held is None:
                view = self._views.ensure(uuid, name=name, parent=parent)
                held = view.get(uuid)
        except PlacementError as exc:
            answer("ensure_resource_provider", exc, resource_provider=uuid, name=name)
        moved = "parent_provider_uuid" in resource_provider and (
            held is None or held.parent != parent
        )
        if held is None or held.name != name or moved:
            return self.update_resource_provider(
                resource_provider, _what="ensure_resource_provider"
            )
        return provider_body(
            uuid, held.name, held.generation, held.parent, _root_of(view, held), self._version
        )

    def delete_resource_provider(self, resource_provider_uuid: Any) -> None:
        """``DELETE /resource_providers/{uuid}``; the view forgets it and what hung from it."""
        uuid = text(resource_provider_uuid)
        self._raw("DELETE", routes.provider(uuid), what="delete_resource_provider")
        if self._engine:
            self._views.invalidate(uuid)

    def get_resource_provider(self, resource_provider_uuid: Any) -> Any:
        """``GET /resource_providers/{uuid}``: the provider document.

        :raises PlacementResourceProviderNotFound: no such provider.
        """
        return self._on_provider(
            "GET", resource_provider_uuid, None, what="get_resource_provider"
        ).body

    def list_resource_providers(
        self,
        name: str | None = None,
        member_of: Any = None,
        resources: Any = None,
        in_tree: Any = None,
        uuid: Any = None,
    ) -> Any:
        """``GET /resource_providers`` with neutron-lib's filters, as it spells them.

        :raises PlacementAPIVersionIncorrect: ``member_of`` below 1.3, ``in_tree`` below 1.14.
        """
        filters: dict[str, Any] = {}
        if name:
            filters["name"] = name
        if member_of:
            self._needs(MEMBER_OF)
            filters["member_of"] = member_of
        if resources:
            filters["resources"] = resources
        if in_tree:
            self._needs(NESTED)
            filters["in_tree"] = text(in_tree, "in_tree")
        if uuid:
            filters["uuid"] = text(uuid)
        url = routes.providers(filters)
        return self._raw("GET", url, what="list_resource_providers").body

    def _needs(self, needed: tuple[int, int]) -> None:
        if self._version < needed:
            cause = InvalidInput(f"this filter needs placement {needed[0]}.{needed[1]}")
            fail(
                "PlacementAPIVersionIncorrect",
                cause,
                current_version=self._version,
                needed_version=needed,
            )

    # -- inventories ----------------------------------------------------------------
    def update_resource_provider_inventories(
        self,
        resource_provider_uuid: Any,
        inventories: Mapping[str, Any],
        resource_provider_generation: int | None = None,
    ) -> Any:
        """Replace the provider's inventories: the new ones, with the generation.

        With a generation of the caller's, one write at it. Without, from
        1.28, nothing is sent when the provider view holds ``inventories``.

        :raises PlacementResourceProviderNotFound: no such provider.
        :raises PlacementResourceProviderGenerationConflict: the caller's
            generation is stale, or conflicts outlasted the retries.
        """
        uuid = text(resource_provider_uuid)
        what, url = (
            "update_resource_provider_inventories",
            routes.provider_field(uuid, "inventories"),
        )
        context = {"resource_provider": uuid, "generation": resource_provider_generation}
        if not self._engine or resource_provider_generation is not None:
            body: dict[str, Any] = {
                "resource_provider_generation": resource_provider_generation,
                "inventories": inventories,
            }
            return self._put_field(url, body, uuid, resource_provider_generation, what)
        self._built()
        try:
            wanted = inventories_of(inventories, "inventories")
            written = self._write_field(ProviderInventories, uuid, wanted, what)
        except PlacementError as exc:
            answer(what, exc, **context)
        return written.body(written.value)

    def delete_resource_provider_inventories(self, resource_provider_uuid: Any) -> None:
        """``DELETE /resource_providers/{uuid}/inventories`` (unguarded, as neutron-lib's)."""
        uuid = text(resource_provider_uuid)
        self._raw(
            "DELETE",
            routes.provider_field(uuid, "inventories"),
            what="delete_resource_provider_inventories",
            resource_provider=uuid,
        )

    def delete_resource_provider_inventory(
        self, resource_provider_uuid: Any, resource_class: str
    ) -> None:
        """``DELETE /resource_providers/{uuid}/inventories/{rc}`` (unguarded, as neutron-lib's)."""
        uuid = text(resource_provider_uuid)
        self._raw(
            "DELETE",
            routes.provider_field(uuid, f"inventories/{resource_class}"),
            what="delete_resource_provider_inventory",
            resource_provider=uuid,
            resource_class=resource_class,
        )

    def get_inventory(self, resource_provider_uuid: Any, resource_class: str) -> Any:
        """One class's inventory, with ``resource_provider_generation`` (the read it is).

        :raises PlacementResourceProviderNotFound: no such provider.
        :raises PlacementInventoryNotFound: no inventory of that class.
        """
        return self._on_provider(
            "GET",
            resource_provider_uuid,
            f"inventories/{resource_class}",
            what="get_inventory",
            resource_class=resource_class,
        ).body

    def update_resource_provider_inventory(
        self,
        resource_provider_uuid: Any,
        inventory: Mapping[str, Any],
        resource_class: str,
        resource_provider_generation: int | None = None,
    ) -> Any:
        """Set one class's inventory: the class's new record, with the generation.

        A generation the caller gives, or the one ``inventory`` carries from
        :meth:`get_inventory` (the read it was computed from: the segments
        plugin's), is one write at it, and a conflict is
        ``PlacementResourceProviderGenerationConflict`` for the caller to
        read and recompute. neutron-lib drops the carried generation and
        sends the stale record again at a fresh one, which overwrites
        another server's change (and, below 1.23, fails with ``KeyError``).

        :raises PlacementResourceProviderNotFound: no such provider.
        :raises PlacementResourceNotFound: the class is unknown.
        """
        uuid = text(resource_provider_uuid)
        what = "update_resource_provider_inventory"
        url = routes.provider_field(uuid, f"inventories/{resource_class}")
        record = {k: v for k, v in inventory.items() if k != "resource_provider_generation"}
        carried = inventory.get("resource_provider_generation")
        generation = resource_provider_generation
        if generation is None and isinstance(carried, int) and not isinstance(carried, bool):
            generation = carried
        if not self._engine or generation is not None:
            body = dict(record, resource_provider_generation=generation)
            return self._put_field(url, body, uuid, generation, what)
        placement = self._built()
        try:
            single = inventories_of({resource_class: record}, "inventory")[resource_class]
            done = placement.providers.set_inventory(uuid, resource_class, single)
        except PlacementError as exc:
            # neutron-lib names its own route; the library wrote the provider's inventories.
            answer(what, exc, resource_provider=uuid, resource_class=resource_class, url=url)
        return {
            "resource_provider_generation": done.generation,
            **done.inventories[resource_class].to_json(),
        }

    # -- aggregates -------------------------------------------------------------------
    def associate_aggregates(self, resource_provider_uuid: Any, aggregates: Any) -> Any:
        """``PUT /resource_providers/{uuid}/aggregates`` with ``aggregates`` as the body.

        A bare list below 1.19 (the segments plugin's), ``{"aggregates",
        "resource_provider_generation"}`` from it, as neutron-lib sends what
        it is given.
        """
        return self._on_provider(
            "PUT", resource_provider_uuid, "aggregates", aggregates, what="associate_aggregates"
        ).body

    def list_aggregates(self, resource_provider_uuid: Any) -> Any:
        """``GET /resource_providers/{uuid}/aggregates``.

        :raises PlacementAggregateNotFound: no such provider.
        """
        return self._on_provider(
            "GET", resource_provider_uuid, "aggregates", what="list_aggregates"
        ).body

    # -- one field, as neutron-lib writes it ----------------------------------------------
    def _put_field(
        self,
        url: str,
        body: dict[str, Any],
        uuid: str,
        generation: int | None,
        what: str,
        **named: Any,
    ) -> Any:
        """neutron-lib's write of a field: at the caller's generation once, else re-read and sent.

        Without a generation the provider's is read before each try, up to
        neutron-lib's ten; a conflict is told by :func:`is_generation_conflict`.

        :param named: what else neutron-lib's exceptions for ``what`` name (``trait``).
        """
        context: dict[str, Any] = {"resource_provider": uuid, "generation": generation, **named}
        placement = self._built()
        last: PlacementError | None = None
        for _ in range(1 if generation is not None else _TRIES):
            if generation is None:
                provider = self.get_resource_provider(uuid)
                body["resource_provider_generation"] = provider["generation"]
            try:
                return placement.request(
                    "PUT", url, json=plain(body), microversion=self._spelled, retry=NO_RETRY
                ).body
            except PlacementError as exc:
                if not is_generation_conflict(exc):
                    answer(what, exc, **context)
                last = exc
        assert last is not None
        context["generation"] = body["resource_provider_generation"]
        fail("PlacementResourceProviderGenerationConflict", last, **context)

    def _write_field(self, kind: type[Any], uuid: str, wanted: Any, what: str) -> Any:
        """Make one field ``wanted`` through the view (nothing sent when it holds it).

        A provider the view proved within its window is written once, at
        the generation the view holds, when it differs; a conflict (an
        allocation or another writer moved the provider since) falls back
        to the library's read-modify-write, as does a provider the view has
        not proven (proving it here could create it again after another
        writer deleted it): neutron-lib replaces whatever it finds.
        """
        providers = self.placement.providers
        setter = providers.set_inventories if kind is ProviderInventories else providers.set_traits
        held = self._views.current().get(uuid) if uuid in self._fresh() else None
        if held is not None:
            value = held.inventories if kind is ProviderInventories else held.traits
            if kind(uuid, held.generation, value).holds(wanted):
                return kind(uuid, held.generation, value)
            try:
                # One write at the generation the view proved; neutron-lib reads first.
                return setter(uuid, wanted, generation=held.generation)
            except GenerationConflict:
                pass  # moved since (an allocation, another writer): read and replace
        return setter(uuid, wanted)
