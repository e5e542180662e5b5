"""The client neutron-lib would build from neutron's ``[placement]`` options, as a PlacementClient.

neutron-lib's ``_create_client`` reads the group on the first call: with
``auth_type = noauth`` (its fullstack tests' setting) the endpoint is in
``auth_section``, no token is sent and every request times out after 5 s;
otherwise keystoneauth's auth and session options of the group make the
Session (``timeout``, ``cafile``, ``insecure``... included), and every
request names ``service_type = placement``, ``region_name`` and
``endpoint_type`` as the interface. The same options make the library's
client here, so a neutron deployment configures nothing new.

The client is pinned to neutron's version and sends exactly it
(``exact_microversion``): neutron chose its version for its request and
answer shapes, and the library's leaner version for a consumer's untyped
writes is not one neutron asked for. Below 1.28 the client is pinned to
1.28, the lowest it speaks, and never uses it: every call there is one of
neutron-lib's requests, sent at neutron's version.
"""

from __future__ import annotations

from typing import Any

import tenacity
from keystoneauth1 import session as ks_session

from reportclient._clients.placement import PlacementClient
from reportclient._model.microversions import CONSUMER_GENERATION_VERSION, Microversion
from reportclient.errors import InvalidInput

__all__ = ["GROUP", "NOAUTH_TIMEOUT", "client_from_neutron_conf"]

#: The option group neutron reads (``neutron.conf.common.register_placement_opts``).
GROUP = "placement"
#: Seconds neutron-lib's ``NoAuthClient`` allows each request.
NOAUTH_TIMEOUT = 5.0


def _pin(version: Microversion) -> str:
    """The client's own version: neutron's from 1.28, else 1.28 (raw calls carry neutron's)."""
    pinned = max(version, CONSUMER_GENERATION_VERSION)
    return f"{pinned[0]}.{pinned[1]}"


def client_from_neutron_conf(
    conf: Any,
    version: Microversion,
    session: ks_session.Session | None = None,
    retry: tenacity.Retrying | None = None,
) -> PlacementClient:
    """A :class:`PlacementClient` from ``conf.placement`` as neutron-lib would reach Placement.

    No request is made: keystoneauth authenticates on the first request.

    :param session: a keystoneauth Session to send through instead of the
        one the group's auth and session options would make (the group's
        ``region_name`` and ``endpoint_type`` still choose the endpoint).
    :param retry: the client's retry policy (None: the library's default).
    :raises InvalidInput: no ``[placement]`` group, or ``noauth`` without an endpoint.
    """
    group = getattr(conf, GROUP, None)
    if group is None:
        raise InvalidInput("neutron's configuration has no [placement] group")
    pin: dict[str, Any] = {"microversion": _pin(version), "exact_microversion": True}
    if retry is not None:
        pin["retry"] = retry
    if session is None and getattr(group, "auth_type", None) == "noauth":
        endpoint = getattr(group, "auth_section", None)
        if not isinstance(endpoint, str) or not endpoint:
            raise InvalidInput("[placement] auth_type = noauth needs the endpoint in auth_section")
        return PlacementClient.from_endpoint(endpoint, None, timeout=NOAUTH_TIMEOUT, **pin)
    if session is None:
        from keystoneauth1 import loading

        auth = loading.load_auth_from_conf_options(conf, GROUP)
        session = loading.load_session_from_conf_options(conf, GROUP, auth=auth)
    options: dict[str, Any] = dict(pin)
    if getattr(group, "region_name", None):
        options["region_name"] = group.region_name
    if getattr(group, "endpoint_type", None):
        options["interface"] = group.endpoint_type
    if getattr(group, "timeout", None) is not None:
        # The client's per-request timeout overrides the Session's: neutron's is kept.
        options["timeout"] = float(group.timeout)
    return PlacementClient.from_session(session, **options)
