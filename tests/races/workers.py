"""What runs inside each spawned worker process: one client, many threads, every outcome logged.

A :class:`Plan` is sent to a process of the suite's spawn pool; the process builds its own
``PlacementClient`` (or, for the raw baseline and the "other writer", plain ``requests``
sessions, one per thread), runs each :class:`Phase` with all its threads released together,
and returns the :class:`~tests.races.checker.Op` every step reported. Nothing here asserts: the
checker judges the log once Placement has been read back.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from reportclient import (
    Allocations,
    ConsumerAllocations,
    OutcomeUnknown,
    PlacementClient,
    PlacementError,
    add_allocations,
    default_retry,
)
from tests.races.checker import OK, Allocs, Op

PROJECT = "project-races"
USER = "user-races"
TOKEN = "admin"  # the noauth2 user name
LATEST = "1.39"
#: Small waits so contention is retried quickly; the deadline bounds every operation.
RETRY = {"base": 0.01, "cap": 0.2, "deadline": 20.0}
#: Seconds per request (connect, read).
TIMEOUT = (5.0, 30.0)
_HEADERS = {"X-Auth-Token": TOKEN, "OpenStack-API-Version": f"placement {LATEST}"}


@dataclass(frozen=True)
class Step:
    """One operation: ``claim``, ``add``, ``release``, ``get`` (client) or ``raw_claim``,
    ``raw_empty`` (plain requests; ``generation`` is what the raw write carries)."""

    kind: str
    consumer: str
    allocs: Allocs = field(default_factory=dict)
    generation: int | None = None


@dataclass(frozen=True)
class Phase:
    """Threads that start together, each running its steps in order."""

    threads: list[list[Step]]


@dataclass(frozen=True)
class Plan:
    """Everything one process does, with one client shared by its threads."""

    url: str
    name: str
    phases: list[Phase]
    #: ``time.time()`` the first phase starts at, so processes start together.
    start_at: float
    #: ``time.time()`` after which no step starts: the wall-clock guard.
    deadline: float
    cache_ttl: float = 0.0


@dataclass
class Report:
    """What a process sends back: its operations, the answers its client received by request
    method, its client's log records by level (a WARNING per contended retry), and the steps the
    wall-clock guard kept from running."""

    ops: list[Op]
    requests: dict[str, int]
    logged: dict[str, int]
    not_run: int


class _Tally(logging.Handler):
    """Counts reportclient's log records by level instead of printing them from every process."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.counts: dict[str, int] = {}
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._guard:
            self.counts[record.levelname] = self.counts.get(record.levelname, 0) + 1


def request_id() -> str:
    """A fresh global request id: the fault proxy maps every request back to its operation."""
    return f"req-{uuid.uuid4()}"


def build_client(url: str, cache_ttl: float, counts: dict[str, int]) -> PlacementClient:
    """This process's client, counting the answers it receives by request method."""
    session = ks_session.Session(auth=token_endpoint.Token(url, TOKEN))
    guard = threading.Lock()

    def count(response: requests.Response, *args: Any, **kwargs: Any) -> None:
        method = response.request.method or "?"
        with guard:
            counts[method] = counts.get(method, 0) + 1

    session.session.hooks["response"].append(count)
    return PlacementClient.from_session(
        session,
        endpoint_override=url,
        pool_size=32,
        microversion=LATEST,
        retry=default_retry(**RETRY),
        cache_ttl=cache_ttl,
        timeout=TIMEOUT,
    )


def raw_body(allocs: Allocs, generation: int | None) -> dict[str, Any]:
    """A PUT /allocations body as another writer (not reportclient) sends it at 1.39."""
    return {
        "allocations": {rp: {"resources": res} for rp, res in allocs.items()},
        "consumer_generation": generation,
        "project_id": PROJECT,
        "user_id": USER,
        "consumer_type": "INSTANCE",
    }


def _raw_outcome(response: requests.Response) -> str:
    """A raw answer named as reportclient would type it, so both logs read alike."""
    if response.status_code < 300:
        return OK
    text = response.text
    if response.status_code == 409 and "placement.concurrent_update" in text:
        return "GenerationConflict"
    if response.status_code == 409 and "exceed the capacity" in text:
        return "CapacityExceeded"
    return f"HTTP {response.status_code}"


def _copy(allocs: Any) -> Allocs:
    return {rp: dict(res) for rp, res in allocs.items()}


