"""Workloads 1-3 against the real Placement: fresh claims, updates of known consumers, the
shelve race.

Variants are interleaved in rounds (A B C, B C A, ...) so drift on a shared machine hits
all of them alike; every figure compared is measured in the same run.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.drivers.allocations import CONSUMER_TYPE, RC_TTL_NAME, Driver
from bench.support.common import PROJECT, USER, WireCounter, latency_ms, percentile
from reportclient.testing import PlacementAdmin


@dataclass
class Tally:
    """What one variant did over all its rounds."""

    latencies: list[float] = field(default_factory=list)
    elapsed: float = 0.0
    ok: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    server: Counter[str] = field(default_factory=Counter)
    client: Counter[str] = field(default_factory=Counter)
    consumers: list[str] = field(default_factory=list)

    def summary(self, per: str) -> dict[str, Any]:
        """Throughput, latency and requests per operation, server- and client-side."""
        ops = self.ok + sum(self.errors.values())
        server_total = sum(self.server.values())
        return {
            "ops": ops,
            "ok": self.ok,
            "errors": dict(self.errors),
            f"{per}_per_s": self.ok / self.elapsed if self.elapsed else 0.0,
            **latency_ms(self.latencies),
            f"requests_per_{per}": server_total / ops if ops else 0.0,
            f"requests_per_{per}_by_method": {m: n / ops for m, n in self.server.items()},
            f"client_requests_per_{per}": sum(self.client.values()) / ops if ops else 0.0,
        }


def _chunks(items: Sequence[str], parts: int) -> list[Sequence[str]]:
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return out


def run_interleaved(
    drivers: Sequence[Driver],
    jobs: dict[str, Sequence[str]],
    action: Callable[[Driver, str], None],
    rounds: int,
    wire: WireCounter,
    setup: dict[str, Callable[[Driver, Sequence[str]], None]] | None = None,
) -> dict[str, Tally]:
    """Run ``action(driver, consumer)`` over each driver's consumers, round-robin.

    ``setup[name](driver, consumers)``, when given, runs unmeasured (and uncounted) just
    before that driver's chunk of each round.
    """
    tallies = {d.name: Tally() for d in drivers}
    parts = {d.name: _chunks(jobs[d.name], rounds) for d in drivers}
    for r in range(rounds):
        shift = r % len(drivers)
        for driver in [*drivers[shift:], *drivers[:shift]]:
            tally = tallies[driver.name]
            if setup and driver.name in setup:
                setup[driver.name](driver, parts[driver.name][r])
            position = wire.mark()
            before = Counter(driver.wire.counts)
            began = time.perf_counter()
            for consumer in parts[driver.name][r]:
                start = time.perf_counter()
                try:
                    action(driver, consumer)
                except Exception as exc:  # counted and shown, never fatal to the run
                    tally.errors[type(exc).__name__] += 1
                    continue
                tally.latencies.append(time.perf_counter() - start)
                tally.ok += 1
                tally.consumers.append(consumer)
            tally.elapsed += time.perf_counter() - began
            tally.server.update(r.method for r in wire.since(position))
            tally.client.update(driver.wire.counts - before)
    return tallies


def _warm_up(drivers: Sequence[Driver], rp: str, count: int = 3) -> None:
    """A few unmeasured claims: connection pools, imports and caches settle first."""
    for driver in drivers:
        for _ in range(count):
            driver.claim(str(uuid.uuid4()), rp)


def fresh_claims(
    drivers: Sequence[Driver], rp: str, n: int, rounds: int, wire: WireCounter
) -> dict[str, Any]:
    """Workload 1: each driver claims ``n`` new consumers on one provider."""
    _warm_up(drivers, rp)
    jobs = {d.name: [str(uuid.uuid4()) for _ in range(n)] for d in drivers}
    tallies = run_interleaved(drivers, jobs, lambda d, c: d.claim(c, rp), rounds, wire)
    result: dict[str, Any] = {
        "n": n,
        "rounds": rounds,
        "variants": {name: t.summary("claim") for name, t in tallies.items()},
    }
    result["consumers"] = {name: t.consumers for name, t in tallies.items()}
    return result


def cached_updates(
    drivers: Sequence[Driver],
    consumers: dict[str, list[str]],
    rp: str,
    n: int,
    rounds: int,
    wire: WireCounter,
    claim_first: Sequence[str] = (),
) -> dict[str, Any]:
    """Workload 2: each driver adds one VCPU to ``n`` consumers it claimed itself.

    ``consumers`` holds each driver's own from workload 1. The drivers named in
    ``claim_first`` instead claim new consumers, unmeasured, just before each of their
    rounds: a client trusting its cache for a few seconds is measured within them.
    """
    jobs: dict[str, Sequence[str]] = {
        d.name: (
            [str(uuid.uuid4()) for _ in range(n)]
            if d.name in claim_first
            else consumers[d.name][:n]
        )
        for d in drivers
    }

    def claim_all(driver: Driver, chunk: Sequence[str]) -> None:
        for consumer in chunk:
            driver.claim(consumer, rp)

    tallies = run_interleaved(
        drivers,
        jobs,
        lambda d, c: d.update(c, rp),
        rounds,
        wire,
        setup=dict.fromkeys(claim_first, claim_all),
    )
    return {
        "n": min(len(j) for j in jobs.values()),
        "rounds": rounds,
        "variants": {name: t.summary("update") for name, t in tallies.items()},
    }


#: Workload 3's reportclient rows: the default client reads first, so the other writer's
#: delete lands before its GET; the trusting client writes from its cache at once.
RACE_RC = "reportclient: writer before its GET"
RACE_RC_TTL = f"{RC_TTL_NAME}: writer before its PUT"
RACE_NOVA_BETWEEN = "nova: writer between its GET and PUT"
RACE_NOVA_BEFORE = "nova: writer before its GET"


@dataclass
class _Race:
    label: str
    driver: Driver
    inject: bool
    requests: list[int] = field(default_factory=list)
    server_requests: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    recovered: int = 0
    state_ok: int = 0
    errors: Counter[str] = field(default_factory=Counter)


def _delete_consumer(admin: PlacementAdmin, consumer: str) -> None:
    """The other writer: an empty PUT at generation 1 deletes the consumer (shelve offload)."""
    resp = admin.put_allocations(
        consumer,
        {
            "allocations": {},
            "consumer_generation": 1,
            "project_id": PROJECT,
            "user_id": USER,
            "consumer_type": CONSUMER_TYPE,
        },
    )
    if resp.status_code != 204:
        raise RuntimeError(f"other writer's PUT failed: {resp.status_code} {resp.text[:200]}")


def shelve_race(
    variants: Sequence[tuple[str, Driver, bool]],
    admin: PlacementAdmin,
    rp: str,
    n: int,
    wire: WireCounter,
) -> dict[str, Any]:
    """Workload 3: claim, another writer deletes the consumer, claim again.

    ``variants`` are ``(label, driver, inject)``. With ``inject`` the other writer acts just
    before the client's next PUT, i.e. after whatever the client last read (for a client that
    reads before writing, between its GET and its PUT); without it, before the claim starts.
    Only the second claim's requests are counted (client side, and server side minus the
    other writer's one request), and its time excludes the other writer's request.
    """
    races = [_Race(label, driver, inject) for label, driver, inject in variants]
    for _ in range(n):
        for race in races:
            _one_race(race, admin, rp, wire)
    out: dict[str, Any] = {"n": n, "variants": {}}
    for race in races:
        out["variants"][race.label] = {
            "recovered": race.recovered,
            "of": n,
            "state_correct": race.state_ok,
            "errors": dict(race.errors),
            "requests_median": percentile(race.requests, 50),
            "requests_min": min(race.requests, default=0),
            "requests_max": max(race.requests, default=0),
            "server_requests_mean": sum(race.server_requests) / len(race.server_requests),
            **latency_ms(race.seconds),
        }
    return out


def _one_race(race: _Race, admin: PlacementAdmin, rp: str, wire: WireCounter) -> None:
    consumer = str(uuid.uuid4())
    driver = race.driver
    driver.claim(consumer, rp)  # the consumer exists at generation 1 and the client saw it
    if race.inject:
        driver.wire.before_put = lambda: _delete_consumer(admin, consumer)
    else:
        _delete_consumer(admin, consumer)
    hook_before = driver.wire.hook_seconds
    position = wire.mark()
    before = Counter(driver.wire.counts)
    began = time.perf_counter()
    try:
        driver.claim(consumer, rp)
    except Exception as exc:  # nova raises AllocationUpdateFailed here; that is the result
        race.errors[type(exc).__name__] += 1
        ok = False
    else:
        ok = True
    race.seconds.append(time.perf_counter() - began - (driver.wire.hook_seconds - hook_before))
    fired = race.inject and driver.wire.before_put is None
    driver.wire.before_put = None
    race.requests.append(sum((driver.wire.counts - before).values()))
    race.server_requests.append(wire.count_since(position) - (1 if fired else 0))
    if ok:
        race.recovered += 1
        state = admin.get_allocations(consumer)
        held = state.get("allocations", {}).get(rp, {}).get("resources")
        if state.get("consumer_generation") == 1 and held == {"VCPU": 1}:
            race.state_ok += 1
