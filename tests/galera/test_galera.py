"""Placement on three Galera nodes behind HAProxy: every mode x fault, four workloads each.

Each cell runs the claims/adds/releases race, the one-consumer adds, the provider side
(agents, operators, schedulers) and racing moves at once, through a tracing proxy in front of
HAProxy, while one fault is injected and recovered: a Galera node SIGKILLed and rejoined by
IST, a node cut out of the primary component and healed, a Placement host SIGKILLed (with
requests in flight, or right after a write committed and before its answer left), HAProxy
made to fail over, the chaos suite's lost answers, or nothing (in round-robin mode that is
where certification conflicts between nodes happen). Then everything is read back from every
node and judged. The table (printed when the module ends; ``-s`` shows it) has a row per
mode x fault x workload; any broken invariant fails the cell. What Placement itself broke,
proven from its own log and rows (:mod:`tests.galera.findings`), is counted in the
``placement`` column and listed under the table instead; it fails nothing.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import pytest

from reportclient.testing import ROUND_ROBIN, SINGLE_WRITER, GaleraPlacement, PlacementAdmin
from tests.galera.artifacts import artifacts_root, keep_failure
from tests.galera.faults import KILL_AFTER_COMMIT, GaleraProxy, Injector
from tests.galera.findings import cleaned_up, late_writes, retried_requests
from tests.galera.matrix import HEADERS, Cell, arrange, judge, rows, run_workloads
from tests.races.checker import table

pytestmark = pytest.mark.functional

FAULTS = (
    "none",
    "kill galera node",
    "node leaves primary",
    "kill placement host",
    KILL_AFTER_COMMIT,
    "haproxy failover",
    "lost answers",
)
#: What Placement's log says when it answers 500: the exception's first words.
_UNEXPECTED = re.compile(r"Placement API unexpected error: (.{0,90})")


@pytest.fixture(scope="module")
def matrix() -> Iterator[dict[str, object]]:
    """Rows of the table and what the hosts logged, printed when the module ends."""
    found: dict[str, object] = {
        "rows": [], "server errors": Counter(), "findings": [], "started": time.time(),
    }  # fmt: skip
    yield found
    print("\n\nGalera: mode x fault x workload, judged on every node")
    print(table(HEADERS, found["rows"]))  # type: ignore[arg-type]
    rows: list[list[object]] = found["rows"]  # type: ignore[assignment]

    def column(name: str) -> int:
        return sum(int(str(row[HEADERS.index(name)])) for row in rows)

    counts = ", ".join(f"{h} {column(h)}" for h in ("applied twice", "lost", "clobbered",
                                                      "resurrected"))  # fmt: skip
    consistent = sum(row[HEADERS.index("nodes consistent")] == "yes" for row in rows)
    print(f"totals: {len(rows)} rows; {counts}; nodes consistent {consistent}/{len(rows)}; "
          f"placement findings {column('placement')}")  # fmt: skip
    print("\nPlacement-side findings (doc/source/galera.rst), with their evidence:")
    for line in found["findings"] or ["  none"]:  # type: ignore[attr-defined]
        print(f"  {line}")
    errors: Counter[str] = found["server errors"]  # type: ignore[assignment]
    print("\nPlacement's 500s by cause (from the hosts' logs):")
    for (mode, fault, cause), n in sorted(errors.items()):
        print(f"  {mode:13} {fault:24} {n:4}  {cause}")
    print(f"\nmatrix: {time.time() - float(found['started']):.0f} s")  # type: ignore[arg-type]


def _certification(cluster: GaleraPlacement) -> int:
    total = 0
    for index in range(cluster.galera.size):
        status = cluster.galera.status(index)
        total += int(status.get("wsrep_local_cert_failures", 0))
        total += int(status.get("wsrep_local_bf_aborts", 0))
    return total


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("mode", [SINGLE_WRITER, ROUND_ROBIN])
def test_galera_keeps_every_invariant(
    pool: ProcessPoolExecutor,
    galera: GaleraPlacement,
    matrix: dict[str, object],
    mode: str,
    fault: str,
) -> None:
    started = time.monotonic()
    if galera.mode != mode:
        galera.use_mode(mode)
    galera.wait_settled()
    seed = abs(hash((mode, fault))) % 10_000
    with PlacementAdmin(galera.url, galera.token, timeout=60.0) as admin:
        setup = arrange(admin, seed)
    cell = Cell(mode, fault, setup)
    logs_before = [len(host.read_log()) for host in galera.hosts]
    certified_before = _certification(galera)
    assert galera.haproxy is not None
    with GaleraProxy(galera.haproxy.port, galera) as proxy:
        injector = Injector(fault, galera, proxy)
        injector.start()
        try:
            run_workloads(pool, proxy.url, setup, seed, cell)
        finally:
            injector.stop()
        cell.window = injector.window
        cell.injected_proxy = proxy.injected()
        hops = list(proxy.hops)
    galera.wait_settled()
    cell.cert_failures = _certification(galera) - certified_before
    logs = [
        host.read_log()[offset:] for host, offset in zip(galera.hosts, logs_before, strict=True)
    ]
    cell.retried = retried_requests(logs)
    cell.cleanups = cleaned_up(logs)
    hosts = [host.name for host in galera.hosts]
    cell.late = late_writes(cell.consumer_ops, hops, list(zip(hosts, logs, strict=True)))
    judge(galera, cell)
    if cell.evidence:  # what it takes to explain the failure later, before the cluster goes
        try:
            where, story = keep_failure(artifacts_root(os.environ), galera, cell, logs, hops, seed)
        except Exception as exc:  # the judge's evidence must still be shown
            cell.evidence.insert(0, f"artifacts not written: {exc!r}")
        else:
            print(f"\n{story}")
            cell.evidence.insert(0, f"artifacts: {where}")
    cell.seconds = time.monotonic() - started

    errors: Counter[str] = matrix["server errors"]  # type: ignore[assignment]
    for host, offset in zip(galera.hosts, logs_before, strict=True):
        for cause in _UNEXPECTED.findall(host.read_log()[offset:]):
            errors[(mode, fault, re.sub(r"[0-9a-f-]{36}", "<uuid>", cause))] += 1
    mine = rows(cell)
    matrix["rows"].extend(mine)  # type: ignore[attr-defined]
    findings: list[str] = matrix["findings"]  # type: ignore[assignment]
    findings.extend(f"{mode} / {fault}: {line}" for line in cell.finding_lines)
    print(f"\n{mode} / {fault}: {cell.seconds:.1f} s")
    print(table(HEADERS, mine))

    if fault not in ("none", "lost answers"):
        assert cell.window.events == 1, "the fault was never injected"
    assert not cell.evidence, "\n".join(cell.evidence)
    assert cell.consistent
