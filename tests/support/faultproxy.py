"""A loopback HTTP proxy that injects the network faults a Placement write can meet.

The functional and race suites put :class:`FaultProxy` between the client and a real Placement
on 127.0.0.1 to produce, on demand, every way a write can end with an *unknown outcome* for
the client, plus the controls where the outcome is known. Each action exists for one case:

- :func:`delay` - a slow network: wait, then forward normally (outcome known, just late).
- :func:`drop_answer` - the answer is lost *after* the commit: the request is forwarded, the
  full upstream response is read (the write has been applied), then the client connection is
  closed without a byte; the client sees ``RemoteDisconnected`` / a connection error.
- :func:`reset` - the connection dies *before* the request got anywhere: RST (``SO_LINGER``
  0) without forwarding; nothing is applied, yet the client cannot tell it from the above.
- :func:`stall` - a black hole: the request is read and never forwarded or answered until
  :meth:`FaultProxy.release_stalled` or :meth:`FaultProxy.close` (then the connection is
  closed without forwarding); the client's read timeout fires and nothing is applied.
- :func:`answer` - a 5xx from a proxy/load balancer *before* the commit: an HTML error page
  is sent without forwarding; nothing is applied.
- :func:`answer_after_forwarding` - a 5xx from a proxy *after* the commit (e.g. the backend
  answered too late for the balancer): forwarded, applied, then an HTML error page is sent.
- :func:`hold` - the slow write: the request is read and kept; the client's read timeout
  fires; the request is forwarded later by :meth:`RuleHandle.forward`, or right after the
  proxy relayed the answer of the next request matching ``forward_after`` (typically the
  client's re-read ``GET /allocations/...``), so it commits *after* the client looked. No
  other request reaches upstream until that late forward got its answer, which makes "commit
  between the re-read and the next write" deterministic. The late answer is discarded.
- :func:`gate` - a request kept until the test says so: held until a ``threading.Event`` is
  set, then forwarded and its answer relayed as usual (the client is still waiting). Other
  requests pass meanwhile, so "another request is answered before this one commits" is
  ordered by the test, not by luck.
- :func:`gate_answer` - an answer kept until the test says so: the request is forwarded at
  once and Placement's answer read (applied, and what it says is fixed), then relayed only once
  the event is set, so "this answer is processed after another request's" is ordered too.

Requests matching no rule pass through. Every connection is answered with ``Connection: close``
and closed (``requests`` reconnects transparently). Chunked request bodies are not supported.
"""

from __future__ import annotations

import http.client
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from time import monotonic

_LOOPBACK = frozenset({"127.0.0.1", "localhost"})
_HOP_BY_HOP = frozenset(
    "connection keep-alive proxy-connection te trailer transfer-encoding upgrade".split()
)
_ACTIONS = (
    "delay",
    "drop_answer",
    "reset",
    "stall",
    "answer",
    "answer_after_forwarding",
    "hold",
    "gate",
    "gate_answer",
)
_MAX_HEAD = 64 * 1024
_JOIN_TIMEOUT = 5.0
#: How often a gated exchange looks whether the proxy was closed while its event is unset.
_GATE_POLL = 0.05


@dataclass(frozen=True)
class Match:
    """Which requests a rule (or a ``forward_after`` trigger) applies to; method None = any."""

    method: str | None = None
    path_prefix: str = "/"

    def matches(self, method: str, path: str) -> bool:
        """True if ``method`` and the request target ``path`` fit this match."""
        method_ok = self.method is None or self.method.upper() == method.upper()
        return method_ok and path.startswith(self.path_prefix)


@dataclass(frozen=True)
class Action:
    """A fault to inject; build one with the functions below, which say what each does."""

    name: str
    seconds: float = 0.0
    status: int = 0
    forward_after: Match | None = None
    #: What a gate waits for (set by the test); not part of the action's identity.
    event: threading.Event | None = field(default=None, compare=False)


def delay(seconds: float) -> Action:
    """Wait ``seconds`` (cut short by close), then forward normally: a slow network."""
    return Action("delay", seconds=seconds)


def drop_answer() -> Action:
    """Forward, read the whole answer (applied), close the client without sending a byte."""
    return Action("drop_answer")


def reset() -> Action:
    """Close the client with an RST (``SO_LINGER`` 0) without forwarding: nothing applied."""
    return Action("reset")


def stall() -> Action:
    """Never forward nor answer; on release_stalled()/close() close the client unforwarded."""
    return Action("stall")


def answer(status: int) -> Action:
    """Answer ``status`` with a small HTML page without forwarding: nothing applied."""
    return Action("answer", status=status)


def answer_after_forwarding(status: int) -> Action:
    """Forward and read the answer (applied), then answer ``status`` with an HTML page."""
    return Action("answer_after_forwarding", status=status)


