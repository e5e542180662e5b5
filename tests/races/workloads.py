"""Workloads shared by the plain race tests and the chaos tests (which run them through a proxy).

Each arranges fresh providers and consumers with raw admin calls, runs its plans on the spawn
pool against ``url`` (the cluster, or a fault proxy in front of it), reads everything back from
the cluster itself, and returns the :class:`~tests.races.checker.Checker` holding the verdict.
"""

from __future__ import annotations

import random
from concurrent.futures import ProcessPoolExecutor

from reportclient.testing import PlacementAdmin
from tests.races.checker import Checker
from tests.races.runner import PROCESSES, THREADS, deal, new_id, providers, run
from tests.races.workers import Phase, Step, raw_body

#: Workload 2: adds of one VCPU each, from every thread of every process, to one consumer.
ADDS = 64
BASE = {"VCPU": 1}
#: Workload 4: the storm's consumers, processes, and steps per thread.
STORM_CONSUMERS = 16
STORM_PROCESSES = 3
STORM_STEPS = 8
#: Kinds of the storm's steps and how often each is drawn.
STORM_MIX = {"claim": 35, "add": 40, "release": 25}


def same_consumer_adds(pool: ProcessPoolExecutor, url: str, admin: PlacementAdmin) -> Checker:
    """Claim one consumer, then 4 processes x 4 threads add one VCPU each, 64 times in all."""
    (rp,) = providers(admin, 1, 256)
    consumer = new_id()
    response = admin.put_allocations(consumer, raw_body({rp: dict(BASE)}, None))
    assert response.status_code == 204, response.text
    checker = Checker(admin, [rp])
    checker.created.add(consumer)
    steps = [Step("add", consumer, {rp: {"VCPU": 1}}) for _ in range(ADDS)]
    per_process = [[Phase(deal(mine, THREADS))] for mine in deal(steps, PROCESSES)]
    run(pool, url, per_process, checker, name="add")
    checker.read_back()
    checker.check_adds(consumer, {rp: dict(BASE)}, base_generation=1)
    return checker


def storm(pool: ProcessPoolExecutor, url: str, admin: PlacementAdmin, seed: int) -> Checker:
    """Claims, adds and releases drawn at random on 16 consumers from 3 processes x 4 threads."""
    rps = providers(admin, 2, 512)
    consumers = [new_id() for _ in range(STORM_CONSUMERS)]
    rng = random.Random(seed)
    kinds = rng.choices(
        list(STORM_MIX), weights=list(STORM_MIX.values()), k=STORM_PROCESSES * THREADS * STORM_STEPS
    )
    steps = [
        Step(
            kind, rng.choice(consumers), {} if kind == "release" else {rng.choice(rps): {"VCPU": 1}}
        )
        for kind in kinds
    ]
    checker = Checker(admin, rps)
    per_process = [[Phase(deal(mine, THREADS))] for mine in deal(steps, STORM_PROCESSES)]
    run(pool, url, per_process, checker, name="storm")
    checker.read_back()
    checker.check_registers()
    return checker
