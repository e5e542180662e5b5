"""HAProxy on 127.0.0.1 in front of several Placement hosts, driven through its runtime API.

Two balancing modes, the two ways a Galera-backed service is put behind HAProxy:

- ``single-writer``: one active server, the others ``backup``. Kolla-Ansible fronts Galera
  so, because writes certified on one node never conflict with writes on another; a backup
  takes over only once the active server fails its health checks or is disabled.
- ``round-robin``: every server active. Writes land on every Galera node at once, and two
  transactions touching the same rows on different nodes are settled by certification at
  commit: the loser gets ``1213 Deadlock``.

The health check is a request that reaches the database (``GET /resource_classes/VCPU`` with
the noauth2 admin token): Placement's ``GET /`` answers 200 without touching it, so with that
check a host whose Galera node is dead or outside the primary component would keep getting
traffic and answer 500 to all of it. ``retry-on`` stays HAProxy's default (``conn-failure``):
a request that reached a server is never sent to another one, so a write is never replayed.
Every answer carries ``X-Served-By: <server>``, which the tests read to know which host served
a request.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from reportclient.testing._galera.nodes import GaleraUnavailable
from reportclient.testing._process import free_ports
from reportclient.testing._started import Started

__all__ = ["MODES", "ROUND_ROBIN", "SINGLE_WRITER", "HAProxy"]

SINGLE_WRITER = "single-writer"
ROUND_ROBIN = "round-robin"
MODES = (SINGLE_WRITER, ROUND_ROBIN)
_BACKEND = "placement"
#: The health check's period; two failures mark a server down, two successes up again.
CHECK_INTERVAL_MS = 300


class HAProxy(Started):
    """One HAProxy process: a frontend on a free loopback port, one backend of ``servers``.

    :param servers: ``(name, port)`` of each Placement host on 127.0.0.1, the first the active
        one in ``single-writer`` mode.
    :param mode: ``"single-writer"`` or ``"round-robin"``.
    :param token: the noauth2 token the health check sends.
    :raises GaleraUnavailable: when ``haproxy`` is not installed.
    """

    def __init__(self, servers: Sequence[tuple[str, int]], mode: str, token: str) -> None:
        """Configure (but do not start) the proxy."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
        if not Path(binary).exists():
            raise GaleraUnavailable("cannot run HAProxy: haproxy is not installed")
        self.binary = binary
        self.servers = list(servers)
        self.mode = mode
        self.token = token
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmpdir: Path | None = None

    @property
    def url(self) -> str:
        """The frontend's URL, without trailing slash."""
        return f"http://127.0.0.1:{self._started(self.port)}"

    @property
    def socket_path(self) -> Path:
        """The runtime API's UNIX socket (``level admin``)."""
        return self._started(self._tmpdir) / "admin.sock"

    def config(self) -> str:
        """The configuration file's text."""
        lines = [
            "global",
            f"    stats socket {self.socket_path} mode 600 level admin",
            "    maxconn 4096",
            "defaults",
            "    mode http",
            "    timeout connect 2s",
            "    timeout client 90s",
            "    timeout server 90s",
            "    timeout check 2s",
            "    retries 2",
            "    option redispatch",
            "frontend api",
            f"    bind 127.0.0.1:{self.port}",
            f"    default_backend {_BACKEND}",
            f"backend {_BACKEND}",
            "    balance roundrobin",
            "    option httpchk",
            "    http-check send meth GET uri /resource_classes/VCPU "
            f"hdr X-Auth-Token {self.token} hdr OpenStack-API-Version placement\\ 1.7",
            "    http-check expect status 200",
            "    http-response set-header X-Served-By %s",
            f"    default-server inter {CHECK_INTERVAL_MS} fall 2 rise 2 "
            "on-marked-down shutdown-sessions",
        ]
        for i, (name, port) in enumerate(self.servers):
            backup = " backup" if self.mode == SINGLE_WRITER and i else ""
            lines.append(f"    server {name} 127.0.0.1:{port} check{backup}")
        return "\n".join(lines) + "\n"

    def start(self) -> HAProxy:
        """Write the configuration, start HAProxy, wait until it accepts connections."""
        self._tmpdir = Path(tempfile.mkdtemp(prefix="reportclient-haproxy-"))
        (self.port,) = free_ports(1)
        config = self._tmpdir / "haproxy.cfg"
        config.write_text(self.config())
        log = open(self._tmpdir / "haproxy.log", "ab")
        try:
            self._proc = subprocess.Popen(  # noqa: S603 - argv built from our own values
                [self.binary, "-db", "-f", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        deadline = time.monotonic() + 15
        while True:
            if self._proc.poll() is not None:
                text = self.read_log()
                self.stop()
                raise RuntimeError(f"haproxy exited ({self._proc_code}) at start:\n{text}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                if self.socket_path.exists():
                    return self
            except OSError:
                pass
            if time.monotonic() >= deadline:
                text = self.read_log()
                self.stop()
                raise TimeoutError(f"haproxy did not listen within 15 s:\n{text}")
            time.sleep(0.05)

    @property
    def _proc_code(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    def stop(self) -> None:
        """Kill HAProxy and remove its directory; safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def read_log(self) -> str:
        """HAProxy's own messages (server state changes, alerts)."""
        if self._tmpdir is None:
            return ""
        try:
            return (self._tmpdir / "haproxy.log").read_text(errors="replace")
        except OSError:
            return ""

    # -- runtime API ---------------------------------------------------------------------------

    def command(self, line: str) -> str:
        """Send one runtime API command over the admin socket; return the answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(self.socket_path))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")

    def disable(self, server: str) -> None:
        """Put ``server`` in maintenance: no new request goes to it (a forced failover)."""
        self.command(f"disable server {_BACKEND}/{server}")

    def enable(self, server: str) -> None:
        """Take ``server`` out of maintenance; it serves again once its checks pass."""
        self.command(f"enable server {_BACKEND}/{server}")

    def states(self) -> dict[str, str]:
        """Each server's operational state as the runtime API shows it (``UP``, ``DOWN``...)."""
        found = {}
        for line in self.command("show stat").splitlines():
            cells = line.split(",")
            if len(cells) > 17 and cells[0] == _BACKEND and cells[1] not in ("BACKEND",):
                found[cells[1]] = cells[17]
        return found

    def wait_state(self, server: str, state: str, timeout: float = 30.0) -> None:
        """Return once ``server`` shows exactly ``state`` (``"UP"``, ``"DOWN"``, ``"MAINT"``...)."""
        deadline = time.monotonic() + timeout
        while self.states().get(server) != state:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{server} not {state} within {timeout}s: {self.states()}")
            time.sleep(0.05)

    def active(self) -> str | None:
        """The server new requests go to in ``single-writer`` mode (None if none is UP)."""
        states = self.states()
        for name, _ in self.servers:
            if states.get(name) == "UP":
                return name
        return None