def hold(forward_after: Match | None = None) -> Action:
    """Keep the request; forward it on ``handle.forward()`` or after ``forward_after``.

    With ``forward_after`` the request is forwarded right after the proxy relayed the answer
    of the next request (read after this one) matching it, and before any other request
    reaches upstream. The late upstream answer is discarded (the client is long gone).
    """
    return Action("hold", forward_after=forward_after)


def gate(event: threading.Event) -> Action:
    """Keep the request until ``event`` is set, then forward it and relay the answer.

    ``handle.applied`` is set once the request is kept. Unset after the proxy's ``timeout``,
    or on close, the request is dropped unforwarded and the client closed without an answer.
    """
    return Action("gate", event=event)


def gate_answer(event: threading.Event) -> Action:
    """Forward at once and read the answer (``handle.forwarded``); relay it once ``event`` is set.

    Unset after the proxy's ``timeout``, or on close, the client is closed without an answer
    (the request was applied all the same).
    """
    return Action("gate_answer", event=event)


@dataclass(frozen=True)
class Record:
    """One request the proxy received, logged once its outcome is decided.

    That is before the client sees any answer or close, so a client that got its outcome can
    read the record at once; stalled and held requests are logged when released.
    """

    method: str
    path: str
    action: str  # an action's name, or "pass"
    upstream_status: int | None  # None: not forwarded, or no answer from upstream
    client_status: int | None  # status answered to the client; None: closed without answer
    time: float  # monotonic() when the request had been read
    finished: float = field(default_factory=monotonic)  # when the outcome was decided


class RuleHandle:
    """A queued rule; returned by :meth:`FaultProxy.add_rule`."""

    def __init__(self, proxy: FaultProxy, match: Match, action: Action, times: int) -> None:
        self.match = match
        self.action = action
        self.remaining = times
        #: Set once the rule fired: a request was held/stalled, or its outcome was decided and
        #: logged (for drop_answer and answer_after_forwarding: after upstream answered).
        self.applied = threading.Event()
        #: Set once a request of this rule was forwarded and its upstream answer read.
        self.forwarded = threading.Event()
        #: Status of the last upstream answer to a request of this rule.
        self.upstream_status: int | None = None
        self._proxy = proxy
        self._release = threading.Event()

    def forward(self) -> None:
        """Forward the requests this ``hold`` rule holds now, and any it would hold later."""
        self._release.set()
        self._proxy._release_holds(self)


@dataclass(eq=False)
class _Request:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes
    seq: int
    received: float


@dataclass(eq=False)
class _Held:
    handle: RuleHandle
    seq: int
    release: threading.Event = field(default_factory=threading.Event)
    counted: bool = False  # released by a trigger: upstream is gated until it was forwarded


@dataclass(frozen=True)
class _Upstream:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes


class _BadRequest(Exception):
    """A request the proxy will not parse; ``args[0]`` is the status to answer."""


def _send(sock: socket.socket, data: bytes) -> None:
    """Send ``data``, unless the client has gone away (or close() shut the socket)."""
    try:
        sock.sendall(data)
    except OSError:
        pass


