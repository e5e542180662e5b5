"""Provider and move workloads, run inside a spawned worker process (like tests/races/workers.py).

One process plays a small cloud's control plane at once, each role in its own threads and all
through one client: *agents* reconcile their own two-provider tree again and again with a
growing VCPU total (``merge=True``: they never remove what operators added), *operators* add
standard traits and aggregates to those providers, *schedulers* claim fresh consumers on them,
and two *movers* race to move the same pre-claimed consumers to the same migration records.
Every call sends its own global request id and is logged as a :class:`POp`; nothing asserts
here.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from reportclient import OutcomeUnknown, PlacementError, ProviderSpec
from tests.races.workers import PROJECT, USER, build_client, describe, request_id

#: Standard traits the operators add, one per step (no ensure_trait needed).
TRAITS = (
    "HW_CPU_X86_AVX",
    "HW_CPU_X86_AVX2",
    "HW_CPU_X86_SSE",
    "HW_CPU_X86_SSE2",
    "HW_CPU_X86_SSE41",
    "HW_CPU_X86_SSE42",
    "HW_CPU_X86_AESNI",
    "HW_CPU_X86_F16C",
)
#: VCPU total of an agent's first reconcile; each later one adds one.
BASE_TOTAL = 64


@dataclass(frozen=True)
class POp:
    """One provider-side or move operation as its client reported it.

    ``subject`` is the provider (or the move's source), ``value`` what was asked: a trait, an
    aggregate uuid, a VCPU total, the claim's provider, or the move's target.
    """

    kind: str
    subject: str
    value: Any
    outcome: str
    start: float
    end: float
    request_id: str
    detail: str = ""


@dataclass(frozen=True)
class ProviderPlan:
    """What the provider process does; ``trees`` are ``(root, child)`` uuid pairs."""

    url: str
    trees: list[tuple[str, str]]
    aggregates: list[str]
    claims: list[tuple[str, str]]  # (consumer, provider)
    moves: list[tuple[str, str]]  # (source, target), raced by two movers
    reconciles: int
    start_at: float
    deadline: float


def _call(kind: str, subject: str, value: Any, fn: Any) -> POp:
    rid = request_id()
    start = time.monotonic()
    outcome, detail = "ok", ""
    try:
        fn(rid)
    except OutcomeUnknown as exc:
        outcome, detail = type(exc).__name__, describe(exc)
    except PlacementError as exc:
        outcome, detail = type(exc).__name__, describe(exc)
    except Exception as exc:  # a violation for the checker, never swallowed silently
        outcome, detail = f"untyped:{type(exc).__name__}", repr(exc)[:300]
    return POp(kind, subject, value, outcome, start, time.monotonic(), rid, detail)


def run_providers(plan: ProviderPlan) -> list[POp]:
    """Entry point in the worker process: every role's threads at once; every op's record."""
    counts: dict[str, int] = {}
    # Each contended retry logs a WARNING; the checker, not stderr, reports what happened.
    logger = logging.getLogger("reportclient")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    client = build_client(plan.url, 0.0, counts)
    providers = client.providers
    ops: list[POp] = []
    lock = threading.Lock()

    def log(op: POp) -> None:
        with lock:
            ops.append(op)

    def agent(root: str, child: str, n: int) -> None:
        for k in range(plan.reconciles):
            total = BASE_TOTAL + k
            specs = [
                ProviderSpec(root, f"galera-root-{root[:8]}", inventories={"VCPU": total}),
                ProviderSpec(child, f"galera-child-{child[:8]}", parent=root,
                             inventories={"VCPU": total}),
            ]  # fmt: skip
            op = _call(
                "reconcile",
                root,
                total,
                lambda rid, s=specs: providers.reconcile(s, merge=True, global_request_id=rid),
            )
            log(op)

    def operator(index: int) -> None:
        rps = [rp for tree in plan.trees for rp in tree]
        for k, trait in enumerate(TRAITS):
            rp = rps[(k + index) % len(rps)]
            if index == 0:
                log(_call("add_trait", rp, trait,
                          lambda rid, rp=rp, t=trait: providers.add_traits(
                              rp, [t], global_request_id=rid)))  # fmt: skip
            else:
                agg = plan.aggregates[k % len(plan.aggregates)]
                log(_call("add_aggregate", rp, agg,
                          lambda rid, rp=rp, a=agg: providers.add_aggregates(
                              rp, [a], global_request_id=rid)))  # fmt: skip

    def scheduler(claims: list[tuple[str, str]]) -> None:
        for consumer, rp in claims:
            log(_call("claim", consumer, rp,
                      lambda rid, c=consumer, rp=rp: client.claim(
                          c, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER,
                          global_request_id=rid)))  # fmt: skip

    def mover(pairs: list[tuple[str, str]]) -> None:
        for source, target in pairs:
            log(_call("move", source, target,
                      lambda rid, s=source, t=target: client.move_allocations(
                          s, t, global_request_id=rid)))  # fmt: skip

    threads = [
        *(threading.Thread(target=agent, args=(r, c, i)) for i, (r, c) in enumerate(plan.trees)),
        *(threading.Thread(target=operator, args=(i,)) for i in range(2)),
        *(threading.Thread(target=scheduler, args=(plan.claims[i::2],)) for i in range(2)),
        *(threading.Thread(target=mover, args=(plan.moves,)) for _ in range(2)),
    ]
    time.sleep(max(0.0, plan.start_at - time.time()))
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        thread.join(max(1.0, plan.deadline - time.time() + 60.0))
    with lock:
        return list(ops)
