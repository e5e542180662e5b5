"""Choosing a microversion from what Placement offers.

Placement publishes its range in the root document (``GET /``), which is
also what keystoneauth1's version discovery reads. Discovery is asked first:
keystoneauth caches the document on the Session, so every client and
Adapter sharing one Session negotiates with a single request between them,
and a deployment that already runs discovery for Placement (openstacksdk
does) pays nothing.

Discovery has two blind spots, and the transport sends ``GET /`` itself in
both. Its request carries the Session's timeout, not the client's, and a
Session built without one (keystoneauth's default) would let a stalled
server hold the first call forever; and when it fails it says only
``DiscoveryFailure``, where the client's own request tells a 503 from a
refused connection from a document that is not Placement's, with the
request id. So a Session without a timeout, or a failed discovery, costs
one ``GET /`` through the transport, as before discovery was used.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from keystoneauth1 import discover
from keystoneauth1 import exceptions as ks_exc

from reportclient._model.microversions import CONSUMER_GENERATION_VERSION, MAX_VERSION, Microversion
from reportclient.errors import InvalidInput

__all__ = ["choose", "discovered_range", "format_version", "parse_version", "root_range"]


# fullmatch, and ASCII digits: keystoneauth's parser also takes "v1.39",
# floats and "latest", none of which is a pin a caller should get away with,
# and "$" would let "1.39\n" through into a header.
_VERSION = re.compile(r"[0-9]+\.[0-9]+")


def _pair(version: Any) -> Microversion:
    """keystoneauth's normalized version as a (major, minor) pair."""
    normalized = discover.normalize_version_number(version)
    if len(normalized) != 2 or not all(isinstance(part, int) for part in normalized):
        raise InvalidInput(f"microversion must look like '1.39', got {version!r}")
    return int(normalized[0]), int(normalized[1])


def parse_version(value: str) -> Microversion:
    """Turn ``"1.39"`` into ``(1, 39)``.

    :raises InvalidInput: for anything else.
    """
    if not isinstance(value, str) or not _VERSION.fullmatch(value):
        raise InvalidInput(f"microversion must look like '1.39', got {value!r}")
    return _pair(value)


@functools.lru_cache(maxsize=64)
def format_version(version: Microversion) -> str:
    """Turn ``(1, 39)`` into ``"1.39"``; memoised, as every request formats its version."""
    return discover.version_to_string(version)


def discovered_range(adapter: Any) -> tuple[Microversion, Microversion] | None:
    """Placement's (min, max) microversions from keystoneauth's version discovery.

    None when discovery cannot be trusted to answer (the Session has no
    timeout), failed, or found no microversions; the caller then reads the
    root document itself.

    :raises keystoneauth1.exceptions.ClientException: for what keystoneauth
        raises before discovery (no auth plugin, credentials refused, no
        endpoint in the catalog, Keystone unreachable).
    """
    discover_endpoint = getattr(adapter, "get_endpoint_data", None)
    if discover_endpoint is None or getattr(adapter.session, "timeout", None) is None:
        return None
    try:
        data = discover_endpoint()
    except ks_exc.DiscoveryFailure:
        return None
    if data is None or not data.max_microversion:
        return None
    return _pair(data.min_microversion or (1, 0)), _pair(data.max_microversion)


def root_range(body: Any) -> tuple[Microversion, Microversion]:
    """The (min, max) microversions in a root document Placement returned.

    :raises KeyError, IndexError, TypeError, InvalidInput: for a document
        that is not Placement's.
    """
    root = body["versions"][0]
    return parse_version(root.get("min_version", "1.0")), parse_version(root["max_version"])


def choose(server_min: Microversion, server_max: Microversion) -> Microversion | None:
    """The highest version both sides speak, or None when there is none of 1.28 or above."""
    chosen = min(server_max, MAX_VERSION)
    if server_min > chosen or not discover.version_between(
        CONSUMER_GENERATION_VERSION, MAX_VERSION, chosen
    ):
        return None
    return chosen
