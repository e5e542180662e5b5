"""Test harness that runs the real OpenStack Placement service on 127.0.0.1.

Independent of the reportclient client itself (tests arrange state with
:class:`PlacementAdmin`, never with the code under test). Needs the ``placement`` extra
(``openstack-placement``) to start a server; :class:`PlacementAdmin` needs only ``requests``.

- :class:`EmbeddedPlacement`: in-process, in-memory SQLite, fast; records every request.
- :class:`PlacementServer`: child process, SQLite file; can be killed and restarted.
- :class:`GaleraPlacement`: three MariaDB Galera nodes, a Placement gunicorn per node, HAProxy
  in front (single-writer or round-robin); nodes and hosts can be killed, isolated, restarted.
- ``reportclient.testing.pytest_plugin``: fixtures ``real_placement``, ``placement_admin``,
  ``compute_node`` and ``placement_process``.

The private packages are laid out by what they start, each docstring saying what it needs:
``_server`` (one Placement on SQLite, in a thread or a child), ``_cluster`` (gunicorn over
MariaDB/PostgreSQL) and ``_galera`` (Galera nodes, a host per node, HAProxy); ``_app`` (the
Placement app), ``_admin`` (:class:`PlacementAdmin`), ``_process`` (child-process helpers) and
``_started`` (the ``with`` protocol) serve all three.
"""

from reportclient.testing._admin import (
    DEFAULT_MICROVERSION,
    Inventory,
    PlacementAdmin,
    PlacementAdminError,
)
from reportclient.testing._app import ADMIN_TOKEN
from reportclient.testing._cluster import ClusterUnavailable, ConsumerLock, PlacementCluster
from reportclient.testing._galera import (
    ROUND_ROBIN,
    SINGLE_WRITER,
    GaleraCluster,
    GaleraPlacement,
    GaleraUnavailable,
    HAProxy,
    PlacementHost,
)
from reportclient.testing._process import PlacementStartError
from reportclient.testing._server import (
    EmbeddedPlacement,
    LogLine,
    PlacementServer,
    RequestRecord,
)

__all__ = [
    "ADMIN_TOKEN",
    "DEFAULT_MICROVERSION",
    "ROUND_ROBIN",
    "SINGLE_WRITER",
    "ClusterUnavailable",
    "ConsumerLock",
    "EmbeddedPlacement",
    "GaleraCluster",
    "GaleraPlacement",
    "GaleraUnavailable",
    "HAProxy",
    "Inventory",
    "LogLine",
    "PlacementAdmin",
    "PlacementAdminError",
    "PlacementCluster",
    "PlacementHost",
    "PlacementServer",
    "PlacementStartError",
    "RequestRecord",
]
