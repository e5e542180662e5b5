"""Placement on three MariaDB Galera nodes, a gunicorn host per node, HAProxy in front.

- :class:`GaleraCluster` (``nodes``): the ``mariadbd`` nodes on loopback ports, each killed,
  isolated from the group and rejoined by one call.
- :class:`HAProxy` (``haproxy``): one proxy over the hosts, :data:`SINGLE_WRITER` or
  :data:`ROUND_ROBIN`, driven through its runtime API.
- :class:`GaleraPlacement` (``placement``): both, with a :class:`PlacementHost` per node (the
  ``_cluster`` gunicorn app on that node's database), started and stopped together.

Needs the ``placement`` and ``cluster`` extras and, from the OS, ``mariadb-server``
(``mariadbd``, ``mariadb-install-db``), ``galera-4`` (``libgalera_smm.so``), ``rsync`` (state
transfer) and ``haproxy``; no database server of the machine's own, since it starts its nodes
itself. Without them it raises :class:`GaleraUnavailable`, a
:class:`~reportclient.testing.ClusterUnavailable`.
"""

from reportclient.testing._galera.haproxy import ROUND_ROBIN, SINGLE_WRITER, HAProxy
from reportclient.testing._galera.nodes import GaleraCluster, GaleraNode, GaleraUnavailable
from reportclient.testing._galera.placement import GaleraPlacement, PlacementHost

__all__ = [
    "ROUND_ROBIN",
    "SINGLE_WRITER",
    "GaleraCluster",
    "GaleraNode",
    "GaleraPlacement",
    "GaleraUnavailable",
    "HAProxy",
    "PlacementHost",
]
