"""Three MariaDB Galera nodes on 127.0.0.1, started, killed and rejoined by the test itself.

Each node is a separate ``mariadbd`` with its own datadir, config file and four loopback ports
(SQL, group communication, IST, SST), so it never touches the machine's own MariaDB service.
The first node is bootstrapped with ``--wsrep-new-cluster``; the others join it by a full state
transfer (``rsync``: it needs nothing but ``rsync`` and works offline). A node SIGKILLed and
started again rejoins by IST from a donor's gcache, as a crashed production node does.

Why the settings are what they are:

- ``gmcast.isolate=1`` (:meth:`GaleraCluster.isolate`) is Galera's own switch for cutting a
  node off the group: it is how "a node left the primary component" is produced without
  iptables or root. The short ``evs.*`` timeouts make the others notice in about a second.
- When the test runs as root, the nodes run as ``mysql`` (``mariadbd`` refuses root, and
  rsync's daemon run by root would drop to ``nobody`` and fail to write the datadir); the
  temporary directory is handed to that user.
- ``innodb_flush_log_at_trx_commit=0`` and small buffers: durability across a host crash is
  not under test (a SIGKILLed ``mariadbd`` loses nothing the OS holds), and three nodes must
  fit on a 2-core CI machine beside Placement.

Every process is started in its own session and killed with SIGKILL on :meth:`stop`, also when
start-up fails; a finalizer does it if the owner forgets, and the temporary directory goes with
it.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reportclient.testing._cluster.db import ClusterUnavailable, _run
from reportclient.testing._process import free_ports, kill_session
from reportclient.testing._started import Started

__all__ = ["GaleraCluster", "GaleraNode", "GaleraUnavailable"]

_PROVIDERS = ("/usr/lib/galera/libgalera_smm.so", "/usr/lib/libgalera_smm.so")
_POLL = 0.2
#: The node names the others by after this long without a word (and a partition is noticed).
_EVS = (
    "evs.keepalive_period=PT0.3S;evs.suspect_timeout=PT1S;evs.inactive_timeout=PT2S;"
    "evs.inactive_check_period=PT0.3S;evs.install_timeout=PT2S"
)


class GaleraUnavailable(ClusterUnavailable):
    """``mariadbd``, the Galera provider or ``rsync`` is missing: nothing to run a cluster on."""


@dataclass
class GaleraNode:
    """One node: its ports, its directory, its process (None while down)."""

    index: int
    port: int
    gcomm_port: int
    ist_port: int
    sst_port: int
    directory: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """``node1``, ``node2``...: Galera's ``wsrep_node_name``."""
        return f"node{self.index + 1}"

    @property
    def server_url(self) -> str:
        """SQLAlchemy URL of this node without a database name."""
        return f"mysql+pymysql://root:@127.0.0.1:{self.port}"

    @property
    def datadir(self) -> Path:
        return self.directory / "data"

    @property
    def config(self) -> Path:
        return self.directory / "my.cnf"

    @property
    def log(self) -> Path:
        return self.directory / "error.log"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def _finalize(nodes: list[GaleraNode], tmpdir: Path) -> None:
    for node in nodes:
        kill_session(node.proc)
    shutil.rmtree(tmpdir, ignore_errors=True)


