"""A model of N writers updating one consumer, to try retry windows in seconds, not hours.

Not a measurement: the production-shape benchmark (``python -m bench run --placement mariadb
--contention-only --with-nova``) is. This is the model used to choose the shape of
reportclient's contention windows (``reportclient/_engine/contention.py``) before measuring
it, kept so the next change can be tried the same way.

The model: every writer reads the consumer (GET), then writes it from that generation (PUT),
each request going through a server of 4 worker slots sharing 2 cores (processor sharing,
FIFO beyond 4 requests), each costing a fixed CPU time, plus a fixed client time before it.
A PUT lands when the consumer is still at the generation it carries when the PUT ends; it
loses with "expected N but got M" when the consumer had moved before the PUT started, and
Placement's in-server race (nothing said about what landed) when it moved while the PUT ran.
Every writer starts at once (the benchmark's barrier) and makes ``ops`` updates in a row.

Calibration, 2026-12-02, MariaDB, 4 workers, 64 writers, 12 rounds: with requests three
times as costly as the default's (``--slow``) the model gave nova 4.58 updates/s, 14.8% given
up and a p99 of 12.0 s against a measured 4.62, 14.8% and 11.8 s; reportclient's windows as
they were then (growing) 4.16 updates/s and 15.5 s against 4.28 and 14.6 s.

The writers' windows come from ``reportclient._engine.contention.ContentionMemory``, a private
class, on purpose: the model exists to try the engine's real windows, and a copy here would
drift from them unnoticed.

Usage: ``python -m bench model [--slow] [--writers 2,4,16,64] [--bursts 40]``.
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from reportclient._engine.contention import ContentionMemory
from reportclient.retry import DEFAULT_ATTEMPTS, DEFAULT_CAP, DEFAULT_DEADLINE

SLOTS, CORES = 4, 2.0
#: Seconds of server CPU per GET and per PUT, and of client time before each request.
FAST = (0.007, 0.012, 0.003)
SLOW = (0.021, 0.036, 0.009)
#: Updates per writer per burst, as the benchmark's production shape runs them.
OPS = {2: 10, 4: 8, 16: 4, 64: 1}


@dataclass
class Request:
    put: bool
    cost: float
    done: Callable[[str, int], None]
    expected: int = -1
    left: float = 0.0
    generation_at_start: int = 0


class Server:
    """Processor sharing over ``CORES`` among at most ``SLOTS`` requests; FIFO behind them."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.generation = 0
        self.active: list[Request] = []
        self.waiting: list[Request] = []
        self.since = 0.0
        self.token = 0
        self.puts = self.gets = 0

    def submit(self, request: Request) -> None:
        self._advance()
        request.left = request.cost
        if len(self.active) < SLOTS:
            self._start(request)
        else:
            self.waiting.append(request)
        self._next()

    def _start(self, request: Request) -> None:
        request.generation_at_start = self.generation
        self.active.append(request)

    def _rate(self) -> float:
        return min(1.0, CORES / len(self.active))

    def _advance(self) -> None:
        now = self.model.now
        if self.active:
            for request in self.active:
                request.left -= (now - self.since) * self._rate()
        self.since = now

    def _next(self) -> None:
        if not self.active:
            return
        self.token += 1
        token = self.token
        soonest = min(r.left for r in self.active)
        self.model.at(self.model.now + max(0.0, soonest) / self._rate(), lambda: self._tick(token))

    def _tick(self, token: int) -> None:
        if token != self.token:
            return
        self._advance()
        for request in [r for r in self.active if r.left <= 1e-9]:
            self.active.remove(request)
            self._finish(request)
            if self.waiting:
                self._start(self.waiting.pop(0))
        self._next()

    def _finish(self, request: Request) -> None:
        if not request.put:
            self.gets += 1
            request.done("read", self.generation)
            return
        self.puts += 1
        if self.generation == request.expected:
            self.generation += 1
            request.done("ok", self.generation)
        elif request.generation_at_start == request.expected:
            request.done("race", self.generation)
        else:
            request.done("conflict", self.generation)


#: A retry policy of the model: the wait before the next attempt, or None to give up.
Policy = Callable[["Writer", float, "int | None"], "float | None"]


