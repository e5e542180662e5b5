"""The database side of :class:`PlacementCluster`: dialects, unpooled statements, row locks.

Kept apart from the process side (gunicorn, workers) in ``cluster``; both engines'
differences live in one :class:`_Dialect` table so the cluster code has no branch per database.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["ClusterUnavailable", "ConsumerLock"]

_PROBE_INTERVAL = 0.05
_CONNECT_TIMEOUT = 5


@dataclass(frozen=True)
class _Dialect:
    """Where a database server is found and the SQL that differs between the two engines."""

    env: str
    default_url: str
    admin_database: str | None
    create: str
    # Sessions still connected (a SIGKILLed worker's, a forgotten lock) would block or fail the
    # DROP, so they are ended first.
    end_sessions: str
    session_id: str
    # Sessions waiting for a lock held by session :h.
    blocked_by: str


_DIALECTS = {
    "mariadb": _Dialect(
        env="REPORTCLIENT_MARIADB_URL",
        default_url="mysql+pymysql://root:@127.0.0.1:3306",
        admin_database=None,
        create="CREATE DATABASE {} CHARACTER SET utf8mb4",
        end_sessions="SELECT CONCAT('KILL ', id) FROM information_schema.PROCESSLIST WHERE db = :n",
        session_id="SELECT CONNECTION_ID()",
        blocked_by="SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS w "
        "JOIN information_schema.INNODB_TRX t ON t.trx_id = w.blocking_trx_id "
        "WHERE t.trx_mysql_thread_id = :h",
    ),
    "postgresql": _Dialect(
        env="REPORTCLIENT_POSTGRESQL_URL",
        default_url="postgresql+psycopg2://postgres@127.0.0.1:5432",
        admin_database="postgres",
        create="CREATE DATABASE {}",
        end_sessions="SELECT 'SELECT pg_terminate_backend(' || pid || ')' FROM pg_stat_activity "
        "WHERE datname = :n AND pid <> pg_backend_pid()",
        session_id="SELECT pg_backend_pid()",
        blocked_by="SELECT COUNT(*) FROM pg_stat_activity WHERE :h = ANY(pg_blocking_pids(pid))",
    ),
}


def orphaned_allocations_sql(schema: str = "") -> str:
    """The rows of ``allocations`` without a consumer row, summed per provider and consumer.

    Placement keeps no foreign key from ``allocations`` to ``consumers``: its usages sum
    ``allocations`` alone while every allocation listing joins ``consumers``, so such a row
    counts in a provider's usage and shows in no listing. ``schema`` qualifies the tables
    (our own generated database name, never input) for a connection to another database.
    """
    q = f"{schema}." if schema else ""
    return (
        f"SELECT rp.uuid, a.consumer_id, SUM(a.used) FROM {q}allocations a "  # noqa: S608
        f"JOIN {q}resource_providers rp ON rp.id = a.resource_provider_id "
        f"LEFT JOIN {q}consumers c ON c.uuid = a.consumer_id WHERE c.id IS NULL "
        "GROUP BY rp.uuid, a.consumer_id"
    )


def orphans_by_provider(rows: Iterable[Sequence[Any]]) -> dict[str, dict[str, int]]:
    """:func:`orphaned_allocations_sql`'s rows as provider -> consumer -> used."""
    found: dict[str, dict[str, int]] = {}
    for rp, consumer, used in rows:
        found.setdefault(str(rp), {})[str(consumer)] = int(used)
    return found


class ClusterUnavailable(RuntimeError):
    """No database server (or no ``cluster`` extra) to run a :class:`PlacementCluster` on."""


def _engine(url: str, *, autocommit: bool = False) -> Engine:
    """An unpooled engine: every connection is closed for real when the caller closes it."""
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    level = "AUTOCOMMIT" if autocommit else "READ COMMITTED"
    timeout = {"connect_timeout": _CONNECT_TIMEOUT}
    return sqlalchemy.create_engine(
        url, poolclass=NullPool, isolation_level=level, connect_args=timeout
    )


def _rows(url: str, sql: str, **params: Any) -> list[Sequence[Any]]:
    """Run one statement in autocommit mode and return every row it returns."""
    import sqlalchemy

    engine = _engine(url, autocommit=True)
    try:
        with engine.connect() as conn:
            result = conn.execute(sqlalchemy.text(sql), params)
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def _run(url: str, sql: str, **params: Any) -> list[Any]:
    """Run one statement in autocommit mode and return the first column of every row."""
    return [row[0] for row in _rows(url, sql, **params)]


def _drop_database(database: str, url: str, name: str) -> None:
    """End the sessions still using ``name``, then drop it (no error if it is gone)."""
    from sqlalchemy.exc import DBAPIError

    for statement in _run(url, _DIALECTS[database].end_sessions, n=name):
        try:
            _run(url, statement)
        except DBAPIError:
            pass  # the session ended on its own meanwhile
    _run(url, f"DROP DATABASE IF EXISTS {name}")


@dataclass(frozen=True)
class ConsumerLock:
    """A held ``SELECT ... FOR UPDATE`` on one row of Placement's ``consumers`` table."""

    consumer_uuid: str
    #: The consumer's generation when the lock was taken.
    generation: int
    _database: str
    _server_url: str
    _session: int

    def blocked_sessions(self) -> int:
        """How many database sessions are waiting for this lock right now."""
        sql = _DIALECTS[self._database].blocked_by
        return int(_run(self._server_url, sql, h=self._session)[0])

    def wait_for_blocked(self, count: int = 1, timeout: float = 10.0) -> None:
        """Return once ``count`` sessions wait for this lock; raise ``TimeoutError`` if not."""
        deadline = time.monotonic() + timeout
        while self.blocked_sessions() < count:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no write blocked on consumer {self.consumer_uuid}")
            time.sleep(_PROBE_INTERVAL)
