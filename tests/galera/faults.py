"""The faults of the Galera matrix: one injector per kind, run beside the workloads.

Every injector waits until the workloads are busy, injects its fault at the node or host the
traffic goes to (HAProxy's active server in single-writer mode, the first in round-robin),
holds it, then recovers (restart, rejoin by IST, heal, re-enable) and notes the window
``[injected, recovered]``: an operation that overlapped it "met" the fault. Proxy faults are
charged by request id instead, as in the chaos suite.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reportclient.testing import GaleraPlacement
from tests.races.chaos import RuleScheduler, TracingProxy
from tests.support.faultproxy import RuleHandle, drop_answer

#: Seconds after the workloads start before a fault is injected, and how long it is held.
DELAY = 2.0
#: Requests through the proxy after which the fault goes in, if DELAY has not passed yet:
#: a fast run (round-robin once finished all four workloads in under 2 s) still meets it.
INJECT_AFTER = 30
HOLD = 3.0
KILL_AFTER_COMMIT = "kill host after commit"


def _header(headers: Any, name: str) -> str:
    return next((v for n, v in headers if n.lower() == name), "")


@dataclass(frozen=True)
class Hop:
    """One request the proxy sent on to HAProxy: when, what came back, which host served it.

    ``sent`` and ``answered`` are ``time.monotonic()``, the clock the workloads time their
    operations by and the hosts stamp their log lines with. ``status`` is None when no answer
    came (the connection failed or was cut); ``served_by`` is HAProxy's ``X-Served-By`` (empty
    when HAProxy answered itself, e.g. its 502 for a request the failover cut); ``body`` what a
    write sent.
    """

    request_id: str
    method: str
    path: str
    sent: float
    answered: float
    status: int | None
    served_by: str
    body: str = ""


class GaleraProxy(TracingProxy):
    """The chaos suite's tracing proxy, in front of HAProxy, that can kill a host after commit.

    A request meeting :meth:`arm_kill_after_commit`'s rule is forwarded, its whole answer read
    (the write committed), then the Placement host HAProxy chose (``X-Served-By``) is SIGKILLed
    and the client's connection closed without a byte.
    """

    def __init__(self, upstream_port: int, cluster: GaleraPlacement) -> None:
        super().__init__(upstream_port)
        self.cluster = cluster
        self.kill_rule: RuleHandle | None = None
        self.killed: int | None = None
        self._labels[drop_answer()] = "drop_answer"
        #: Every request sent on to HAProxy, in the order their answers came (or failed).
        self.hops: list[Hop] = []
        self._hops_lock = threading.Lock()

    def arm_kill_after_commit(self) -> RuleHandle:
        """Arm the rule on the next allocation write."""
        self.kill_rule = self.add_rule("PUT", "/allocations/", drop_answer())
        return self.kill_rule

    def _forward(self, request: Any, handle: RuleHandle | None, *, late: bool = False) -> Any:
        sent = time.monotonic()
        reply = super()._forward(request, handle, late=late)
        rid = _header(request.headers, "x-openstack-request-id")
        served = "" if reply is None else _header(reply.headers, "x-served-by")
        status = None if reply is None else reply.status
        body = "" if request.method == "GET" else request.body.decode(errors="replace")
        hop = Hop(rid, request.method, request.target, sent, time.monotonic(), status, served, body)
        with self._hops_lock:
            self.hops.append(hop)
        if reply is not None and handle is not None and handle is self.kill_rule:
            self.killed = self.cluster.host_index(served)
            self.cluster.kill_host(self.killed)
        return reply


@dataclass
class Window:
    """When a fault was in force, and what it hit."""

    start: float = 0.0
    end: float = 0.0
    target: str = ""
    events: int = 0


class Injector:
    """Runs ``fault`` in a thread next to the workloads; :meth:`stop` re-raises its error."""

    def __init__(self, fault: str, cluster: GaleraPlacement, proxy: GaleraProxy) -> None:
        self.fault = fault
        self.cluster = cluster
        self.proxy = proxy
        self.window = Window()
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self._scheduler: RuleScheduler | None = None
        self._thread = threading.Thread(target=self._run, name=f"inject-{fault}", daemon=True)

    def start(self) -> None:
        if self.fault == "lost answers":
            self._scheduler = RuleScheduler(self.proxy)
            self._scheduler.start()
        self._thread.start()

    def stop(self) -> None:
        self._halt.set()
        self._thread.join(180)
        assert not self._thread.is_alive(), f"injector {self.fault} did not stop"
        if self._scheduler is not None:
            self._scheduler.stop()
            self.window.events = sum(self._scheduler.fired.values())
        if self.error is not None:
            raise self.error

    def _target(self) -> int:
        haproxy = self.cluster.haproxy
        assert haproxy is not None
        active = haproxy.active() if self.cluster.mode == "single-writer" else None
        return 0 if active is None else self.cluster.host_index(active)

    def _run(self) -> None:
        try:
            if self.fault in ("none", "lost answers"):
                return
            # Whichever comes first: DELAY, or INJECT_AFTER requests relayed (progress, not time).
            self.proxy.wait_records(INJECT_AFTER, DELAY)
            if self._halt.is_set():
                return
            actions: dict[str, Callable[[int], Callable[[], None]]] = {
                "kill galera node": self._kill_node,
                "node leaves primary": self._isolate,
                "kill placement host": self._kill_host,
                KILL_AFTER_COMMIT: self._kill_after_commit,
                "haproxy failover": self._failover,
            }
            index = self._target()
            self.window.start = time.monotonic()
            recover = actions[self.fault](index)
            self.window.events = 1
            time.sleep(HOLD)
            recover()
            self.window.end = time.monotonic()
        except BaseException as exc:  # re-raised by stop()
            self.error = exc

    def _wait_up(self, index: int) -> None:
        assert self.cluster.haproxy is not None
        self.cluster.haproxy.wait_state(self.cluster.hosts[index].name, "UP", 60)

    def _kill_node(self, index: int) -> Callable[[], None]:
        self.window.target = self.cluster.galera.nodes[index].name
        self.cluster.kill_node(index)

        def recover() -> None:
            self.cluster.start_node(index)
            self._wait_up(index)

        return recover

    def _isolate(self, index: int) -> Callable[[], None]:
        self.window.target = self.cluster.galera.nodes[index].name
        self.cluster.isolate(index)

        def recover() -> None:
            self.cluster.heal(index)
            self._wait_up(index)

        return recover

    def _kill_host(self, index: int) -> Callable[[], None]:
        self.window.target = self.cluster.hosts[index].name
        self.cluster.kill_host(index)

        def recover() -> None:
            self.cluster.start_host(index)
            self._wait_up(index)

        return recover

    def _kill_after_commit(self, index: int) -> Callable[[], None]:
        handle = self.proxy.arm_kill_after_commit()
        if not handle.applied.wait(60):
            raise TimeoutError("no allocation write met the kill-after-commit rule")
        killed = self.proxy.killed
        assert killed is not None
        self.window.target = self.cluster.hosts[killed].name

        def recover() -> None:
            self.cluster.start_host(killed)
            self._wait_up(killed)

        return recover

    def _failover(self, index: int) -> Callable[[], None]:
        self.window.target = self.cluster.hosts[index].name
        self.cluster.failover(index)

        def recover() -> None:
            self.cluster.restore(index)

        return recover
