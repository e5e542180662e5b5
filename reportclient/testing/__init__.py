"""Test harness that runs the real OpenStack Placement service on 127.0.0.1.

Independent of the reportclient client itself (tests arrange state with
:class:`PlacementAdmin`, never with the code under test). Needs the ``placement`` extra
(``openstack-placement``) to start a server; :class:`PlacementAdmin` needs only ``requests``.

- :class:`EmbeddedPlacement`: in-process, in-memory SQLite, fast; records every request.
- :class:`PlacementServer`: child process, SQLite file; can be killed and restarted.
- ``reportclient.testing.pytest_plugin``: fixtures ``real_placement``, ``placement_admin``,
  ``compute_node`` and ``placement_process``.
"""

from reportclient.testing._admin import (
    DEFAULT_MICROVERSION,
    Inventory,
    PlacementAdmin,
    PlacementAdminError,
)
from reportclient.testing._app import ADMIN_TOKEN
from reportclient.testing._cluster import ClusterUnavailable, ConsumerLock, PlacementCluster
from reportclient.testing._embedded import EmbeddedPlacement
from reportclient.testing._server import PlacementServer, PlacementStartError
from reportclient.testing._wsgi import LogLine, RequestRecord

__all__ = [
    "ADMIN_TOKEN",
    "DEFAULT_MICROVERSION",
    "ClusterUnavailable",
    "ConsumerLock",
    "EmbeddedPlacement",
    "Inventory",
    "LogLine",
    "PlacementAdmin",
    "PlacementAdminError",
    "PlacementCluster",
    "PlacementServer",
    "PlacementStartError",
    "RequestRecord",
]
