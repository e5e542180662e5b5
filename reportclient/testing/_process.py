"""What every harness that starts Placement (or a database, or a proxy) in a child shares.

``_server``'s child, ``_cluster``'s gunicorn and ``_galera``'s nodes, hosts and proxy are all
child processes of the test: each needs to import this package from a source checkout, to be
killed whole, to die with the test run and to be given free loopback ports. One copy each, so
a fix to how the harness cleans up reaches every server.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = [
    "IMPORT_ROOT",
    "PlacementStartError",
    "child_env",
    "free_ports",
    "kill_session",
    "watch_parent",
]

# Directory that contains the ``reportclient`` package, so a child can import it even when
# the package is not installed (e.g. tests run from a source checkout).
IMPORT_ROOT = str(Path(__file__).resolve().parents[2])


class PlacementStartError(RuntimeError):
    """The Placement child process exited or did not answer ``GET /`` in time."""


def child_env() -> dict[str, str]:
    """A copy of this process's environment in which a child imports ``reportclient`` from here."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (IMPORT_ROOT, env.get("PYTHONPATH")) if p)
    return env


def kill_session(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGKILL ``proc``'s whole session (started with ``start_new_session``) and reap ``proc``.

    The session, not the process: gunicorn's workers and one being forked, or the SST script a
    ``mariadbd`` runs, die with it. No graceful stop: a sync worker that got SIGTERM spends
    about a second tearing down its interpreter, so a graceful stop of four workers took 4 s,
    and nothing here needs it.
    """
    if proc is None:
        return
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def watch_parent(parent_pid: int) -> None:
    """SIGTERM this process once ``parent_pid`` is gone, so a crashed test run leaves no server.

    Run it in a daemon thread of the child.
    """
    while os.getppid() == parent_pid:
        time.sleep(0.5)  # a poll interval for a daemon watchdog, not a wait for readiness
    os.kill(os.getpid(), signal.SIGTERM)


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (held together while picked, then released)."""
    socks = [socket.create_server(("127.0.0.1", 0)) for _ in range(count)]
    try:
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
