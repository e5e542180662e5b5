"""Median time per claim on the fake Placement vs the embedded real one.

Usage: ``python -m bench fake-vs-real [--claims N]``

Both backends are driven through the same public ``PlacementClient`` with the
microversion pinned, each claim a fresh consumer (one PUT), so the only
difference is what answers the request: the in-memory fake mounted as a
requests transport adapter, or the real openstack-placement served on a
loopback port from a thread. Prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections.abc import Callable

import reportclient
from bench.support.common import INVENTORY
from reportclient.fixture import FakePlacement, make_client
from reportclient.testing import EmbeddedPlacement, PlacementAdmin


def _time_claims(client: reportclient.PlacementClient, rp: str, claims: int) -> list[float]:
    latencies = []
    for _ in range(claims):
        consumer = str(uuid.uuid4())
        started = time.perf_counter()
        client.claim(consumer, {rp: {"VCPU": 1}}, project_id="bench", user_id="bench")
        latencies.append(time.perf_counter() - started)
    return latencies


def _measure(make: Callable[[], tuple[reportclient.PlacementClient, str]], claims: int) -> float:
    client, rp = make()
    _time_claims(client, rp, min(20, claims))  # warm up: imports, connections, caches
    return statistics.median(_time_claims(client, rp, claims))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench fake-vs-real", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--claims", type=int, default=300, help="claims per backend")
    args = parser.parse_args(argv)

    fake = FakePlacement()

    def on_fake() -> tuple[reportclient.PlacementClient, str]:
        rp = fake.create_provider(inventory=INVENTORY)
        return make_client(fake, microversion="1.39"), rp

    fake_median = _measure(on_fake, args.claims)
    with EmbeddedPlacement() as placement:

        def on_real() -> tuple[reportclient.PlacementClient, str]:
            rp = PlacementAdmin(placement.url).create_provider(inventory=INVENTORY)
            client = reportclient.PlacementClient.from_endpoint(
                placement.url, token=placement.token, microversion="1.39"
            )
            return client, rp

        real_median = _measure(on_real, args.claims)

    result = {
        "claims_per_backend": args.claims,
        "fake_median_ms": round(fake_median * 1000, 3),
        "real_median_ms": round(real_median * 1000, 3),
        "real_over_fake": round(real_median / fake_median, 1),
    }
    print(f"median time per fresh claim over {args.claims} claims (client included):")
    print(f"  fake Placement (reportclient.fixture)   {result['fake_median_ms']:8.3f} ms")
    print(f"  real Placement (embedded, in-process)   {result['real_median_ms']:8.3f} ms")
    print(f"  the fake is {result['real_over_fake']}x faster")
    print(json.dumps(result))
    return 0
