"""One client shared by many scheduler threads."""

from __future__ import annotations

import re
import threading

import requests_mock

import reportclient
from reportclient._gateway.consumer_cache import ConsumerCache
from tests.support.answers import NO_CONTENT, allocations_body
from tests.support.wire import PROJECT, URL, USER, new_uuid

THREADS = 8
CLAIMS_PER_THREAD = 25


def test_threads_claiming_distinct_consumers_through_one_client(wire, client, rp):
    wire.put(requests_mock.ANY, **NO_CONTENT)
    # the second claim of each consumer reads first: it holds the first claim
    wire.get(
        re.compile(re.escape(URL) + "/allocations/"),
        json=allocations_body({rp: {"VCPU": 1}}, 1),
    )
    consumers = [[new_uuid() for _ in range(CLAIMS_PER_THREAD)] for _ in range(THREADS)]
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []

    def worker(mine: list[str]) -> None:
        start.wait(timeout=10)
        try:
            for c in mine:
                client.claim(c, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
                client.claim(c, {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
        except BaseException as exc:  # collected, then asserted below
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(mine,)) for mine in consumers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    assert failures == []
    methods = [r.method for r in wire.request_history]
    assert methods.count("PUT") == 2 * THREADS * CLAIMS_PER_THREAD
    assert methods.count("GET") == THREADS * CLAIMS_PER_THREAD
    for mine in consumers:
        for c in mine:
            state = client.cached(c)
            assert state is not None
            assert state.generation == 2
            assert state.allocations == {rp: {"VCPU": 2}}


def test_cache_stays_bounded_under_concurrent_writers():
    cache = ConsumerCache(maxsize=50)
    start = threading.Barrier(4)

    def worker() -> None:
        start.wait(timeout=10)
        for _ in range(200):
            cache.put(reportclient.ConsumerAllocations(new_uuid(), {}, 1))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    stats = cache.stats()
    assert stats.size == 50
    assert stats.evictions == 800 - 50
