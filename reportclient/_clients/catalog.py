"""The trait and resource-class catalogue (part of ``PlacementClient.providers``).

Plain requests through the gateway, nothing cached: ``PUT`` creates or
confirms a custom name in one request, so two agents ensuring the same
name both succeed.
"""

from __future__ import annotations

from collections.abc import Iterable

from reportclient._clients.core import Core
from reportclient._model.validation import (
    validate_custom_name,
    validate_name_prefix,
    validate_names,
    validate_standard_name,
)
from reportclient._wire.transport import validate_request_id
from reportclient.errors import InvalidInput

__all__ = ["CatalogClient"]


class CatalogClient:
    """Custom resource classes and traits: ensure, list, read, delete."""

    _core: Core

    # -- resource classes and traits ----------------------------------------------
    def ensure_resource_class(self, name: str, *, global_request_id: str | None = None) -> bool:
        """Make a custom resource class exist; True if this call created it.

        ``PUT /resource_classes/{name}`` (1.7+) creates or confirms in one
        request, so two agents ensuring the same class both succeed.
        """
        return self._core.gateway.ensure(
            "resource_classes", validate_custom_name(name), validate_request_id(global_request_id)
        )

    def ensure_trait(self, name: str, *, global_request_id: str | None = None) -> bool:
        """Make a custom trait exist; True if this call created it (idempotent, race-safe)."""
        return self._core.gateway.ensure(
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
            sorted(self._core.gateway.list_traits(query, validate_request_id(global_request_id)))
        )

    def get_trait(self, name: str, *, global_request_id: str | None = None) -> str:
        """``GET /traits/{name}``: ``name``, once Placement confirms the trait exists.

        :raises PlacementError: status 404 when it does not.
        """
        name = validate_standard_name(name, "trait")
        self._core.gateway.get_trait(name, validate_request_id(global_request_id))
        return name

    def delete_trait(self, name: str, *, global_request_id: str | None = None) -> None:
        """``DELETE /traits/{name}``: delete a custom trait no provider has.

        :raises InvalidInput: a standard trait (Placement refuses to delete those).
        :raises PlacementError: status 404 when it does not exist; status 409
            while a provider has it (Placement gives that no code of its own).
        """
        name = validate_custom_name(name, "trait")
        self._core.gateway.delete_trait(name, validate_request_id(global_request_id))

    def list_resource_classes(self, *, global_request_id: str | None = None) -> tuple[str, ...]:
        """``GET /resource_classes``: the names of every class, standard and custom, sorted."""
        return tuple(
            sorted(self._core.gateway.list_resource_classes(validate_request_id(global_request_id)))
        )

    def get_resource_class(self, name: str, *, global_request_id: str | None = None) -> str:
        """``GET /resource_classes/{name}``: its name, once Placement confirms it exists.

        :raises PlacementError: status 404 when it does not.
        """
        name = validate_standard_name(name)
        return self._core.gateway.get_resource_class(name, validate_request_id(global_request_id))

    def delete_resource_class(self, name: str, *, global_request_id: str | None = None) -> None:
        """``DELETE /resource_classes/{name}``: delete a custom class no inventory uses.

        :raises InvalidInput: a standard class (Placement refuses to delete those).
        :raises PlacementError: status 404 when it does not exist; status 409
            while some provider has inventory of it (no code of its own).
        """
        name = validate_custom_name(name)
        self._core.gateway.delete_resource_class(name, validate_request_id(global_request_id))
