"""Placement as production runs it: gunicorn sync workers over MariaDB or PostgreSQL.

:class:`PlacementCluster` (``cluster``) creates a fresh database (``rc_<random>``) on a server
it finds, starts gunicorn on it and drops the database on stop. ``workers`` starts that
gunicorn (``--preload``: Placement loaded once, then forked) and tells when every worker
answers; ``_galera``'s hosts use it too. ``db`` holds what differs between the two databases,
unpooled statements and the row locks tests hold.

Needs the ``placement`` and ``cluster`` extras (gunicorn, PyMySQL, psycopg2-binary) and a
database server it may create databases on: MariaDB (OS package ``mariadb-server``) at
``$REPORTCLIENT_MARIADB_URL``, default ``mysql+pymysql://root:@127.0.0.1:3306``, or PostgreSQL
(``postgresql``) at ``$REPORTCLIENT_POSTGRESQL_URL``, default
``postgresql+psycopg2://postgres@127.0.0.1:5432``. Without them it raises
:class:`ClusterUnavailable`, which the pytest fixtures turn into a skip (a failure when
``$REPORTCLIENT_REQUIRE_DATABASES`` is ``1``).
"""

from reportclient.testing._cluster.cluster import REQUIRE_DATABASES_ENV, PlacementCluster
from reportclient.testing._cluster.db import ClusterUnavailable, ConsumerLock

__all__ = ["REQUIRE_DATABASES_ENV", "ClusterUnavailable", "ConsumerLock", "PlacementCluster"]