def _read_request(sock: socket.socket) -> _Request | None:
    """Read one request; None if the client closed before sending anything."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        if len(buf) > _MAX_HEAD:
            raise _BadRequest(431)
        chunk = sock.recv(65536)
        if not chunk:
            if buf.strip():
                raise _BadRequest(400)
            return None
        buf = (buf + chunk).lstrip(b"\r\n")
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise _BadRequest(400)
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise _BadRequest(400)
        headers.append((name.strip(), value.strip()))
    fields = {n.lower(): v for n, v in headers}
    if "transfer-encoding" in fields:
        raise _BadRequest(501)
    length_text = fields.get("content-length", "0")
    if not length_text.isdigit():
        raise _BadRequest(400)
    length = int(length_text)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise _BadRequest(400)
        body += chunk
    return _Request(parts[0], parts[1], headers, body[:length], 0, monotonic())


def _response_bytes(
    status: int, reason: str, headers: list[tuple[str, str]], body: bytes, *, head: bool = False
) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}"]
    for name, value in headers:
        lowered = name.lower()
        if lowered in _HOP_BY_HOP or (lowered == "content-length" and not head):
            continue
        lines.append(f"{name}: {value}")
    if not head and status not in (204, 304) and status >= 200:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head else body)


def _page(status: int) -> bytes:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Error"
    html = (
        f"<html><head><title>{status} {reason}</title></head>"
        f"<body><h1>{status} {reason}</h1><p>injected by faultproxy</p></body></html>\n"
    ).encode()
    return _response_bytes(status, reason, [("Content-Type", "text/html; charset=UTF-8")], html)


class FaultProxy:
    """HTTP proxy on 127.0.0.1:<ephemeral> in front of a loopback upstream, with fault rules."""

    def __init__(
        self, upstream_host: str = "127.0.0.1", upstream_port: int = 0, *, timeout: float = 30.0
    ) -> None:
        """Listen at once on an ephemeral loopback port.

        ``upstream_port`` is required (0 is refused); ``timeout`` bounds client reads and each
        upstream exchange.
        """
        if upstream_host not in _LOOPBACK:
            raise ValueError(f"FaultProxy only forwards to 127.0.0.1/localhost: {upstream_host!r}")
        if not 0 < upstream_port < 65536:
            raise ValueError(f"invalid upstream port {upstream_port!r}")
        self.upstream = (upstream_host, upstream_port)
        self.timeout = timeout
        self._cond = threading.Condition()  # guards every mutable field below
        self._closed = False
        self._rules: list[RuleHandle] = []
        self._log: list[Record] = []
        self._seq = 0
        self._held: list[_Held] = []  # held and stalled requests
        self._late_pending = 0
        self._sockets: set[socket.socket] = set()
        self._upstreams: set[http.client.HTTPConnection] = set()
        self._threads: set[threading.Thread] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop, name="faultproxy", daemon=True)
        self._acceptor.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    # -- rules and observation -----------------------------------------------------------------

    def add_rule(
        self,
        method: str | None = None,
        path_prefix: str = "/",
        action: Action | None = None,
        times: int = 1,
    ) -> RuleHandle:
        """Queue ``action`` for the next ``times`` requests matching; return its handle."""
        if action is None or action.name not in _ACTIONS or times < 1:
            raise ValueError(f"add_rule needs one of {_ACTIONS} and times >= 1, not {action}")
        if action.name in ("gate", "gate_answer") and action.event is None:
            raise ValueError(f"a {action.name} needs an event to wait for")
        handle = RuleHandle(self, Match(method, path_prefix), action, times)
        with self._cond:
            self._rules.append(handle)
        return handle

    @property
    def log(self) -> list[Record]:
        """A snapshot of the records so far, in the order their outcomes were decided."""
        with self._cond:
            return list(self._log)

    def wait_for(self, predicate: Callable[[Record], bool], timeout: float = 10.0) -> Record:
        """Return the first record satisfying ``predicate``; TimeoutError after ``timeout``."""

        def find() -> Record | None:
            return next((r for r in self._log if predicate(r)), None)

        with self._cond:
            found = self._cond.wait_for(find, timeout)
            if found is None:
                raise TimeoutError(f"no matching record within {timeout}s; log: {self._log}")
            return found

    def wait_records(self, count: int, timeout: float) -> bool:
        """Wait until ``count`` requests have an outcome; False if ``timeout`` came first."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self._log) >= count, timeout)

    def release_stalled(self) -> None:
        """Close every currently stalled request's connection (without forwarding it)."""
        with self._cond:
            for entry in self._held:
                if entry.handle.action.name == "stall":
                    entry.release.set()

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop accepting, release held/stalled requests unforwarded, close every socket."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            for entry in self._held:
                entry.release.set()
            self._cond.notify_all()
            sockets = list(self._sockets) + [c.sock for c in self._upstreams if c.sock]
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone
        try:  # wake the blocking accept()
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            pass
        deadline = monotonic() + _JOIN_TIMEOUT
        self._acceptor.join(_JOIN_TIMEOUT)
        self._listener.close()
        with self._cond:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, deadline - monotonic()))

    def __enter__(self) -> FaultProxy:
        """Return ``self`` (the proxy is already listening)."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Close the proxy."""
        self.close()

    # -- internals -----------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            with self._cond:
                if self._closed:
                    sock.close()
                    return
                sock.settimeout(self.timeout)
                thread = threading.Thread(
                    target=self._serve, args=(sock,), name="faultproxy-conn", daemon=True
                )
                self._sockets.add(sock)
                self._threads.add(thread)
                thread.start()  # under the lock, so close() never joins an unstarted thread

    def _serve(self, sock: socket.socket) -> None:
        try:
            try:
                request = _read_request(sock)
            except _BadRequest as exc:
                _send(sock, _page(exc.args[0]))
                return
            except OSError:
                return  # the client went away, or close() shut the socket down
            if request is None:
                return
            handle: RuleHandle | None = None
            with self._cond:
                self._seq += 1
                request.seq = self._seq
                for rule in self._rules:
                    if rule.remaining and rule.match.matches(request.method, request.target):
                        rule.remaining -= 1
                        handle = rule
                        break
            upstream, status, data = self._apply(sock, request, handle)
            name = handle.action.name if handle else "pass"
            record = Record(
                request.method, request.target, name, upstream, status, request.received
            )
            with self._cond:  # logged before the client can see the outcome
                self._log.append(record)
                self._cond.notify_all()
            if handle is not None:
                handle.applied.set()
            _send(sock, data)
        finally:
            sock.close()
            with self._cond:
                self._sockets.discard(sock)
                self._threads.discard(threading.current_thread())

    def _apply(
        self, sock: socket.socket, request: _Request, handle: RuleHandle | None
    ) -> tuple[int | None, int | None, bytes]:
        """Carry out the rule's action (or pass through) up to the answer.

        Return the upstream status, the status to answer and the bytes to send the client
        (``b""``: close without answering).
        """
        name = handle.action.name if handle else "pass"
        status = handle.action.status if handle else 0
        if name == "reset":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return None, None, b""
        if name == "answer":
            return None, status, _page(status)
        if handle is not None and name in ("stall", "hold"):
            return self._hold(request, handle), None, b""
        if handle is not None and name == "gate":
            handle.applied.set()
            if not self._await(handle):
                return None, None, b""
        if handle is not None and name == "delay":
            with self._cond:
                if self._cond.wait_for(lambda: self._closed, handle.action.seconds):
                    return None, None, b""
        reply = self._forward(request, handle)
        if name == "drop_answer":
            return (reply.status if reply else None), None, b""
        if reply is None:
            return None, 502, _page(502)
        if name == "answer_after_forwarding":
            return reply.status, status, _page(status)
        if handle is not None and name == "gate_answer" and not self._await(handle):
            return reply.status, None, b""
        self._fire_triggers(request)
        head = request.method.upper() == "HEAD"
        data = _response_bytes(reply.status, reply.reason, reply.headers, reply.body, head=head)
        return reply.status, reply.status, data

    def _await(self, handle: RuleHandle) -> bool:
        """Wait for a gate's event; False if the proxy closed or ``timeout`` passed first."""
        event = handle.action.event
        assert event is not None, "a gate needs an event"
        deadline = monotonic() + self.timeout
        while not event.wait(_GATE_POLL):
            with self._cond:
                if self._closed:
                    return False
            if monotonic() >= deadline:
                return False
        with self._cond:
            return not self._closed

    def _hold(self, request: _Request, handle: RuleHandle) -> int | None:
        """Stall or hold ``request`` until released; a released hold is then forwarded."""
        entry = _Held(handle, request.seq)
        with self._cond:
            if self._closed:
                return None
            if handle._release.is_set() and handle.action.name == "hold":
                entry.release.set()
            self._held.append(entry)
        handle.applied.set()
        entry.release.wait()
        try:
            with self._cond:
                self._held.remove(entry)
                if self._closed or handle.action.name == "stall":
                    return None
            reply = self._forward(request, handle, late=True)
            return reply.status if reply else None
        finally:
            if entry.counted:
                with self._cond:
                    self._late_pending -= 1
                    self._cond.notify_all()

    def _release_holds(self, handle: RuleHandle) -> None:
        with self._cond:
            for entry in self._held:
                if entry.handle is handle:
                    entry.release.set()

    def _fire_triggers(self, request: _Request) -> None:
        """Release holds waiting for ``request``; gate upstream until they were forwarded."""
        with self._cond:
            for entry in self._held:
                after = entry.handle.action.forward_after
                if (
                    after is not None
                    and entry.seq < request.seq
                    and not entry.release.is_set()
                    and after.matches(request.method, request.target)
                ):
                    entry.counted = True
                    self._late_pending += 1
                    entry.release.set()

    def _forward(
        self, request: _Request, handle: RuleHandle | None, *, late: bool = False
    ) -> _Upstream | None:
        """Send ``request`` upstream on a fresh connection; None if upstream failed."""
        conn = http.client.HTTPConnection(*self.upstream, timeout=self.timeout)
        with self._cond:
            if not late:  # a triggered late forward goes first
                self._cond.wait_for(lambda: self._closed or not self._late_pending, self.timeout)
            if self._closed:
                return None
            self._upstreams.add(conn)
        try:
            conn.putrequest(
                request.method, request.target, skip_host=True, skip_accept_encoding=True
            )
            names: set[str] = set()
            for name, value in request.headers:
                if name.lower() not in _HOP_BY_HOP:
                    conn.putheader(name, value)
                    names.add(name.lower())
            if "host" not in names:
                conn.putheader("Host", f"{self.upstream[0]}:{self.upstream[1]}")
            conn.putheader("Connection", "close")
            conn.endheaders(request.body or None)
            response = conn.getresponse()
            reply = _Upstream(
                response.status, response.reason, response.getheaders(), response.read()
            )
        except (OSError, http.client.HTTPException):
            return None
        finally:
            conn.close()
            with self._cond:
                self._upstreams.discard(conn)
        if handle is not None:
            handle.upstream_status = reply.status
            handle.forwarded.set()
        return reply
