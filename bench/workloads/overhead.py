"""Workload 5: the library's own CPU time per call, with the transport stubbed out.

A null ``requests`` adapter mounted on the keystoneauth1 Session answers every request
with an empty 204 without touching a socket. The same Session serves both sides:
``PlacementClient.claim`` and a bare ``keystoneauth1.adapter.Adapter.put`` of the same
body. What remains of the difference is reportclient's own work (validation, retry loop,
body building, cache). Blocks of calls are timed with ``time.process_time``, variants
alternate block by block, and the median block is reported.

The cached update runs on a client with ``cache_ttl=60`` that claimed the consumer just
before the block, so it is one PUT, like the claim. (With the default ``cache_ttl=0`` an
update reads first, and the null transport's empty GET would show the consumer missing.)
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import requests
from keystoneauth1 import adapter as ks_adapter
from requests.structures import CaseInsensitiveDict

from bench.drivers.allocations import TTL
from bench.support.common import MICROVERSION, PROJECT, USER, make_adapter
from reportclient import PlacementClient, add_allocations

_URL = "http://placement.invalid"
_REQUEST_ID = "req-00000000-0000-4000-8000-000000000000"
RESOURCES = {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40}
CLAIM = "reportclient claim"
UPDATE = f"reportclient update (cached, ttl {TTL:g})"
BASE = "keystoneauth1 Adapter.put"


class NullAdapter(requests.adapters.BaseAdapter):
    """A transport that answers 204 No Content to everything, instantly."""

    def send(self, request: Any, *args: Any, **kwargs: Any) -> requests.Response:
        """Build the reply a PUT /allocations gets, without I/O."""
        resp = requests.Response()
        resp.status_code = 204
        resp.reason = "No Content"
        resp.headers = CaseInsensitiveDict(
            {"openstack-request-id": _REQUEST_ID, "Content-Length": "0"}
        )
        resp._content = b""
        resp._content_consumed = True
        resp.request = request
        resp.url = request.url
        resp.connection = self
        return resp

    def close(self) -> None:
        """Nothing to close."""


def _stubbed_adapter() -> ks_adapter.Adapter:
    adapter = make_adapter(_URL, "admin", adapter_class=ks_adapter.Adapter)
    raw = adapter.session.session  # the requests.Session under keystoneauth1
    raw.mount("http://", NullAdapter())
    raw.mount("https://", NullAdapter())
    return adapter


def _median_us(samples: list[float], per_block: int) -> float:
    return statistics.median(samples) / per_block * 1e6


def measure(per_block: int, repeats: int) -> dict[str, Any]:
    """Median CPU microseconds per call for each variant, and the ratios to the bare PUT."""
    adapter = _stubbed_adapter()
    client = PlacementClient(adapter, microversion=MICROVERSION)
    trusting = PlacementClient(adapter, microversion=MICROVERSION, cache_ttl=TTL)
    raw = adapter.session.session
    rp = str(uuid.uuid4())
    allocations = {rp: RESOURCES}
    headers = {"X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {MICROVERSION}"}

    def body() -> dict[str, Any]:
        return {
            "allocations": {rp: {"resources": dict(RESOURCES)}},
            "consumer_generation": None,
            "project_id": PROJECT,
            "user_id": USER,
            "consumer_type": "INSTANCE",
        }

    def claim(c: str) -> None:
        client.claim(c, allocations, project_id=PROJECT, user_id=USER)

    def claim_trusting(c: str) -> None:
        trusting.claim(c, allocations, project_id=PROJECT, user_id=USER)

    def update(c: str) -> None:
        # The consumer was claimed by this client before the block: a cached update.
        trusting.update_allocations(
            c, add_allocations({rp: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
        )

    def bare_ks(c: str) -> None:
        adapter.put(f"/allocations/{c}", json=body(), microversion=MICROVERSION)

    def bare_requests(c: str) -> None:
        raw.put(f"{_URL}/allocations/{c}", json=body(), headers=headers)

    variants: dict[str, Callable[[str], None]] = {
        CLAIM: claim,
        UPDATE: update,
        BASE: bare_ks,
        "requests.Session.put": bare_requests,
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for c in [str(uuid.uuid4()) for _ in range(50)]:  # warm-up: imports, regex caches
        claim(c)
        claim_trusting(c)
        update(c)
        bare_ks(c)
        bare_requests(c)
    for r in range(repeats + 1):
        names = list(variants)
        if r % 2:
            names.reverse()
        for name in names:
            consumers = [str(uuid.uuid4()) for _ in range(per_block)]
            if name == UPDATE:
                for c in consumers:
                    claim_trusting(c)
            func = variants[name]
            began = time.process_time()
            for c in consumers:
                func(c)
            if r:  # repeat 0 is a warm-up
                samples[name].append(time.process_time() - began)
    base_name = BASE
    # Ratios are paired per repeat (blocks run back to back), then the median is taken:
    # steadier than a ratio of medians when the machine's speed drifts.
    ratios = {
        name: statistics.median(a / b for a, b in zip(s, samples[base_name], strict=True))
        for name, s in samples.items()
    }
    us = {name: _median_us(s, per_block) for name, s in samples.items()}
    return {
        "per_block": per_block,
        "repeats": repeats,
        "timer": "time.process_time",
        "cpu_us_per_call": us,
        "ratio_to_ks_put": ratios,
        "library_us_per_claim": us[CLAIM] - us[base_name],
        "library_us_per_update": us[UPDATE] - us[base_name],
    }