@dataclass
class Writer:
    """One writer (one client): ``ops`` updates in a row, each retried under ``policy``."""

    model: Model
    policy: Policy
    ops: int
    latencies: list[float] = field(default_factory=list)
    ok: int = 0

    def __post_init__(self) -> None:
        self.memory = ContentionMemory(lambda: self.model.now)
        self.began, self.attempts, self.conflicts = 0.0, 0, 0
        self.window: float | None = None
        self.first = 0.0

    def start(self) -> None:
        self.began, self.attempts, self.conflicts, self.window = self.model.now, 0, 0, None
        self.attempt()

    def attempt(self) -> None:
        self.attempts += 1
        self.read_at = self.model.now
        self._send(Request(False, self.model.costs[0], self._read))

    def _send(self, request: Request) -> None:
        self.model.at(
            self.model.now + self.model.costs[2], lambda: self.model.server.submit(request)
        )

    def _read(self, _: str, generation: int) -> None:
        def written(outcome: str, now_at: int) -> None:
            self._written(outcome, None if outcome == "race" else now_at - generation)

        self._send(Request(True, self.model.costs[1], written, expected=generation))

    def _written(self, outcome: str, landed: int | None) -> None:
        if outcome == "ok":
            self._end(True)
            return
        self.conflicts += 1
        wait = self.policy(self, self.model.now - self.read_at, landed)
        if wait is None:
            self._end(False)
        else:
            self.model.at(self.model.now + wait, self.attempt)

    def _end(self, ok: bool) -> None:
        self.latencies.append(self.model.now - self.began)
        self.ok += ok
        if ok:
            self.memory.done("consumer", self.window, self.conflicts)
        self.ops -= 1
        if self.ops > 0:
            self.start()


def nova(writer: Writer, cycle: float, landed: int | None) -> float | None:
    """nova 34's ``@retries``: 4 attempts, sleeping up to 2 s x attempt before each retry."""
    if writer.attempts >= 4:
        return None
    return writer.model.rng.uniform(0, 2.0 * writer.attempts)


def _default_stops(writer: Writer) -> bool:
    """Whether the default policy (``reportclient.default_retry``) gives up here."""
    return writer.attempts >= DEFAULT_ATTEMPTS or writer.model.now - writer.began > DEFAULT_DEADLINE


def reportclient(writer: Writer, cycle: float, landed: int | None) -> float | None:
    """The library's engine window (its own code) under the default policy's stops."""
    if _default_stops(writer):
        return None
    writer.window = writer.memory.window("consumer", cycle, writer.conflicts, landed, writer.window)
    return writer.model.rng.uniform(0, min(DEFAULT_CAP, writer.window))


def growing(writer: Writer, cycle: float, landed: int | None) -> float | None:
    """The windows before 2026-12-02: the same first one, then 2 s per collision so far."""
    if _default_stops(writer):
        return None
    if writer.conflicts == 1:
        writer.first = writer.memory.window("consumer", cycle, 1, landed)
        writer.window = writer.first
    else:
        writer.window = max(writer.first, 2.0 * writer.conflicts)
    return writer.model.rng.uniform(0, min(DEFAULT_CAP, writer.window))


POLICIES: dict[str, Policy] = {"nova": nova, "reportclient": reportclient, "growing": growing}


class Model:
    """One burst: the event queue, the server and the writers."""

    def __init__(self, seed: int, costs: tuple[float, float, float]) -> None:
        self.now = 0.0
        self.rng = random.Random(seed)
        self.costs = costs
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._count = 0
        self.server = Server(self)

    def at(self, when: float, action: Callable[[], None]) -> None:
        self._count += 1
        heapq.heappush(self._events, (when, self._count, action))

    def run(self) -> None:
        while self._events:
            self.now, _, action = heapq.heappop(self._events)
            action()


def burst(
    writers: int, policy: Policy, seed: int, costs: tuple[float, float, float]
) -> tuple[float, list[float], int, int, int]:
    """(wall seconds, latencies, successes, PUTs, GETs) of one burst."""
    model = Model(seed, costs)
    crowd = [Writer(model, policy, OPS[writers]) for _ in range(writers)]
    for writer in crowd:
        model.at(0.0, writer.start)
    model.run()
    latencies = [x for w in crowd for x in w.latencies]
    return model.now, latencies, sum(w.ok for w in crowd), model.server.puts, model.server.gets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench model", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--slow", action="store_true", help="requests three times as costly")
    parser.add_argument("--writers", default="2,4,16,64")
    parser.add_argument("--bursts", type=int, default=40)
    args = parser.parse_args(argv)
    costs = SLOW if args.slow else FAST
    print(f"model, GET/PUT/client ms {[round(c * 1000) for c in costs]}, {args.bursts} bursts")
    print("writers  policy        updates/s  p50 ms  p99 ms  PUT/update  CPU ms/update  success")
    for writers in (int(w) for w in args.writers.split(",")):
        for name, policy in POLICIES.items():
            wall, latencies, ok, puts, gets = 0.0, [], 0, 0, 0
            for seed in range(args.bursts):
                w, lat, o, p, g = burst(writers, policy, seed, costs)
                wall, ok, puts, gets = wall + w, ok + o, puts + p, gets + g
                latencies += lat
            latencies.sort()
            cpu = 1000 * (puts * costs[1] + gets * costs[0]) / ok
            p50 = 1000 * statistics.median(latencies)
            print(
                f"{writers:<8} {name:<13} {ok / wall:9.2f}  {p50:6.0f}"
                f"  {1000 * latencies[int(0.99 * len(latencies))]:6.0f}  {puts / ok:10.2f}"
                f"  {cpu:13.1f}  {ok / len(latencies):7.3f}"
            )
    return 0
