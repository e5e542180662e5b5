"""Run the real Placement in a child process on a file SQLite database.

Slower than :class:`~reportclient.testing.EmbeddedPlacement` but it can be killed (a real
crash: the kernel closes the socket, in-flight requests die) and restarted on the same port
with the same data, which an in-process server cannot simulate.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import IO

import requests

from reportclient.testing._process import PlacementStartError, child_env
from reportclient.testing._server.base import SQLitePlacement
from reportclient.testing._server.wsgi import RequestRecord

__all__ = ["PlacementServer"]

# Pause between readiness probes; proc.wait() is used for it so an early exit is seen at once.
_PROBE_INTERVAL = 0.05


def _terminate(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM ``proc``, SIGKILL it after ``timeout`` seconds, and reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


class PlacementServer(SQLitePlacement):
    """The real Placement (``noauth2``, SQLite file in a temp dir) in a separate process.

    :meth:`restart` keeps the port and database; :meth:`kill` simulates a crash;
    :meth:`stop` ends the process and removes the temp dir (database and log included).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
        python: str = sys.executable,
    ) -> None:
        """Configure (but do not start) a server; ``port=0`` lets the child pick a free port."""
        self._host = host
        self._port = port
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._python = python
        self._tmpdir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_fh: IO[bytes] | None = None
        self._max_microversion: str | None = None
        self._requests_offset = 0
        self._final_log = ""
        self._finalizer: (
            weakref.finalize[[subprocess.Popen[bytes], float], PlacementServer] | None
        ) = None

    # -- paths -------------------------------------------------------------------------------

    def _dir(self) -> Path:
        return self._started(self._tmpdir)

    @property
    def db_path(self) -> Path:
        """The SQLite database file."""
        return self._dir() / "placement.sqlite"

    @property
    def log_path(self) -> Path:
        """File receiving the child's stdout and stderr (Placement's log, tracebacks)."""
        return self._dir() / "server.log"

    @property
    def _port_file(self) -> Path:
        return self._dir() / "port"

    @property
    def _requests_file(self) -> Path:
        return self._dir() / "requests.jsonl"

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> PlacementServer:
        """Spawn the child and wait until ``GET /`` answers; return ``self``.

        Raises :class:`PlacementStartError` (with the child's log) if it exits or does not
        answer within ``startup_timeout`` seconds; nothing is left running in that case.
        """
        if self.running:
            raise RuntimeError("PlacementServer is already running")
        fresh = self._tmpdir is None
        if fresh:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="reportclient-placement-"))

        def bring_up() -> None:
            self._spawn()
            self._wait_ready()

        def undo() -> None:
            self._stop_process(graceful=False)
            if fresh:
                self._remove_tmpdir()

        return self._timed_start(bring_up, undo)

    def _spawn(self) -> None:
        self._port_file.unlink(missing_ok=True)
        env = child_env()
        cmd = [
            self._python,
            "-m",
            "reportclient.testing._server.serve",
            "--db",
            str(self.db_path),
            "--host",
            self._host,
            "--port",
            str(self._port),
            "--port-file",
            str(self._port_file),
            "--requests-file",
            str(self._requests_file),
            "--parent-pid",
            str(os.getpid()),
        ]
        # A file, not a pipe: nobody drains a pipe while tests run, and a full pipe would
        # block the server.
        self._log_fh = open(self.log_path, "ab")
        self._proc = subprocess.Popen(  # noqa: S603 - argv built from our own values
            cmd, stdin=subprocess.DEVNULL, stdout=self._log_fh, stderr=subprocess.STDOUT, env=env
        )
        # Safety net: never leave a child behind if the owner forgets stop() or is collected.
        self._finalizer = weakref.finalize(self, _terminate, self._proc, self._stop_timeout)

    def _wait_ready(self) -> None:
        proc = self._proc
        assert proc is not None
        deadline = time.monotonic() + self._startup_timeout
        port: int | None = None
        while True:
            if proc.poll() is not None:
                raise PlacementStartError(
                    f"Placement process exited with code {proc.returncode} during start-up; "
                    f"log:\n{self.read_log()}"
                )
            if port is None and self._port_file.exists():
                port = int(self._port_file.read_text(encoding="utf-8"))
                self._port = port
            if port is not None:
                try:
                    response = requests.get(f"{self.url}/", timeout=2)
                except requests.ConnectionError:
                    pass
                else:
                    if response.status_code == 200:
                        self._max_microversion = response.json()["versions"][0]["max_version"]
                        return
            if time.monotonic() >= deadline:
                raise PlacementStartError(
                    f"Placement did not answer GET / within {self._startup_timeout}s "
                    f"(port={port}); log:\n{self.read_log()}"
                )
            try:
                proc.wait(_PROBE_INTERVAL)
            except subprocess.TimeoutExpired:
                pass

    def _stop_process(self, graceful: bool) -> None:
        proc, self._proc = self._proc, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if proc is not None:
            if graceful:
                _terminate(proc, self._stop_timeout)
            else:
                proc.kill()
                proc.wait()
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def _remove_tmpdir(self) -> None:
        if self._tmpdir is not None:
            self._final_log = self.read_log()
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def stop(self) -> None:
        """Terminate the child (SIGKILL after ``stop_timeout``), reap it, delete the temp dir.

        The last log text stays readable through :meth:`read_log`. Safe to call twice.
        """
        self._stop_process(graceful=True)
        self._remove_tmpdir()

    def kill(self) -> None:
        """SIGKILL the child to simulate a crash; the database stays for :meth:`restart`."""
        proc = self._started(self._proc)
        os.kill(proc.pid, signal.SIGKILL)
        self._stop_process(graceful=False)

    def restart(self) -> PlacementServer:
        """Stop the child if it runs and start a new one on the same port and database."""
        self._stop_process(graceful=True)
        return self.start()

    # -- addresses and state -----------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while the child process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The child's process id, or None when not running."""
        return self._proc.pid if self._proc is not None else None

    @property
    def port(self) -> int:
        """The bound TCP port (kept across :meth:`restart`)."""
        return self._started(self._port)

    @property
    def max_microversion(self) -> str:
        """Highest microversion the server announced on ``GET /``."""
        return self._started(self._max_microversion)

    def read_log(self) -> str:
        """Return the child's log so far (or the final log after :meth:`stop`)."""
        if self._tmpdir is None:
            return self._final_log
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    @property
    def requests_seen(self) -> list[RequestRecord]:
        """Requests served (across restarts) since start or :meth:`clear_requests_seen`."""
        if self._tmpdir is None or not self._requests_file.exists():
            return []
        lines = self._requests_file.read_text(encoding="utf-8").splitlines()
        return [RequestRecord(**json.loads(line)) for line in lines[self._requests_offset :]]

    def clear_requests_seen(self) -> None:
        """Make :attr:`requests_seen` start empty from now on."""
        if self._tmpdir is not None and self._requests_file.exists():
            text = self._requests_file.read_text(encoding="utf-8")
            self._requests_offset = len(text.splitlines())
