"""Faults for the chaos tests: a tracing fault proxy, a rule scheduler and a worker killer.

:class:`TracingProxy` is the suite's :class:`~tests.support.faultproxy.FaultProxy` that also
notes, for
every request, the action that met it and the request's global request id; every operation a
worker runs sends its own id, so each injected fault is charged to exactly one operation, and
the table can say how the operations that met it ended.
"""

from __future__ import annotations

import socket
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reportclient.testing import PlacementCluster
from tests.races.checker import OK, Checker
from tests.support.faultproxy import (
    Action,
    FaultProxy,
    RuleHandle,
    answer,
    answer_after_forwarding,
    drop_answer,
    reset,
)

#: A request forwarded upstream that got no answer: the worker serving it was SIGKILLed.
KILLED = "worker SIGKILLed (502)"
#: How often the scheduler polls the proxy's log, in seconds.
_POLL = 0.005


@dataclass(frozen=True)
class Fault:
    """Inject ``action`` into every ``every``-th ``method`` request under ``path``."""

    label: str
    method: str
    every: int
    action: Action
    #: "/" for every path: the provider chaos test also hits inventory, trait and aggregate writes.
    path: str = "/allocations/"


FAULTS = (
    Fault("drop_answer", "PUT", 7, drop_answer()),
    Fault("answer_after_forwarding(500)", "PUT", 11, answer_after_forwarding(500)),
    Fault("reset", "PUT", 13, reset()),
    Fault("answer(503)", "GET", 5, answer(503)),
)
#: At most this many of each fault per workload, so every run stays bounded.
BUDGET = 15


class TracingProxy(FaultProxy):
    """A FaultProxy that notes ``(request id, method, fault label)`` for every request."""

    def __init__(self, upstream_port: int, faults: Sequence[Fault] = FAULTS) -> None:
        super().__init__(upstream_port=upstream_port)
        self.trace: list[tuple[str, str, str]] = []
        self._trace_lock = threading.Lock()
        self._labels = {fault.action: fault.label for fault in faults}

    def _apply(
        self, sock: socket.socket, request: Any, handle: RuleHandle | None
    ) -> tuple[int | None, int | None, bytes]:
        # The one seam that sees both the request's headers and the action that met it.
        upstream, status, data = super()._apply(sock, request, handle)
        if handle is not None:
            label = self._labels.get(handle.action, handle.action.name)
        else:
            label = KILLED if upstream is None else "pass"
        rid = next((v for n, v in request.headers if n.lower() == "x-openstack-request-id"), "")
        with self._trace_lock:
            self.trace.append((rid, request.method, label))
        return upstream, status, data

    def injected(self) -> list[tuple[str, str]]:
        """``(request id, label)`` of every request a fault met."""
        with self._trace_lock:
            return [(rid, label) for rid, _, label in self.trace if label != "pass"]


class Background:
    """A bounded background loop: ``step`` runs until it returns True or :meth:`stop`."""

    def __init__(self, name: str) -> None:
        self._halt = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 90.0) -> None:
        """Stop, wait, and re-raise what the loop raised."""
        self._halt.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self._thread.name} did not stop"
        if self.error is not None:
            raise self.error

    def _loop(self) -> None:
        try:
            while not self._halt.wait(_POLL):
                if self.step():
                    return
        except BaseException as exc:  # re-raised in the test by stop()
            self.error = exc

    def step(self) -> bool:
        raise NotImplementedError


class RuleScheduler(Background):
    """Keeps re-arming each fault's rule ``every`` matching requests after it last fired."""

    def __init__(self, proxy: FaultProxy, faults: Sequence[Fault] = FAULTS) -> None:
        super().__init__("rule-scheduler")
        self.proxy = proxy
        self.faults = list(faults)
        self.armed: dict[str, RuleHandle] = {}
        self.fired: Counter[str] = Counter()
        self.next_at = {fault.label: fault.every for fault in self.faults}

    def step(self) -> bool:
        paths = {fault.path for fault in self.faults}
        seen = Counter(
            (r.method, path) for r in self.proxy.log for path in paths if r.path.startswith(path)
        )
        for fault in self.faults:
            count = seen[fault.method, fault.path]
            handle = self.armed.get(fault.label)
            if handle is not None:
                if not handle.applied.is_set():
                    continue
                del self.armed[fault.label]
                self.fired[fault.label] += 1
                self.next_at[fault.label] = count + fault.every - 1
            if self.fired[fault.label] < BUDGET and count >= self.next_at[fault.label]:
                self.armed[fault.label] = self.proxy.add_rule(
                    fault.method, fault.path, fault.action
                )
        return False


class WorkerKiller(Background):
    """SIGKILLs one gunicorn worker once the proxy has relayed ``after`` writes."""

    def __init__(self, cluster: PlacementCluster, proxy: FaultProxy, after: int) -> None:
        super().__init__("worker-killer")
        self.cluster = cluster
        self.proxy = proxy
        self.after = after
        self.victim: int | None = None
        self.workers: list[int] = []

    def step(self) -> bool:
        if sum(r.method == "PUT" for r in self.proxy.log) < self.after:
            return False
        self.victim = self.cluster.kill_worker()
        self.workers = self.cluster.wait_for_workers(timeout=60)
        return True


def fault_rows(
    workload: str, checker: Checker, proxy: TracingProxy, extra: Sequence[str] = ()
) -> list[list[object]]:
    """Per fault kind: injected, how the operations it met ended, applied twice and lost.

    An operation can meet several faults (a write's answer dropped, then its re-read answered
    503) and is counted under each; "alone" counts the faults that met an operation no other
    fault met, and how many of those operations succeeded. A violation about a consumer is
    charged to every kind of fault that met an operation on that consumer (one about no single
    consumer to every kind): an upper bound, whose zeros are exact. ``extra`` names further
    categories counted the same way, one column each after "lost".
    """
    ops = {op.request_id: op for op in checker.ops}
    met = Counter(rid for rid, _ in proxy.injected())
    injected: Counter[str] = Counter()
    recovered: Counter[str] = Counter()
    alone: Counter[str] = Counter()
    alone_ok: Counter[str] = Counter()
    errors: dict[str, Counter[str]] = {}
    touched: dict[str, set[str]] = {}
    for rid, label in proxy.injected():
        injected[label] += 1
        op = ops.get(rid)
        outcome = "unattributed" if op is None else op.outcome
        if outcome == OK:
            recovered[label] += 1
        else:
            errors.setdefault(label, Counter())[outcome] += 1
        if met[rid] == 1:
            alone[label] += 1
            alone_ok[label] += outcome == OK
        if op is not None:
            touched.setdefault(label, set()).add(op.consumer)
    rows: list[list[object]] = []
    for label in sorted(injected):
        typed = ", ".join(f"{name} {n}" for name, n in sorted(errors.get(label, {}).items()))
        mine = touched.get(label, set())
        rows.append(
            [workload, label, injected[label], recovered[label], typed or "-",
             f"{alone_ok[label]}/{alone[label]}",
             checker.verdict.count("applied twice", mine), checker.verdict.count("lost", mine),
             *(checker.verdict.count(category, mine) for category in extra)]
        )  # fmt: skip
    return rows


FAULT_HEADERS = [
    "workload",
    "fault",
    "injected",
    "recovered",
    "typed error",
    "alone: recovered",
    "applied twice",
    "lost",
]
