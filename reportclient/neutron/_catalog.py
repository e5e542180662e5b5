"""neutron-lib's trait and resource-class calls, and a provider's traits.

Every catalogue call is neutron-lib's own request. ``update_trait`` is the
one the report plugin sends for every trait at every sync; from 1.28 it
sends nothing for a custom trait that a provider the view proved (within
its window, proven again past it) holds: Placement refuses to delete a trait
any provider has (``DELETE /traits/{name}`` answers 409 while it is in use),
so the trait exists for as long as that provider holds it. A trait no proven
provider holds is ``PUT`` as neutron-lib does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reportclient._adapters.keystoneauth import response_of
from reportclient._gateway import routes
from reportclient._model.providers import ProviderTraits
from reportclient._model.validation import validate_names
from reportclient.errors import PlacementError
from reportclient.neutron._common import Base, text
from reportclient.neutron._errors import answer

__all__ = ["CatalogCalls"]


class CatalogCalls(Base):
    """Traits and resource classes (neutron-lib's methods)."""

    _put_field: Any
    _write_field: Any
    _response: Any
    _fresh: Any

    # -- traits ---------------------------------------------------------------------
    def list_traits(self) -> Any:
        """``GET /traits``: ``{"traits": [...]}``."""
        return self._raw("GET", routes.traits(), what="list_traits").body

    def get_trait(self, name: str) -> Any:
        """``GET /traits/{name}``: the ``requests.Response`` (neutron-lib's).

        :raises PlacementTraitNotFound: no such trait.
        """
        url = routes.trait(name)
        return self._response(self._raw("GET", url, what="get_trait", trait=name), url)

    def update_trait(self, name: str) -> Any:
        """Make a custom trait exist: the ``requests.Response`` (201 created, 204 there).

        From 1.28, a trait a provider the view proved holds is there: 204
        without a request (module docstring).
        """
        url = routes.trait(name)
        self._built()
        try:
            held = self._engine and self._held_trait(name)
        except PlacementError as exc:  # the view re-read what the gateway forgot
            answer("update_trait", exc, trait=name)
        if held:
            return response_of(204, None, {}, None, url)
        return self._response(self._raw("PUT", url, what="update_trait", trait=name), url)

    def _held_trait(self, name: str) -> bool:
        """Whether a provider the view proved within its window holds trait ``name``.

        Past the window nothing is re-proven here: proving a tree whose
        provider another writer deleted would create it again, and a trait
        call must never create a provider. neutron-lib's ``PUT`` then says.
        """
        if not name.startswith("CUSTOM_"):
            return False
        fresh = self._fresh()
        return any(name in pv.traits and pv.uuid in fresh for pv in self._views.current())

    def delete_trait(self, name: str) -> None:
        """``DELETE /traits/{name}``.

        :raises PlacementTraitNotFound: no such trait.
        """
        self._raw("DELETE", routes.trait(name), what="delete_trait", trait=name)

    def update_resource_provider_traits(
        self,
        resource_provider_uuid: Any,
        traits: Iterable[str],
        resource_provider_generation: int | None = None,
    ) -> Any:
        """Replace the provider's traits: ``{"traits": [...], "resource_provider_generation"}``.

        With a generation of the caller's, one write at it. Without, from
        1.28, nothing is sent when the provider view holds ``traits``.

        :raises PlacementResourceProviderNotFound: no such provider.
        :raises PlacementTraitNotFound: a trait Placement does not know.
        :raises PlacementResourceProviderGenerationConflict: the caller's
            generation is stale, or conflicts outlasted the retries.
        """
        uuid = text(resource_provider_uuid)
        what = "update_resource_provider_traits"
        names = list(traits)
        context = {"resource_provider": uuid, "trait": names}
        if not self._engine or resource_provider_generation is not None:
            body = {"resource_provider_generation": resource_provider_generation, "traits": names}
            return self._put_field(
                routes.provider_field(uuid, "traits"),
                body,
                uuid,
                resource_provider_generation,
                what,
                trait=names,
            )
        self._built()
        try:
            written = self._write_field(ProviderTraits, uuid, validate_names(names, "trait"), what)
        except PlacementError as exc:
            answer(what, exc, **context)
        return {
            "resource_provider_generation": written.generation,
            "traits": sorted(written.value),
        }

    def list_resource_provider_traits(self, resource_provider_uuid: Any) -> Any:
        """``GET /resource_providers/{uuid}/traits``.

        :raises PlacementResourceProviderNotFound: no such provider.
        """
        return self._on_provider(
            "GET", resource_provider_uuid, "traits", what="list_resource_provider_traits"
        ).body

    def delete_resource_provider_traits(self, resource_provider_uuid: Any) -> None:
        """``DELETE /resource_providers/{uuid}/traits`` (unguarded, as neutron-lib's).

        :raises PlacementResourceProviderNotFound: no such provider.
        """
        self._on_provider(
            "DELETE", resource_provider_uuid, "traits", what="delete_resource_provider_traits"
        )

    # -- resource classes -------------------------------------------------------------
    def list_resource_classes(self) -> Any:
        """``GET /resource_classes``."""
        return self._raw("GET", routes.resource_classes(), what="list_resource_classes").body

    def get_resource_class(self, name: str) -> Any:
        """``GET /resource_classes/{name}``.

        :raises PlacementResourceClassNotFound: no such class.
        """
        return self._raw(
            "GET", routes.resource_class(name), what="get_resource_class", resource_class=name
        ).body

    def create_resource_class(self, name: str) -> None:
        """``POST /resource_classes`` (a 409 for one that exists, as neutron-lib's)."""
        self._raw("POST", routes.resource_classes(), {"name": name}, what="create_resource_class")

    def update_resource_class(self, name: str) -> None:
        """``PUT /resource_classes/{name}``: create or confirm a custom class."""
        self._raw("PUT", routes.resource_class(name), what="update_resource_class")

    def delete_resource_class(self, name: str) -> None:
        """``DELETE /resource_classes/{name}``.

        :raises PlacementResourceClassNotFound: no such class.
        """
        self._raw(
            "DELETE", routes.resource_class(name), what="delete_resource_class", resource_class=name
        )
