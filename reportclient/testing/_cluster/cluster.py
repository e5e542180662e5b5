"""Run the real Placement the way production does: gunicorn workers over MariaDB or PostgreSQL.

SQLite allows one writer, so :class:`PlacementServer` and :class:`EmbeddedPlacement` serve one
request at a time; races between *server* processes (a worker dying mid-write, two workers
updating one consumer, a write parked on a row lock) need a real database and several workers.

How gunicorn is started and its app preloaded (once, before any worker is forked, so that
Placement's first-start inserts do not race) lives in ``workers``, which Galera's hosts share;
this module adds the database it runs on and the faults a test injects: a worker killed
(:meth:`PlacementCluster.kill_worker`), a consumer row held locked.

Each cluster creates its own database (``rc_<random>``) and drops it on stop, also when start-up
or the ``with`` body fails; a finalizer drops it if the owner forgets to stop.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from reportclient.testing import _app
from reportclient.testing._cluster.db import (
    _DIALECTS,
    _PROBE_INTERVAL,
    ClusterUnavailable,
    ConsumerLock,
    _drop_database,
    _engine,
    _rows,
    _run,
    orphaned_allocations_sql,
    orphans_by_provider,
)
from reportclient.testing._cluster.workers import (
    all_workers_answer,
    live_children,
    start_gunicorn,
)
from reportclient.testing._process import PlacementStartError, kill_session
from reportclient.testing._started import Started

__all__ = ["REQUIRE_DATABASES_ENV", "ClusterUnavailable", "ConsumerLock", "PlacementCluster"]

#: Set to ``1`` (CI does) to make the cluster fixtures fail instead of skip without a database.
REQUIRE_DATABASES_ENV = "REPORTCLIENT_REQUIRE_DATABASES"


def _finalize(proc: subprocess.Popen[bytes], database: str, url: str, name: str) -> None:
    kill_session(proc)
    _drop_database(database, url, name)


class PlacementCluster(Started):
    """The real Placement behind ``workers`` gunicorn sync workers on a fresh database.

    :param database: ``"mariadb"`` (PyMySQL) or ``"postgresql"`` (psycopg2).
    :param workers: gunicorn worker processes.
    :param host: address to listen on; ``port=0`` picks a free port.
    :raises ClusterUnavailable: when the ``cluster`` extra is missing, or from :meth:`start`
        when the database server cannot be reached (the message names the environment variable
        that points at another server).
    """

    def __init__(
        self,
        database: str = "mariadb",
        workers: int = 4,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        startup_timeout: float = 60.0,
        worker_timeout: int = 120,
    ) -> None:
        """Configure (but do not start) a cluster."""
        if database not in _DIALECTS:
            raise ValueError(f"database must be one of {sorted(_DIALECTS)}, not {database!r}")
        dialect = _DIALECTS[database]
        for module in ("sqlalchemy", "gunicorn"):
            if importlib.util.find_spec(module) is None:
                raise ClusterUnavailable(f"{module} is missing: install reportclient[cluster]")
        from sqlalchemy.engine import make_url

        self.database = database
        self.workers = workers
        self.host = host
        self.token = _app.ADMIN_TOKEN
        #: Server URL without a database name: ``$REPORTCLIENT_MARIADB_URL`` and the like.
        self.server_url = os.environ.get(dialect.env) or dialect.default_url
        self.database_name = f"rc_{secrets.token_hex(6)}"
        base = make_url(self.server_url)
        self._admin_url = base.set(database=dialect.admin_database).render_as_string(False)
        #: SQLAlchemy URL of this cluster's own database, as Placement is configured with it.
        self.database_url = base.set(database=self.database_name).render_as_string(False)
        self._port = port
        self._startup_timeout = startup_timeout
        self._worker_timeout = worker_timeout
        self._created = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmpdir: Path | None = None
        self._final_log = ""
        self._finalizer: weakref.finalize[..., PlacementCluster] | None = None

    @property
    def url(self) -> str:
        """Endpoint URL without trailing slash."""
        return f"http://{self.host}:{self._started(self._port)}"

    @property
    def master_pid(self) -> int:
        """The gunicorn master's process id."""
        return self._started(self._proc).pid

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> PlacementCluster:
        """Create the database, start gunicorn and wait for every worker; return ``self``."""
        if self._proc is not None:
            raise RuntimeError("PlacementCluster is already running")
        self._create_database()
        try:
            self._spawn()
            self._wait(self._ready, self._startup_timeout, "Placement to answer on all workers")
        except TimeoutError as exc:
            self.stop()
            raise PlacementStartError(f"{exc}; log:\n{self.read_log()}") from exc
        except BaseException:
            self.stop()
            raise
        return self

    def _create_database(self) -> None:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import DBAPIError

        dialect = _DIALECTS[self.database]
        try:
            _run(self._admin_url, dialect.create.format(self.database_name))
        except ImportError as exc:  # the DB-API driver (PyMySQL, psycopg2)
            raise ClusterUnavailable(f"{exc}: install reportclient[cluster]") from exc
        except DBAPIError as exc:
            raise ClusterUnavailable(
                f"no {self.database} server to create a database on at "
                f"{make_url(self.server_url).render_as_string()}: {exc.orig}. Point {dialect.env} "
                f"at a server URL without a database name (default {dialect.default_url})."
            ) from exc
        self._created = True

    def _spawn(self) -> None:
        self._tmpdir = Path(tempfile.mkdtemp(prefix="reportclient-cluster-"))
        self._proc, self._port = start_gunicorn(
            self.host,
            self._port,
            workers=self.workers,
            worker_timeout=self._worker_timeout,
            database_url=self.database_url,
            log_path=self._tmpdir / "gunicorn.log",
        )
        self._finalizer = weakref.finalize(
            self, _finalize, self._proc, self.database, self._admin_url, self.database_name
        )

    def _ready(self) -> bool:
        return all_workers_answer(self.master_pid, self.workers, self.url)

    def _wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``done`` until true; ``proc.wait`` is the pause, so a dead master shows at once."""
        deadline = time.monotonic() + timeout
        while not done():
            proc = self._proc
            if proc is None or proc.poll() is not None:
                code = proc.returncode if proc is not None else None
                raise PlacementStartError(
                    f"gunicorn master exited ({code}) waiting for {what}; log:\n{self.read_log()}"
                )
            if time.monotonic() >= deadline:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
            try:
                proc.wait(_PROBE_INTERVAL)
            except subprocess.TimeoutExpired:
                pass

    def stop(self) -> None:
        """Kill gunicorn (master and workers) and drop the database; safe to call twice."""
        proc, self._proc = self._proc, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        try:
            if proc is not None:
                kill_session(proc)
        finally:
            if self._created:
                self._created = False
                _drop_database(self.database, self._admin_url, self.database_name)
            if self._tmpdir is not None:
                self._final_log = self.read_log()
                shutil.rmtree(self._tmpdir, ignore_errors=True)
                self._tmpdir = None

    def read_log(self) -> str:
        """gunicorn's log (master and workers) so far, or the final one after :meth:`stop`."""
        if self._tmpdir is None:
            return self._final_log
        try:
            return (self._tmpdir / "gunicorn.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""

    # -- workers -----------------------------------------------------------------------------

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (the master's children), sorted."""
        return live_children(self.master_pid)

    def kill_worker(self, pid: int | None = None) -> int:
        """SIGKILL one worker (the first one by default) and return its pid once it is dead.

        gunicorn's master then forks a replacement; see :meth:`wait_for_workers`.
        """
        pids = self.worker_pids()
        victim = pids[0] if pid is None else pid
        if victim not in pids:
            raise ValueError(f"{victim} is not a worker of this cluster (workers: {pids})")
        os.kill(victim, signal.SIGKILL)
        self._wait(lambda: victim not in self.worker_pids(), 10.0, f"worker {victim} to die")
        return victim

    def wait_for_workers(self, n: int | None = None, timeout: float = 30.0) -> list[int]:
        """Wait until exactly ``n`` (default: ``workers``) workers live; return their pids."""
        want = self.workers if n is None else n
        self._wait(lambda: len(self.worker_pids()) == want, timeout, f"{want} workers")
        return self.worker_pids()

    # -- database ----------------------------------------------------------------------------

    def consumer_generation(self, consumer_uuid: str) -> int | None:
        """The consumer's committed generation read from the database, None if it has no row."""
        sql = "SELECT generation FROM consumers WHERE uuid = :u"
        rows = _run(self.database_url, sql, u=consumer_uuid)
        return int(rows[0]) if rows else None

    def orphaned_allocations(self) -> dict[str, dict[str, int]]:
        """Allocation rows without a consumer row: provider -> consumer -> used.

        Placement 16.0.0 deletes a consumer it auto-created when the write that created it
        fails, whoever wrote to that consumer meanwhile (``doc/source/galera.rst``,
        "Placement-side findings"), leaving its allocation rows behind.
        """
        return orphans_by_provider(_rows(self.database_url, orphaned_allocations_sql()))

    def wait_for_consumer_generation(
        self, consumer_uuid: str, generation: int, timeout: float = 10.0
    ) -> None:
        """Return once the consumer's generation is ``generation``; else raise ``TimeoutError``.

        For the write released by :meth:`hold_consumer_lock`: its client already gave up, so
        only the database can tell when it has landed.
        """
        what = f"consumer {consumer_uuid} to reach generation {generation}"
        self._wait(lambda: self.consumer_generation(consumer_uuid) == generation, timeout, what)

    @contextmanager
    def hold_consumer_lock(self, consumer_uuid: str) -> Iterator[ConsumerLock]:
        """Row-lock the consumer (``SELECT ... FOR UPDATE``) until the block exits (rollback).

        A concurrent allocation write for the consumer reads the row without locking, writes its
        allocation rows, then blocks in ``Consumer.increment_generation`` (``UPDATE consumers
        SET generation = g + 1 WHERE id = ... AND generation = g``) near the end of its
        transaction; once the lock is released it proceeds and commits. The consumer must
        exist. MariaDB fails the waiting write after ``innodb_lock_wait_timeout`` (50 s by
        default), gunicorn kills its worker after ``worker_timeout``.

        :raises LookupError: the consumer has no row (no allocations) to lock.
        """
        import sqlalchemy

        engine = _engine(self.database_url)
        try:
            with engine.connect() as conn, conn.begin() as txn:
                generation = conn.execute(
                    sqlalchemy.text("SELECT generation FROM consumers WHERE uuid = :u FOR UPDATE"),
                    {"u": consumer_uuid},
                ).scalar()
                if generation is None:
                    raise LookupError(f"consumer {consumer_uuid} does not exist")
                session = conn.execute(sqlalchemy.text(_DIALECTS[self.database].session_id))
                try:
                    yield ConsumerLock(
                        consumer_uuid,
                        int(generation),
                        self.database,
                        self._admin_url,
                        int(session.scalar_one()),
                    )
                finally:
                    txn.rollback()
        finally:
            engine.dispose()
