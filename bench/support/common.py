"""Shared helpers: machine facts, statistics, request counting and the Placement server."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import logging
import math
import os
import platform
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import requests
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from bench.figures.render import require
from reportclient.testing import PlacementServer, RequestRecord

#: Where the entries write their JSON by default (``bench/results/``, ignored by git).
RESULTS = Path(__file__).resolve().parents[1] / "results"
#: Room for every claim a run makes; capacity is never what a workload measures.
INVENTORY = {"VCPU": {"total": 1_000_000, "max_unit": 1_000_000}}


def results_parser(
    entry: str, doc: str | None, results: str, quick: str
) -> argparse.ArgumentParser:
    """The parser of an entry that writes a results table: ``--quick`` and ``--json``.

    :param entry: the subcommand (``python -m bench ENTRY``).
    :param doc: the entry module's docstring; its first line describes the entry.
    :param results: the JSON's file name under ``bench/results/`` by default.
    :param quick: what ``--quick`` does, for ``--help``.
    """
    parser = argparse.ArgumentParser(
        prog=f"python -m bench {entry}", description=(doc or "").splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument(
        "--json",
        type=Path,
        default=RESULTS / results,
        help=f"where to write the results (default bench/results/{results})",
    )
    return parser


def _plot_dir(value: str) -> Path:
    """``--plot``'s directory, once matplotlib is known to be there: before the run, not after."""
    require()
    return Path(value)


def output_options(parser: argparse.ArgumentParser) -> None:
    """``--plot DIR`` and ``--quiet``: the figures' directory, and no progress on stderr."""
    parser.add_argument(
        "--plot",
        type=_plot_dir,
        metavar="DIR",
        help="also draw the figures (SVG) into DIR, from the results the tables print "
        "(needs the plot extra; python -m bench plot redraws them from the JSON)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress lines on stderr (tables unchanged)"
    )


#: Options that choose where a run's output goes, not what it measures: left out of the
#: command its results and figures name.
_OUTPUT_OPTIONS = ("--json", "--plot")
_OUTPUT_FLAGS = ("--quiet",)


def command_line(entry: str, argv: Sequence[str]) -> str:
    """``python -m bench ENTRY ...`` as typed, less the options that only say where output goes.

    Quoted where an argument has a space (``--variants "rc agent,nova"``), so the command a
    figure's caption names can be pasted to run the same measurement again.
    """
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _OUTPUT_FLAGS:
            continue
        if name in _OUTPUT_OPTIONS:
            skip = "=" not in arg
            continue
        kept.append(f'"{arg}"' if " " in arg else arg)
    return " ".join(["python -m bench", entry, *kept])


