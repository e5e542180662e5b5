"""Workload 6: memory of the consumer cache, each measurement in its own child process.

``python -m bench memory MODE N`` is the child :func:`run` starts (``run`` calls it for its
workload 6); it prints one JSON object. ``bytes`` fills a ``ConsumerCache`` under tracemalloc
and splits the bytes per consumer into key, entry tuple, unshared ints and the container's own
share. ``rss`` fills a cache of bound N to N entries and reports the peak RSS (``ru_maxrss``)
of the child.

This is the one bench module that imports a private module,
``reportclient._gateway.consumer_cache``: the cache is the object measured (its entries, their
tuple and its container's share), and no public name holds one. A ``PlacementClient`` would
add its transport, engine and pool to the figure this exists to isolate.

States are realistic: one provider, VCPU / MEMORY_MB / DISK_GB from a few flavors, one
project and user shared by all, consumer uuids as ``str``; amounts above 256 are fresh
``int`` objects per consumer, as JSON parsing or arithmetic would make them.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The checkout's root, where ``python -m bench`` finds this package.
ROOT = Path(__file__).resolve().parents[1]
_FLAVORS = [(1, 2, 20), (2, 4, 40), (4, 8, 80), (8, 16, 160)]  # vcpu, GiB, disk GB
_RP = str(uuid.uuid4())
_PROJECT = uuid.uuid4().hex
_USER = uuid.uuid4().hex


def _consumer(rand: random.Random) -> str:
    return str(uuid.UUID(int=rand.getrandbits(128), version=4))


def _state(rand: random.Random) -> Any:
    from reportclient import ConsumerAllocations

    vcpu, gib, disk = _FLAVORS[rand.randrange(len(_FLAVORS))]
    return ConsumerAllocations(
        consumer_uuid=_consumer(rand),
        allocations={_RP: {"VCPU": vcpu, "MEMORY_MB": gib * 1024, "DISK_GB": disk}},
        generation=rand.randint(1, 3),
        project_id=_PROJECT,
        user_id=_USER,
        consumer_type="INSTANCE",
    )


def _traced_per_entry(n: int, fill: Callable[[int], Any]) -> tuple[float, Any]:
    """Bytes still allocated per entry after ``fill(n)``, and what it returned."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = fill(n)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / n, kept


def _fill_cache(n: int) -> Any:
    from reportclient._gateway.consumer_cache import ConsumerCache

    rand = random.Random(1)
    cache = ConsumerCache(n)
    for _ in range(n):
        cache.put(_state(rand))
    return cache


def child_bytes(n: int) -> dict[str, Any]:
    """tracemalloc bytes per cached consumer and where they go."""
    # imported before tracing: module code is not cache memory
    import reportclient._gateway.consumer_cache

    per_entry, cache = _traced_per_entry(n, _fill_cache)
    entries = cache._entries
    key = next(iter(entries))
    entry = entries[key]
    key_size = sys.getsizeof(key)
    tuple_size = sys.getsizeof(entry)
    ints = sum(sys.getsizeof(x) for x in entry if type(x) is int and not -5 <= x <= 256)
    breakdown = {
        "consumer uuid str (dict key)": key_size,
        f"entry tuple ({len(entry)} slots)": tuple_size,
        "unshared ints (amounts > 256)": ints,
        "dict slot (rest)": per_entry - key_size - tuple_size - ints,
    }
    del cache, entries
    return {
        "n": n,
        "bytes_per_consumer": per_entry,
        "breakdown": breakdown,
        "module": reportclient._gateway.consumer_cache.__name__,
    }


def _status_bytes(field: str) -> int:
    """A ``VmHWM``/``VmRSS`` line of /proc/self/status in bytes (0 where there is none)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _maxrss_bytes() -> int:
    # Linux reports ru_maxrss in KiB. It survives fork+exec, so a child starts with its
    # parent's peak; VmHWM (per address space) is the child's own peak.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child_rss(n: int) -> dict[str, Any]:
    """Peak RSS of this process after filling a cache bounded at ``n`` with ``n`` entries."""
    import reportclient._gateway.consumer_cache  # noqa: F401 - counted in the baseline, not in the fill

    baseline = _status_bytes("VmHWM") or _maxrss_bytes()
    began = time.perf_counter()
    cache = _fill_cache(n)
    fill_seconds = time.perf_counter() - began
    peak = _status_bytes("VmHWM") or _maxrss_bytes()
    return {
        "n": n,
        "entries": len(cache),
        "baseline_rss_bytes": baseline,
        "peak_rss_bytes": peak,
        "ru_maxrss_bytes": _maxrss_bytes(),
        "delta_bytes_per_consumer": (peak - baseline) / n,
        "fill_seconds": fill_seconds,
    }


def run(mode: str, n: int, timeout: float = 240.0) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter and return what it printed."""
    # ``-m bench`` from the checkout's root: the child imports this package and the
    # checkout's reportclient, as the parent does.
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "memory", mode, str(n)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"memory child {mode} {n} failed: {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    """Child entry point: ``MODE N``; prints one JSON object."""
    parser = argparse.ArgumentParser(
        prog="python -m bench memory", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "mode",
        choices=["bytes", "rss"],
        help="bytes: tracemalloc bytes per consumer and their split; rss: peak RSS of the child",
    )
    parser.add_argument("n", type=int, help="consumers to cache")
    args = parser.parse_args(argv)
    result = child_bytes(args.n) if args.mode == "bytes" else child_rss(args.n)
    print(json.dumps(result))
    return 0
