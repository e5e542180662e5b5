"""Placement's production shape on Galera: three nodes, a Placement host on each, HAProxy in front.

::

    client -> HAProxy (single-writer | round-robin) -> host1 -> node1 \\
                                                     -> host2 -> node2  } Galera
                                                     -> host3 -> node3 /

Each host is a gunicorn (``workers`` sync workers, ``--preload``) whose Placement talks to its
own Galera node only, so which host HAProxy picks decides which node a transaction is
certified on. The schema is synced once, by the first host's master, before the others start
(they find it at head and the standard traits and classes present). The hosts' app factory is
:func:`reportclient.testing._cluster.workers.gunicorn_app`, the one :class:`PlacementCluster` uses.

Faults, each one call: :meth:`GaleraPlacement.kill_node` (SIGKILL a ``mariadbd``),
:meth:`~GaleraPlacement.start_node` (it rejoins by IST), :meth:`~GaleraPlacement.isolate` (the
node leaves the primary component), :meth:`~GaleraPlacement.kill_host` and
:meth:`~GaleraPlacement.start_host` (SIGKILL a whole gunicorn, restart it on the same port),
:meth:`~GaleraPlacement.failover` (disable the server HAProxy sends to, through its runtime
API). :meth:`~GaleraPlacement.use_mode` swaps HAProxy's mode keeping the database.
"""

from __future__ import annotations

import importlib.util
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reportclient.testing import _app
from reportclient.testing._cluster.db import (
    ClusterUnavailable,
    _run,
    orphaned_allocations_sql,
    orphans_by_provider,
)
from reportclient.testing._cluster.workers import all_workers_answer, start_gunicorn
from reportclient.testing._galera.haproxy import SINGLE_WRITER, HAProxy
from reportclient.testing._galera.nodes import GaleraCluster
from reportclient.testing._process import (
    PlacementStartError,
    free_ports,
    kill_session,
)
from reportclient.testing._started import Started

__all__ = ["PLACEMENT_TABLES", "GaleraPlacement", "PlacementHost"]

#: Placement's tables whose content the nodes must agree on after a run.
PLACEMENT_TABLES = (
    "allocations",
    "consumers",
    "inventories",
    "placement_aggregates",
    "projects",
    "resource_provider_aggregates",
    "resource_provider_traits",
    "resource_providers",
    "traits",
    "users",
)