class GaleraCluster(Started):
    """Three (``size``) Galera nodes on loopback ports, each its own ``mariadbd``.

    :param size: nodes; three keep quorum when one is killed or isolated.
    :param startup_timeout: seconds each node may take to reach ``Synced``.
    :raises GaleraUnavailable: when ``mariadbd``, the Galera provider or ``rsync`` is missing.
    """

    def __init__(self, size: int = 3, *, startup_timeout: float = 120.0) -> None:
        """Configure (but do not start) a cluster."""
        self.mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        self.install_db = shutil.which("mariadb-install-db") or "/usr/bin/mariadb-install-db"
        self.provider = next((p for p in _PROVIDERS if os.path.exists(p)), "")
        missing = [
            what
            for what, ok in (
                ("mariadbd (mariadb-server)", os.access(self.mariadbd, os.X_OK)),
                ("mariadb-install-db (mariadb-server)", os.access(self.install_db, os.X_OK)),
                ("libgalera_smm.so (galera-4)", bool(self.provider)),
                ("rsync", shutil.which("rsync") is not None),
            )
            if not ok
        ]
        if missing:
            raise GaleraUnavailable(f"cannot run a Galera cluster: missing {', '.join(missing)}")
        self.size = size
        self.name = f"rc_{secrets.token_hex(4)}"
        self._startup_timeout = startup_timeout
        self._user = "mysql" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        self.nodes: list[GaleraNode] = []
        self._tmpdir: Path | None = None
        self._finalizer: weakref.finalize[..., GaleraCluster] | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> GaleraCluster:
        """Bootstrap node 1, join the others by SST, wait until all are ``Synced``."""
        if self._tmpdir is not None:
            raise RuntimeError("GaleraCluster is already running")
        self._tmpdir = Path(tempfile.mkdtemp(prefix="reportclient-galera-"))
        self._finalizer = weakref.finalize(self, _finalize, self.nodes, self._tmpdir)
        try:
            ports = free_ports(4 * self.size)
            for i in range(self.size):
                directory = self._tmpdir / f"node{i + 1}"
                port, gcomm, ist, sst = ports[4 * i : 4 * i + 4]
                node = GaleraNode(i, port, gcomm, ist, sst, directory)
                (node.datadir).mkdir(parents=True)
                self.nodes.append(node)
            for node in self.nodes:
                self._write_config(node)
            self._chown()
            self._install(self.nodes[0])
            self.start_node(0, bootstrap=True)
            for index in range(1, self.size):
                self.start_node(index, wait=False)
            for index in range(1, self.size):
                self.wait_synced(index)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGKILL every node and remove every datadir; safe to call twice."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        for node in self.nodes:
            node.proc = None
        self._tmpdir = None

    def _write_config(self, node: GaleraNode) -> None:
        members = ",".join(f"127.0.0.1:{n.gcomm_port}" for n in self.nodes)
        options = (
            f"base_host=127.0.0.1;base_port={node.gcomm_port};"
            f"ist.recv_addr=127.0.0.1:{node.ist_port};gcache.size=64M;{_EVS}"
        )
        node.config.write_text(
            f"""[mysqld]
datadir={node.datadir}
socket={node.directory}/mysqld.sock
pid-file={node.directory}/mysqld.pid
log-error={node.log}
port={node.port}
bind-address=127.0.0.1
user={self._user}
skip-name-resolve=0
character-set-server=utf8mb4
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
innodb_buffer_pool_size=48M
innodb_log_file_size=32M
innodb_flush_log_at_trx_commit=0
performance_schema=OFF
max_connections=400
wsrep_on=ON
wsrep_provider={self.provider}
wsrep_cluster_name={self.name}
wsrep_cluster_address=gcomm://{members}
wsrep_node_address=127.0.0.1:{node.gcomm_port}
wsrep_node_name={node.name}
wsrep_provider_options="{options}"
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:{node.sst_port}
wsrep_slave_threads=2
"""
        )

    def _install(self, node: GaleraNode) -> None:
        cmd = [
            self.install_db, "--no-defaults", f"--datadir={node.datadir}",
            "--auth-root-authentication-method=normal", f"--user={self._user}",
            "--skip-test-db",
        ]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, check=False)  # noqa: S603
        if done.returncode:
            out = (done.stdout + done.stderr).decode(errors="replace")
            raise GaleraUnavailable(f"mariadb-install-db failed ({done.returncode}):\n{out}")

    def _chown(self) -> None:
        if os.geteuid() != 0 or self._tmpdir is None:
            return
        user = pwd.getpwnam(self._user)
        for root, dirs, files in os.walk(self._tmpdir):
            for name in [root, *(os.path.join(root, d) for d in dirs)]:
                os.chown(name, user.pw_uid, user.pw_gid)
            for name in files:
                os.chown(os.path.join(root, name), user.pw_uid, user.pw_gid)

    # -- nodes -----------------------------------------------------------------------------------

    def start_node(self, index: int, *, bootstrap: bool = False, wait: bool = True) -> None:
        """Start node ``index`` (it joins the others, by IST when it was a member before).

        :param bootstrap: start a new cluster from this node (``--wsrep-new-cluster``).
        :param wait: return only once the node is ``Synced``.
        """
        node = self.nodes[index]
        if node.running:
            raise RuntimeError(f"{node.name} is already running")
        cmd = [self.mariadbd, f"--defaults-file={node.config}"]
        if bootstrap:
            cmd.append("--wsrep-new-cluster")
        node.proc = subprocess.Popen(  # noqa: S603 - argv built from our own values
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        if wait:
            self.wait_synced(index)

    def kill_node(self, index: int) -> int:
        """SIGKILL node ``index`` (no shutdown, as a crashed host); return its pid."""
        node = self.nodes[index]
        if node.proc is None:
            raise RuntimeError(f"{node.name} is not running")
        pid = node.proc.pid
        kill_session(node.proc)
        node.proc = None
        return pid

    def restart_node(self, index: int, *, wait: bool = True) -> None:
        """Kill node ``index`` if it runs, then start it again: it rejoins by IST."""
        if self.nodes[index].proc is not None:
            self.kill_node(index)
        self.start_node(index, wait=wait)

    def isolate(self, index: int, timeout: float = 30.0) -> None:
        """Cut node ``index`` off the group (``gmcast.isolate=1``) until it is non-Primary.

        The others keep quorum and stay Primary; the node answers every query on a table with
        ``1047 WSREP has not yet prepared node for application use``.
        """
        self._admin(index, "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'")
        self._wait(lambda: self.status(index).get("wsrep_cluster_status") != "Primary",
                   timeout, f"{self.nodes[index].name} to leave the primary component")  # fmt: skip

    def heal(self, index: int, timeout: float = 60.0) -> None:
        """Undo :meth:`isolate` and wait until the node is ``Synced`` again."""
        self._admin(index, "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'")
        self.wait_synced(index, timeout)

    # -- state -----------------------------------------------------------------------------------

    def sql(
        self, index: int, statement: str, database: str | None = None, **params: Any
    ) -> list[Any]:
        """Run one statement on node ``index`` (autocommit); the first column of every row."""
        url = self.nodes[index].server_url + (f"/{database}" if database else "")
        return _run(url, statement, **params)

    def status(self, index: int) -> dict[str, str]:
        """The node's ``wsrep_%`` status variables; ``{}`` when it cannot be reached."""
        if not self.nodes[index].running:
            return {}
        try:
            rows = self._admin(index, "SHOW GLOBAL STATUS LIKE 'wsrep_%'")
        except OSError:
            return {}
        return {str(name): str(value) for name, value in rows}

    def causal_query(self, index: int, statement: str) -> list[tuple[Any, ...]]:
        """Rows of one read on node ``index`` that sees every write the cluster committed.

        Galera applies other nodes' write sets asynchronously, so a plain read on a node may
        miss a transaction that is already committed elsewhere. ``wsrep_sync_wait=1`` makes
        the node wait until it has applied everything ordered before the read.

        :raises OSError: the node cannot be reached or refused the statement.
        """
        return self._admin(index, "SET SESSION wsrep_sync_wait = 1", statement)

    def _admin(self, index: int, *statements: str) -> list[tuple[Any, ...]]:
        """Statements over one bare PyMySQL connection; the last one's rows.

        Not through SQLAlchemy: its first connect runs a ROLLBACK, which a node outside the
        primary component refuses (1047), so :meth:`heal` could never reach the node it heals.

        :raises OSError: the node cannot be reached or refused the statement.
        """
        import pymysql  # type: ignore[import-untyped]  # no stubs; the cluster extra has it

        try:
            conn = pymysql.connect(
                host="127.0.0.1", port=self.nodes[index].port, user="root", password="",
                connect_timeout=5, read_timeout=30, autocommit=True,
            )  # fmt: skip
        except pymysql.err.MySQLError as exc:
            raise OSError(f"{self.nodes[index].name}: {exc}") from exc
        try:
            with conn.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
                return list(cursor.fetchall())
        except pymysql.err.MySQLError as exc:
            raise OSError(f"{self.nodes[index].name}: {exc}") from exc
        finally:
            conn.close()

    def synced(self, index: int) -> bool:
        """Whether node ``index`` is a ``Synced`` member of the primary component."""
        status = self.status(index)
        return (
            status.get("wsrep_local_state_comment") == "Synced"
            and status.get("wsrep_cluster_status") == "Primary"
            and status.get("wsrep_ready") == "ON"
        )

    def wait_synced(self, index: int, timeout: float | None = None) -> None:
        """Return once node ``index`` is Synced; raise TimeoutError (with its log) if not."""
        node = self.nodes[index]
        self._wait(lambda: self.synced(index), timeout or self._startup_timeout,
                   f"{node.name} to be Synced")  # fmt: skip

    def wait_all_synced(self, timeout: float = 120.0) -> None:
        """Every node Synced, in a cluster of ``size``, all at one last committed seqno."""

        def done() -> bool:
            states = [self.status(i) for i in range(self.size)]
            return (
                all(
                    s.get("wsrep_local_state_comment") == "Synced"
                    and s.get("wsrep_cluster_size") == str(self.size)
                    for s in states
                )
                and len({s.get("wsrep_last_committed") for s in states}) == 1
            )

        self._wait(done, timeout, "every node Synced at one seqno")

    def read_log(self, index: int) -> str:
        """The node's error log (Galera's own messages included)."""
        try:
            return self.nodes[index].log.read_text(errors="replace")
        except OSError:
            return ""

    def _wait(self, done: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() >= deadline:
                tails = "\n".join(
                    f"--- {n.name} ---\n{self.read_log(n.index)[-3000:]}" for n in self.nodes
                )
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}\n{tails}")
            time.sleep(_POLL)
