"""What every part of the nova adapter shares: the client, the request id, nova's own types."""

from __future__ import annotations

import collections
import importlib
import logging
from typing import Any

from reportclient._clients.placement import PlacementClient
from reportclient._wire.ambient import GLOBAL_REQUEST_ID

__all__ = [
    "ASSOCIATION_REFRESH",
    "LOG",
    "AggInfo",
    "Base",
    "ProviderAllocInfo",
    "TraitInfo",
    "association_refresh_option",
    "nova_module",
    "request_id",
]

LOG = logging.getLogger("reportclient.nova")

# nova's own result tuples (nova.scheduler.client.report), re-declared so the
# adapter answers in the same shape without importing nova.
AggInfo = collections.namedtuple("AggInfo", ["aggregates", "generation"])
TraitInfo = collections.namedtuple("TraitInfo", ["traits", "generation"])
ProviderAllocInfo = collections.namedtuple("ProviderAllocInfo", ["allocations"])


def request_id(context: Any) -> str | None:
    """The global request id of nova's ``RequestContext`` (``context.global_id``).

    nova sends it on every call; one not of the ``req-<uuid4>`` form is
    dropped (Placement would ignore it), and a context without one leaves
    the choice to the client (its own id, else the oslo.context in force).
    """
    value = getattr(context, "global_id", None)
    return value if isinstance(value, str) and GLOBAL_REQUEST_ID.fullmatch(value) else None


def nova_module(name: str) -> Any:
    """Import one of nova's modules when a call needs it (never at this module's import).

    :raises ImportError: nova is not installed; only the calls that return
        nova's own objects (a ``ProviderTree``) need it.
    """
    return importlib.import_module(name)


#: nova's ``[compute] resource_provider_association_refresh`` default (seconds).
ASSOCIATION_REFRESH = 300.0


def association_refresh_option() -> float:
    """nova's ``[compute] resource_provider_association_refresh`` now, else its default.

    Read on every call: the option is mutable (a SIGHUP changes it in a
    running nova-compute). Without nova installed, :data:`ASSOCIATION_REFRESH`.
    """
    try:
        conf = nova_module("nova.conf").CONF
    except ImportError:
        return ASSOCIATION_REFRESH
    return float(conf.compute.resource_provider_association_refresh)


class Base:
    """The attributes the parts of the adapter share."""

    _placement: PlacementClient