def _client_step(
    client: PlacementClient, step: Step, rid: str, read: list[Allocs]
) -> tuple[Allocs, int | None]:
    """Run one client operation; return the state it reported (allocations, generation).

    An add appends to ``read`` every state its mutation was called on, so the checker can ask
    where the state the successful write replaced came from.
    """
    owner = {"project_id": PROJECT, "user_id": USER, "global_request_id": rid}
    if step.kind == "claim":
        state = client.claim(step.consumer, step.allocs, **owner)
    elif step.kind == "add":
        extra = add_allocations(step.allocs)

        def mutate(current: ConsumerAllocations) -> Allocations:
            read.append(_copy(current.allocations))
            return extra(current)

        state = client.update_allocations(step.consumer, mutate, **owner)
    elif step.kind == "release":
        client.release(step.consumer, global_request_id=rid)
        return {}, None
    elif step.kind == "get":
        state = client.get_allocations(step.consumer, global_request_id=rid)
    else:
        raise ValueError(f"unknown step {step.kind}")
    return _copy(state.allocations), state.generation


def describe(exc: BaseException) -> str:
    """The error and the one it was raised from or while handling (a lost write's answer)."""
    inner = exc.__cause__ or exc.__context__
    text = str(exc) if inner is None else f"{exc} <- {type(inner).__name__}: {inner}"
    return text[:800]


def run_step(
    client: PlacementClient | None, http: requests.Session, url: str, step: Step, who: str
) -> Op:
    """Run one step and log what it reported, whatever happened."""
    rid = request_id()
    start = time.monotonic()
    result = sent = generation = None
    read: list[Allocs] = []
    detail = ""
    try:
        if step.kind.startswith("raw_"):
            body = raw_body(step.allocs, step.generation)
            target = f"{url}/allocations/{step.consumer}"
            headers = {**_HEADERS, "X-Openstack-Request-Id": rid}
            response = http.put(target, json=body, headers=headers, timeout=TIMEOUT)
            outcome = _raw_outcome(response)
            result = step.allocs if outcome == OK else None
            detail = "" if outcome == OK else response.text[:300]
        else:
            assert client is not None
            result, generation = _client_step(client, step, rid, read)
            outcome = OK
    except OutcomeUnknown as exc:
        outcome, detail = type(exc).__name__, describe(exc)
        sent = _copy(exc.sent.allocations)
    except PlacementError as exc:
        outcome, detail = type(exc).__name__, describe(exc)
    except requests.RequestException as exc:  # a raw step's lost answer: uncertain
        outcome, detail = f"raw {type(exc).__name__}", repr(exc)[:300]
    except Exception as exc:  # logged as a violation by the checker, never swallowed silently
        outcome, detail = f"untyped:{type(exc).__name__}", repr(exc)[:300]
    return Op(
        kind=step.kind,
        consumer=step.consumer,
        args=step.allocs,
        outcome=outcome,
        start=start,
        end=time.monotonic(),
        worker=who,
        request_id=rid,
        result=result,
        generation=generation,
        sent=sent,
        read=read[-1] if read else None,
        detail=detail,
    )


def _run_threads(
    threads: list[list[Step]], work: Callable[[int, list[Step]], None], timeout: float
) -> None:
    barrier = threading.Barrier(len(threads))

    def run(index: int, steps: list[Step]) -> None:
        barrier.wait(timeout)
        work(index, steps)

    started = [
        threading.Thread(target=run, args=(i, s), name=f"races-{i}", daemon=True)
        for i, s in enumerate(threads)
    ]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join(timeout)


def run_plan(plan: Plan) -> Report:
    """Entry point in the worker process: run every phase of ``plan`` and report."""
    counts: dict[str, int] = {}
    tally = _Tally()
    logger = logging.getLogger("reportclient")
    logger.addHandler(tally)
    logger.propagate = False
    every = [step for phase in plan.phases for thread in phase.threads for step in thread]
    needs_client = any(not step.kind.startswith("raw_") for step in every)
    client = build_client(plan.url, plan.cache_ttl, counts) if needs_client else None
    ops: list[Op] = []
    lock = threading.Lock()
    not_run = 0
    time.sleep(max(0.0, plan.start_at - time.time()))
    try:
        for number, phase in enumerate(plan.phases):

            def work(index: int, steps: list[Step], number: int = number) -> None:
                nonlocal not_run
                who = f"{plan.name}/p{number}/t{index}"
                with requests.Session() as http:
                    for step in steps:
                        if time.time() > plan.deadline:
                            with lock:
                                not_run += 1
                            continue
                        op = run_step(client, http, plan.url, step, who)
                        with lock:
                            ops.append(op)

            _run_threads(phase.threads, work, max(1.0, plan.deadline - time.time() + 60.0))
    finally:
        logger.removeHandler(tally)
        logger.propagate = True
    return Report(ops, counts, tally.counts, not_run)
