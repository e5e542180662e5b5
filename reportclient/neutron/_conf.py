"""The client neutron-lib would build from neutron's ``[placement]`` options, as a PlacementClient.

neutron-lib's ``_create_client`` reads the group on the first call: with
``auth_type = noauth`` (its fullstack tests' setting) the endpoint is in
``auth_section`` and no token is sent; otherwise keystoneauth's auth and
session options of the group make the Session, and every request names
``service_type = placement``, ``region_name`` and ``endpoint_type`` as the
interface. The same options make the library's client here, so a neutron
deployment configures nothing new.
"""

from __future__ import annotations

from typing import Any

from reportclient._clients.placement import PlacementClient
from reportclient._model.microversions import CONSUMER_GENERATION_VERSION, Microversion
from reportclient.errors import InvalidInput

__all__ = ["GROUP", "client_from_neutron_conf"]

#: The option group neutron reads (``neutron.conf.plugins.ml2.config``... registers it).
GROUP = "placement"


def _pin(version: Microversion) -> str:
    """The client's own version: neutron's from 1.28, else 1.28 (raw calls carry neutron's)."""
    pinned = max(version, CONSUMER_GENERATION_VERSION)
    return f"{pinned[0]}.{pinned[1]}"


def client_from_neutron_conf(conf: Any, version: Microversion) -> PlacementClient:
    """A :class:`PlacementClient` from ``conf.placement`` as neutron-lib would reach Placement.

    No request is made: keystoneauth authenticates on the first request.

    :raises InvalidInput: no ``[placement]`` group, or ``noauth`` without an endpoint.
    """
    group = getattr(conf, GROUP, None)
    if group is None:
        raise InvalidInput("neutron's configuration has no [placement] group")
    if getattr(group, "auth_type", None) == "noauth":
        endpoint = getattr(group, "auth_section", None)
        if not isinstance(endpoint, str) or not endpoint:
            raise InvalidInput("[placement] auth_type = noauth needs the endpoint in auth_section")
        return PlacementClient.from_endpoint(endpoint, None, microversion=_pin(version))
    from keystoneauth1 import loading

    auth = loading.load_auth_from_conf_options(conf, GROUP)
    session = loading.load_session_from_conf_options(conf, GROUP, auth=auth)
    where: dict[str, Any] = {}
    if getattr(group, "region_name", None):
        where["region_name"] = group.region_name
    if getattr(group, "endpoint_type", None):
        where["interface"] = group.endpoint_type
    return PlacementClient.from_session(session, microversion=_pin(version), **where)
