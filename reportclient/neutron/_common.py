"""What every part of the neutron adapter shares: versions, uuids, bodies, neutron-lib's types."""

from __future__ import annotations

import logging
import re
import uuid as uuid_lib
from collections.abc import Mapping
from typing import Any

from reportclient._adapters.keystoneauth import host_module
from reportclient._clients.placement import PlacementClient
from reportclient._engine.tree_views import TreeViews
from reportclient._gateway import routes
from reportclient._model.microversions import Microversion
from reportclient.errors import InvalidInput

__all__ = [
    "CONSUMER_GENERATIONS",
    "LOG",
    "MEMBER_OF",
    "NESTED",
    "PROVIDER_BODY",
    "Base",
    "neutron_exceptions",
    "parse_api_version",
    "plain",
    "provider_body",
    "text",
]

LOG = logging.getLogger("reportclient.neutron")

#: neutron-lib's named versions (``neutron_lib.placement.client``), by what they enable.
#: ``member_of`` in ``GET /resource_providers``.
MEMBER_OF: Microversion = (1, 3)
#: ``in_tree`` in ``GET /resource_providers``.
NESTED: Microversion = (1, 14)
#: ``POST /resource_providers`` answers with the provider.
PROVIDER_BODY: Microversion = (1, 20)
#: Consumer generations: from here the adapter writes through the library's
#: engine and its provider view; below it, as neutron-lib sends, once.
CONSUMER_GENERATIONS: Microversion = (1, 28)

_VERSION = re.compile(r"placement (\d+)\.(\d+)")


def parse_api_version(openstack_api_version: str) -> Microversion:
    """``'placement 1.37'`` as ``(1, 37)``, as neutron-lib reads its header value.

    :raises InvalidInput: no ``placement X.Y`` in it (neutron-lib fails on
        its first call with an ``AttributeError``; this fails at construction).
    """
    match = _VERSION.search(openstack_api_version if isinstance(openstack_api_version, str) else "")
    if match is None:
        raise InvalidInput(
            f"openstack_api_version must read 'placement X.Y', got {openstack_api_version!r}"
        )
    return int(match.group(1)), int(match.group(2))


def text(value: Any, what: str = "uuid") -> str:
    """A uuid neutron passes (a ``uuid.UUID`` from its uuid5 helpers, or a string) as text.

    :raises InvalidInput: anything else (before any request).
    """
    if isinstance(value, uuid_lib.UUID):
        return str(value)
    if isinstance(value, str):
        return value
    raise InvalidInput(f"{what} must be a string or a uuid.UUID, got {type(value).__name__}")


def plain(body: Any) -> Any:
    """``body`` with every ``uuid.UUID`` as text: neutron's report plugin puts UUIDs in bodies.

    neutron-lib's session encodes them with oslo's JSON encoder; the wire's
    encoder is the standard one, so they are spelled here.
    """
    if isinstance(body, uuid_lib.UUID):
        return str(body)
    if isinstance(body, Mapping):
        return {plain(k): plain(v) for k, v in body.items()}
    if isinstance(body, (list, tuple)):
        return [plain(v) for v in body]
    return body


def neutron_exceptions() -> Any:
    """``neutron_lib.exceptions.placement`` if neutron-lib is installed, else None."""
    try:
        return host_module("neutron_lib.exceptions.placement")
    except ImportError:
        return None


def _links(uuid: str, version: Microversion) -> list[dict[str, str]]:
    """The ``links`` Placement gives a provider document at ``version`` (no mount prefix)."""
    url = routes.provider(uuid)
    rels = ["inventories", "usages"]
    rels += ["aggregates"] if version >= (1, 1) else []
    rels += ["traits"] if version >= (1, 6) else []
    rels += ["allocations"] if version >= (1, 11) else []
    return [{"rel": "self", "href": url}] + [{"rel": r, "href": f"{url}/{r}"} for r in rels]


def provider_body(
    uuid: str,
    name: str,
    generation: int,
    parent: str | None,
    root: str | None,
    version: Microversion,
) -> dict[str, Any]:
    """A provider document as Placement answers it at ``version`` (what neutron-lib returns)."""
    body: dict[str, Any] = {
        "uuid": uuid,
        "name": name,
        "generation": generation,
        "links": _links(uuid, version),
    }
    if version >= NESTED:
        body["parent_provider_uuid"] = parent
        body["root_provider_uuid"] = root or uuid
    return body


class Base:
    """The attributes the parts of the adapter share (set by the class in ``__init__``)."""

    _version: Microversion
    #: ``_version`` as the wire spells it (``"1.1"``), sent with every request.
    _spelled: str

    @property
    def placement(self) -> PlacementClient:
        raise NotImplementedError

    @property
    def _views(self) -> TreeViews:
        raise NotImplementedError

    @property
    def _engine(self) -> bool:
        """Whether writes go through the library's engine (1.28+), else as neutron-lib sends."""
        return self._version >= CONSUMER_GENERATIONS

    def _raw(self, method: str, url: str, body: Any = None, *, what: str, **context: Any) -> Any:
        raise NotImplementedError

    def _on_provider(
        self,
        method: str,
        resource_provider_uuid: Any,
        field: str | None,
        body: Any = None,
        *,
        what: str,
        **context: Any,
    ) -> Any:
        """One raw request about a provider: ``field`` (``"traits"``...) of it, or (None) itself."""
        uuid = text(resource_provider_uuid)
        url = routes.provider(uuid) if field is None else routes.provider_field(uuid, field)
        return self._raw(method, url, body, what=what, resource_provider=uuid, **context)

    def _built(self) -> PlacementClient:
        raise NotImplementedError