@dataclass
class PlacementHost:
    """One gunicorn serving Placement on a fixed loopback port over one Galera node."""

    name: str
    port: int
    database_url: str
    workers: int
    directory: Path
    #: Log every request with its global request id too (:func:`_app.log_requests`).
    log_requests: bool = False
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """This host's own URL, bypassing HAProxy."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 60.0) -> None:
        """Start gunicorn on :attr:`port` and wait until every worker answers."""
        if self.running:
            raise RuntimeError(f"{self.name} is already running")
        self.proc, _ = start_gunicorn(
            "127.0.0.1",
            self.port,
            workers=self.workers,
            worker_timeout=120,
            database_url=self.database_url,
            log_path=self.directory / f"{self.name}.log",
            log_evidence=True,  # what Placement did silently: judges need it
            log_requests=self.log_requests,
        )
        deadline = time.monotonic() + timeout
        while not self._ready():
            if self.proc.poll() is not None:
                raise PlacementStartError(f"{self.name} exited at start:\n{self.read_log()}")
            if time.monotonic() >= deadline:
                text = self.read_log()
                raise PlacementStartError(f"{self.name} not ready in {timeout}s:\n{text}")
            time.sleep(0.1)

    def _ready(self) -> bool:
        assert self.proc is not None
        return all_workers_answer(self.proc.pid, self.workers, self.url)

    def kill(self) -> None:
        """SIGKILL master and workers at once (a host that lost power); requests in flight die."""
        proc, self.proc = self.proc, None
        if proc is not None:
            kill_session(proc)

    def read_log(self) -> str:
        """gunicorn's and Placement's log over every start of this host."""
        try:
            return (self.directory / f"{self.name}.log").read_text(errors="replace")
        except OSError:
            return ""


class GaleraPlacement(Started):
    """Galera, a Placement host per node and HAProxy, started and stopped together.

    :param mode: HAProxy's mode, ``"single-writer"`` or ``"round-robin"``.
    :param workers: gunicorn workers per host.
    :param size: Galera nodes (and hosts).
    :param log_requests: each host also logs every request, its answer and the global request
        id it carried (:func:`~reportclient.testing._app.log_requests`): what a failure is read
        back by, at a log line per request.
    :raises ClusterUnavailable: (its subclass ``GaleraUnavailable``) when MariaDB's server, the
        Galera provider, rsync or HAProxy is missing, or without the ``cluster`` extra.
    """

    def __init__(
        self,
        mode: str = SINGLE_WRITER,
        workers: int = 2,
        size: int = 3,
        *,
        log_requests: bool = False,
    ) -> None:
        """Configure (but do not start) everything."""
        for module in ("sqlalchemy", "gunicorn", "pymysql"):
            if importlib.util.find_spec(module) is None:
                raise ClusterUnavailable(f"{module} is missing: install reportclient[cluster]")
        self.galera = GaleraCluster(size)
        self.mode = mode
        self.workers = workers
        self.log_requests = log_requests
        self.token = _app.ADMIN_TOKEN
        self.database_name = f"placement_{secrets.token_hex(4)}"
        self.hosts: list[PlacementHost] = []
        self.haproxy: HAProxy | None = None
        self._tmpdir: Path | None = None
        HAProxy([], mode, self.token)  # fail now, not after Galera started, without haproxy

    @property
    def url(self) -> str:
        """HAProxy's URL: what clients use."""
        return self._started(self.haproxy).url

    def start(self) -> GaleraPlacement:
        """Start Galera, create the database, start the hosts one by one, then HAProxy."""
        try:
            self.galera.start()
            self._tmpdir = Path(tempfile.mkdtemp(prefix="reportclient-galera-hosts-"))
            self.galera.sql(0, f"CREATE DATABASE {self.database_name} CHARACTER SET utf8mb4")
            ports = free_ports(self.galera.size)
            for node, port in zip(self.galera.nodes, ports, strict=True):
                url = self.database_url(node.index)
                host = PlacementHost(
                    f"host{node.index + 1}", port, url, self.workers, self._tmpdir,
                    self.log_requests,
                )  # fmt: skip
                self.hosts.append(host)
                host.start()  # one at a time: the first syncs the schema
            self.use_mode(self.mode)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop HAProxy, every host and every node, and remove their directories."""
        try:
            if self.haproxy is not None:
                self.haproxy.stop()
                self.haproxy = None
            for host in self.hosts:
                host.kill()
        finally:
            self.galera.stop()
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)
                self._tmpdir = None

    def use_mode(self, mode: str) -> None:
        """(Re)start HAProxy in ``mode`` over the hosts; wait until every server is UP."""
        if self.haproxy is not None:
            self.haproxy.stop()
        self.mode = mode
        servers = [(host.name, host.port) for host in self.hosts]
        self.haproxy = HAProxy(servers, mode, self.token).start()
        for host in self.hosts:
            self.haproxy.wait_state(host.name, "UP")

    def read_log(self) -> str:
        """Every host's log, then HAProxy's."""
        parts = [f"--- {h.name} ---\n{h.read_log()}" for h in self.hosts]
        if self.haproxy is not None:
            parts.append(f"--- haproxy ---\n{self.haproxy.read_log()}")
        return "\n".join(parts)

    # -- faults ----------------------------------------------------------------------------------

    def kill_node(self, index: int) -> int:
        """SIGKILL Galera node ``index``; return its pid."""
        return self.galera.kill_node(index)

    def start_node(self, index: int, *, wait: bool = True) -> None:
        """Start node ``index`` again: it rejoins by IST."""
        self.galera.start_node(index, wait=wait)

    def isolate(self, index: int) -> None:
        """Node ``index`` leaves the primary component (its host then answers 500)."""
        self.galera.isolate(index)

    def heal(self, index: int) -> None:
        """Node ``index`` rejoins the primary component; wait until Synced."""
        self.galera.heal(index)

    def kill_host(self, index: int) -> None:
        """SIGKILL Placement host ``index`` (master and workers)."""
        self.hosts[index].kill()

    def start_host(self, index: int) -> None:
        """Start Placement host ``index`` again on its port."""
        self.hosts[index].start()

    def host_index(self, name: str) -> int:
        """The index of the host HAProxy calls ``name``."""
        return next(i for i, host in enumerate(self.hosts) if host.name == name)

    def failover(self, index: int | None = None) -> int:
        """Disable a server in HAProxy (by default the one it sends to); return its index."""
        assert self.haproxy is not None
        if index is None:
            active = self.haproxy.active()
            index = 0 if active is None else self.host_index(active)
        self.haproxy.disable(self.hosts[index].name)
        return index

    def restore(self, index: int, timeout: float = 60.0) -> None:
        """Enable server ``index`` again and wait until HAProxy sees it UP."""
        assert self.haproxy is not None
        self.haproxy.enable(self.hosts[index].name)
        self.haproxy.wait_state(self.hosts[index].name, "UP", timeout)

    # -- reading back ----------------------------------------------------------------------------

    def sql(self, index: int, statement: str, **params: Any) -> list[Any]:
        """Run one statement on node ``index`` in Placement's database."""
        return _run(self.database_url(index), statement, **params)

    def database_url(self, index: int) -> str:
        """SQLAlchemy URL of Placement's database on node ``index``."""
        return f"{self.galera.nodes[index].server_url}/{self.database_name}"

    def checksums(self, index: int) -> dict[str, int]:
        """``CHECKSUM TABLE`` of every table in :data:`PLACEMENT_TABLES` on node ``index``."""
        import sqlalchemy

        from reportclient.testing._cluster.db import _engine

        engine = _engine(self.database_url(index), autocommit=True)
        statement = f"CHECKSUM TABLE {', '.join(PLACEMENT_TABLES)}"
        try:
            with engine.connect() as conn:
                rows = conn.execute(sqlalchemy.text(statement))
                return {str(name).rsplit(".", 1)[-1]: int(value or 0) for name, value in rows}
        finally:
            engine.dispose()

    def orphaned_allocations(self, index: int) -> dict[str, dict[str, int]]:
        """Allocation rows on node ``index`` without a consumer row: provider -> consumer -> used.

        Such a row counts in a provider's usage and shows in no listing
        (:func:`~reportclient.testing._cluster.db.orphaned_allocations_sql`). Read causally.
        """
        statement = orphaned_allocations_sql(self.database_name)
        return orphans_by_provider(self.galera.causal_query(index, statement))

    def last_committed(self) -> list[int]:
        """Every node's ``wsrep_last_committed`` (-1 for a node that cannot be reached)."""
        return [
            int(self.galera.status(i).get("wsrep_last_committed", -1))
            for i in range(self.galera.size)
        ]

    def wait_settled(self, timeout: float = 120.0) -> None:
        """Every node Synced at one seqno, every host running and UP in HAProxy."""
        self.galera.wait_all_synced(timeout)
        assert self.haproxy is not None
        for host in self.hosts:
            if not host.running:
                host.start()
            if self.haproxy.states().get(host.name, "").startswith("MAINT"):
                self.haproxy.enable(host.name)
            self.haproxy.wait_state(host.name, "UP", timeout)