def identity(entry: str, argv: Sequence[str] | None) -> dict[str, Any]:
    """What a results file says of its run: the bench, its command and its start (UTC)."""
    return {
        "bench": entry,
        "command": command_line(entry, list(sys.argv[1:] if argv is None else argv)),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def save_results(data: dict[str, Any], path: Path | None, plot: Path | None, quiet: bool) -> None:
    """Write the results JSON (when ``path``) and draw its figures (when ``plot``).

    The figures come from ``data`` itself, the values the tables were printed from; each
    file is named after the JSON (``python -m bench plot`` draws the same from the file).
    """
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if plot is not None:
        from bench import figures

        stem = path.stem if path is not None else str(data["meta"]["bench"])
        for svg in figures.save(data, plot, stem):
            if not quiet:
                print(f"  figure: {svg}", file=sys.stderr, flush=True)


def full_inventory(total: int) -> dict[str, Any]:
    """A full inventory record, so no client leaves a field to Placement's defaults."""
    return {
        "total": total,
        "reserved": 0,
        "min_unit": 1,
        "max_unit": total,
        "step_size": 1,
        "allocation_ratio": 1.0,
    }


PROJECT = "bench-project"
USER = "bench-user"
#: Pinned so that no client spends a ``GET /`` negotiating.
MICROVERSION = "1.39"
#: Where the server's SQLite file goes when possible: a tmpfs has no fsync cost, which on
#: this class of VM halves Placement's write rate and would only add disk noise to ratios.
_TMPFS = "/dev/shm"


def quiet_logging() -> None:
    """Silence per-retry warnings (ours and nova's); they would flood the table."""
    for name in ("reportclient", "nova", "keystoneauth", "oslo", "urllib3"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def package_version(name: str) -> str | None:
    """The installed version of ``name``, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """CPU model, core count, Python and Placement versions for the table header."""
    cpu = platform.processor() or "unknown"
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu_model": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "placement": package_version("openstack-placement"),
        "keystoneauth1": package_version("keystoneauth1"),
        "reportclient": _reportclient_version(),
    }


def run_meta(quick: bool, sizes: dict[str, Any]) -> dict[str, Any]:
    """:func:`machine_info` with the mode, the start time and the sizes a run's JSON records."""
    meta = machine_info()
    meta.update(
        mode="quick" if quick else "full",
        started=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        sizes=sizes,
    )
    return meta


def _reportclient_version() -> str:
    import reportclient

    return str(reportclient.__version__)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def latency_ms(seconds: Sequence[float]) -> dict[str, float]:
    """p50 / p99 / mean of a list of durations in seconds, as milliseconds."""
    if not seconds:
        return {"p50_ms": math.nan, "p99_ms": math.nan, "mean_ms": math.nan}
    return {
        "p50_ms": percentile(seconds, 50) * 1000,
        "p99_ms": percentile(seconds, 99) * 1000,
        "mean_ms": sum(seconds) / len(seconds) * 1000,
    }


def mark(ok: bool | None) -> str:
    """The pass/miss mark printed next to a target."""
    if ok is None:
        return "n/a"
    return "PASS" if ok else "MISS"


class _Counting:
    """Counts requests by method on the client side, with a one-shot hook before a PUT.

    ``before_put``, when set, runs once just before the next PUT leaves (and is then
    cleared): the shelve-race workload uses it to let another writer act at the worst
    moment, after the client last read the consumer and before it writes. The time the
    hook takes is kept in ``hook_seconds`` so it can be taken out of latencies.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counts: Counter[str] = Counter()
        # Many threads share one driver in the production-shape runs; ``+=`` on a Counter
        # is a read and a write, and an unlocked count would lose requests.
        self.count_lock = threading.Lock()
        self.before_put: Callable[[], None] | None = None
        self.hook_seconds = 0.0

    def request(self, url: str, method: str, **kwargs: Any) -> Any:
        """Count, run the one-shot PUT hook if armed, then send as usual."""
        with self.count_lock:
            self.counts[method] += 1
        if method == "PUT" and self.before_put is not None:
            hook, self.before_put = self.before_put, None
            began = time.perf_counter()
            hook()
            self.hook_seconds += time.perf_counter() - began
        return super().request(url, method, **kwargs)  # type: ignore[misc]


class CountingAdapter(_Counting, ks_adapter.Adapter):  # type: ignore[misc]
    """A keystoneauth1 Adapter that counts requests (see :class:`_Counting`).

    For the clients that take an Adapter: nova's ``SchedulerReportClient(adapter=...)`` and
    ``PlacementClient(adapter)``.
    """


class CountingSession(_Counting, ks_session.Session):  # type: ignore[misc]
    """A keystoneauth1 Session that counts requests (see :class:`_Counting`).

    For ``PlacementClient.from_session``, which builds its own Adapter: every
    ``Adapter.request`` is one ``Session.request``, so the counts and the hook's moment are
    those of :class:`CountingAdapter`.
    """


def counting_session(url: str, token: str) -> CountingSession:
    """A counting Session with a fixed noauth2 token for a Placement root URL, no Keystone."""
    return CountingSession(auth=token_endpoint.Token(url, token))


def keepalive_pool(session: requests.Session, size: int) -> None:
    """Room for ``size`` threads on a client that is not ours (the floors, nova).

    The pool reportclient's ``pool_size`` mounts (keystoneauth's keep-alive adapter), so
    every client in a cell keeps as many connections as reportclient does.
    """
    for scheme in ("http://", "https://"):
        session.mount(scheme, ks_session.TCPKeepAliveAdapter(pool_maxsize=size))


def make_adapter(
    url: str, token: str, adapter_class: type[Any] = CountingAdapter, **kwargs: Any
) -> Any:
    """An Adapter for a Placement root URL with a fixed noauth2 token, no Keystone."""
    session = ks_session.Session(auth=token_endpoint.Token(url, token))
    return adapter_class(session, service_type="placement", endpoint_override=url, **kwargs)


@contextlib.contextmanager
def placement_server() -> Iterator[PlacementServer]:
    """Start the real Placement in a child process; its SQLite file on tmpfs if there is one.

    A separate process keeps the server off this process's GIL, so client threads and the
    server do not slow each other down the way an in-process server would.
    """
    saved = tempfile.tempdir
    if os.path.isdir(_TMPFS) and os.access(_TMPFS, os.W_OK):
        tempfile.tempdir = _TMPFS
    server = PlacementServer()
    try:
        server.start()
    finally:
        tempfile.tempdir = saved
    try:
        yield server
    finally:
        server.stop()


class WireCounter:
    """Counts what the server saw between two points, from its own request log.

    Positions are byte offsets into the server's request log (one JSON line per request,
    flushed before the response is sent), so reading what came after a position costs only
    the new lines: the lifecycle workload marks every step, and re-reading the whole log each
    time would grow with the run. Falls back to ``server.requests_seen`` (which re-reads the
    log) when the log file's location is not known.
    """

    def __init__(self, server: PlacementServer) -> None:
        """Read counts from ``server``'s request log."""
        self._server = server
        # A private property of reportclient.testing.PlacementServer; optional.
        self._path: Path | None = getattr(server, "_requests_file", None)

    def mark(self) -> int:
        """A position in the server's request log."""
        if self._path is None:
            return len(self._server.requests_seen)
        try:
            return self._path.stat().st_size
        except FileNotFoundError:
            return 0

    def since(self, position: int) -> list[RequestRecord]:
        """Requests the server served after ``position``."""
        if self._path is None:
            seen: list[RequestRecord] = self._server.requests_seen[position:]
            return seen
        try:
            with open(self._path, "rb") as fh:
                fh.seek(position)
                data = fh.read()
        except FileNotFoundError:
            return []
        return [
            RequestRecord(**json.loads(line))
            for line in data.decode("utf-8").splitlines()
            if line.strip()
        ]

    def count_since(self, position: int, method: str | None = None) -> int:
        """How many requests (of ``method``, if given) the server served after ``position``."""
        return sum(1 for r in self.since(position) if method is None or r.method == method)


def emit(
    lines: list[str],
    meta: dict[str, Any],
    results: dict[str, Any],
    path: Path,
    plot: Path | None = None,
    quiet: bool = False,
) -> int:
    """Print the table with the wall time, write ``{"meta", "results"}`` as JSON; return 0.

    ``plot``: also draw the figures of those results into that directory.
    """
    lines = [*lines, f"\nwall time {meta['wall_seconds']:.1f} s; JSON: {path}"]
    print("\n".join(lines))
    save_results({"meta": meta, "results": results}, path, plot, quiet)
    return 0


def server_description(server: PlacementServer) -> str:
    """One line on how the server runs, for the table header."""
    where = "tmpfs" if str(server.db_path).startswith(_TMPFS) else "disk"
    return (
        f"real Placement {package_version('openstack-placement')} in a SEPARATE process "
        f"(reportclient.testing.PlacementServer: wsgiref, 1 thread, HTTP/1.0, SQLite file on "
        f"{where}); clients run in this process, so they do not share the server's GIL"
    )
