"""gunicorn over one database: the app its master preloads, how it is started, when it is ready.

Start-up order is the point of this module. Placement inserts the standard traits and resource
classes the first time its app is loaded, and N workers loading it at once race on that insert.
So gunicorn runs with ``--preload``: its master imports this module and calls
:func:`gunicorn_app`, which syncs the schema and loads the app exactly once, then empties the
DB connection pool so the forked workers never share the master's sockets (oslo.db would also
discard them on checkout, by pid). Workers are forked from that loaded app, and so is every
replacement after a worker is killed.

:class:`~reportclient.testing.PlacementCluster` starts one such gunicorn; each of
:class:`~reportclient.testing.GaleraPlacement`'s hosts is another, on its own Galera node.
"""

from __future__ import annotations

import importlib.metadata
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import requests

from reportclient.testing import _app
from reportclient.testing._process import child_env, watch_parent

__all__ = ["all_workers_answer", "gunicorn_app", "live_children", "start_gunicorn"]

_DATABASE_URL_ENV = "REPORTCLIENT_CLUSTER_DATABASE_URL"
_PARENT_PID_ENV = "REPORTCLIENT_CLUSTER_PARENT_PID"
#: Set (to anything) for :func:`gunicorn_app` to log what :func:`_app.log_evidence` logs.
_LOG_EVIDENCE_ENV = "REPORTCLIENT_CLUSTER_LOG_EVIDENCE"
#: Set (to anything) for :func:`gunicorn_app` to log every request too (:func:`_app.log_requests`).
_LOG_REQUESTS_ENV = "REPORTCLIENT_CLUSTER_LOG_REQUESTS"


def gunicorn_app() -> _app.WSGIApp:
    """gunicorn's app factory (``--preload``): sync the schema, load Placement once.

    Runs in the gunicorn master, before any worker is forked; reads the database URL from
    ``REPORTCLIENT_CLUSTER_DATABASE_URL``.
    """
    from placement import db_api
    from placement.db.sqlalchemy import migration

    if os.environ.get(_LOG_EVIDENCE_ENV):
        _app.log_evidence()
    if os.environ.get(_LOG_REQUESTS_ENV):
        _app.log_requests()
    conf = _app.build_conf(os.environ[_DATABASE_URL_ENV])
    db_api.configure(conf)
    migration.upgrade("head")
    app = _app.load_app(conf)  # inserts the standard traits and resource classes
    db_api.placement_context_manager.dispose_pool()
    parent = int(os.environ.get(_PARENT_PID_ENV, "0"))
    if parent:
        # Stops gunicorn gracefully once the test process is gone, so no cluster outlives it.
        threading.Thread(target=watch_parent, args=(parent,), daemon=True).start()
    return app


def start_gunicorn(
    host: str,
    port: int,
    *,
    workers: int,
    worker_timeout: int,
    database_url: str,
    log_path: Path,
    log_evidence: bool = False,
    log_requests: bool = False,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start gunicorn serving :func:`gunicorn_app` on ``host:port``; return it and the port.

    :param port: 0 picks a free port.
    :param log_path: appended with the master's and the workers' output.
    :param log_evidence: log what Placement does silently (:func:`_app.log_evidence`).
    :param log_requests: log every request and its answer too (:func:`_app.log_requests`).
    """
    listener = socket.create_server((host, port), backlog=1024)
    port = listener.getsockname()[1]
    cmd = [
        sys.executable, "-m", "gunicorn",
        "--preload",
        "--worker-class", "sync",
        "--workers", str(workers),
        # A socket we bound: the port is known before gunicorn starts, with no race.
        "--bind", f"fd://{listener.fileno()}",
        "--timeout", str(worker_timeout),
        "--graceful-timeout", "5",
        "--error-logfile", "-",
    ]  # fmt: skip
    if int(importlib.metadata.version("gunicorn").split(".")[0]) >= 25:
        cmd.append("--no-control-socket")
    cmd.append(f"{__name__}:gunicorn_app()")
    env = child_env()
    env[_DATABASE_URL_ENV] = database_url
    env[_PARENT_PID_ENV] = str(os.getpid())
    if log_evidence:
        env[_LOG_EVIDENCE_ENV] = "1"
    if log_requests:
        env[_LOG_REQUESTS_ENV] = "1"
    with listener, open(log_path, "ab") as log:
        proc = subprocess.Popen(  # noqa: S603 - argv built from our own values
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            pass_fds=(listener.fileno(),),
            # Its own process group, so master and workers can be killed in one go.
            start_new_session=True,
        )
    return proc, port


def live_children(pid: int) -> list[int]:
    """Live (not zombie) child processes of ``pid``, read from /proc."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ..."; comm may contain spaces and parentheses.
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(entry.name))
    return sorted(found)


def all_workers_answer(master_pid: int, workers: int, url: str) -> bool:
    """Whether all ``workers`` have been forked and ``GET /`` on ``url`` answers 200."""
    if len(live_children(master_pid)) != workers:
        return False
    try:
        return requests.get(f"{url}/", timeout=2).status_code == 200
    except requests.RequestException:
        return False
