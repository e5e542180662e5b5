"""Benchmark the library's newer surface against nova's report client; print tables, write JSON.

Usage: ``python -m bench surface [--quick] [--json PATH] [--plot DIR] [--quiet]``

Against the real Placement (``placement_server()``: a child process, SQLite on tmpfs), side
by side with nova's ``SchedulerReportClient`` when nova imports (otherwise reportclient only,
with a note), requests per operation as the server counted them and time per operation:

1. a move: ``PlacementClient.move_allocations(instance, migration)`` vs nova's
   ``move_allocations(context, source, target)``; each on a fresh instance claimed beforehand
   (unmeasured) and a new migration consumer;
2. an allocation-candidates query (VCPU:1, MEMORY_MB:512, a required trait) over a handful of
   providers, half of them with the trait;
3. a provider tree (root: VCPU, MEMORY_MB, two traits, an aggregate; child: a custom
   resource class) brought to a description: created, then unchanged, then with one
   inventory total changed. reportclient: ``client.providers.reconcile(specs)`` (default
   ``cache_ttl=0`` and ``cache_ttl=60``); nova: ``get_provider_tree_and_ensure_root`` then
   ``update_from_provider_tree`` as its resource tracker does (see
   ``bench.drivers.surface.NovaSurfaceDriver``).

Variants take turns in rounds (order rotated every round) so drift hits all alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from bench.drivers.allocations import TTL, nova_for
from bench.drivers.surface import (
    CUSTOM_RC,
    CUSTOM_TRAIT,
    LIMIT,
    QUERY,
    TRAIT,
    RcSurfaceDriver,
    Tree,
    nova_drivers,
)
from bench.support.common import (
    PROJECT,
    USER,
    WireCounter,
    emit,
    identity,
    latency_ms,
    output_options,
    percentile,
    placement_server,
    quiet_logging,
    results_parser,
    run_meta,
    server_description,
)
from bench.support.progress import Progress
from bench.support.tables import errors_cell, header, table
from reportclient.testing import PlacementAdmin, RequestRecord

PHASES = ("create", "unchanged", "changed")
FULL = {"move_n": 300, "candidates_n": 600, "trees": 40, "rounds": 10, "providers": 8}
QUICK = {"move_n": 24, "candidates_n": 40, "trees": 4, "rounds": 4, "providers": 8}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SHORT = {"resource_providers": "rp", "allocations": "alloc", "resource_classes": "rc"}


class Cell:
    """Successful operations' durations and server-side requests, plus failures by type."""

    def __init__(self) -> None:
        """Empty."""
        self.seconds: list[float] = []
        self.cpu: list[float] = []
        self.requests: list[int] = []
        self.sequences: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.results: Counter[str] = Counter()
        self.state_ok = 0

    def timed(self, wire: WireCounter, op: Callable[[], Any]) -> Any:
        """Run ``op``; keep its time and the requests the server saw during it."""
        position = wire.mark()
        began, cpu = time.perf_counter(), time.process_time()
        try:
            result = op()
        except Exception as exc:  # a failure is a figure of the benchmark, not a crash
            self.errors[type(exc).__name__] += 1
            return None
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
        seen = wire.since(position)
        self.seconds.append(elapsed)
        self.cpu.append(cpu)
        self.requests.append(len(seen))
        self.sequences[", ".join(_short(r) for r in seen)] += 1
        return result

    def summary(self) -> dict[str, Any]:
        """Figures for the table and the JSON."""
        ok = len(self.seconds)
        sequence, count = self.sequences.most_common(1)[0] if ok else ("", 0)
        return {
            "ok": ok,
            "ops": ok + sum(self.errors.values()),
            "requests_per_op": sum(self.requests) / ok if ok else math.nan,
            "requests_min": min(self.requests, default=None),
            "requests_max": max(self.requests, default=None),
            **latency_ms(self.seconds),
            # This process only: the server runs in another, so this is the client's CPU.
            "client_cpu_p50_ms": percentile(self.cpu, 50) * 1000,
            "sequence": sequence,
            "sequence_share": count / ok if ok else 0.0,
            "state_ok": self.state_ok,
            "results": dict(self.results),
            "errors": dict(self.errors),
        }


def _short(record: RequestRecord) -> str:
    parts = [_SHORT.get(p, p) for p in _UUID.sub("*", record.path).strip("/").split("/")]
    query = "?" + record.query.split("=", 1)[0] if record.query else ""
    return f"{record.method} {'/'.join(parts)}{query}"


def _rotated(items: Sequence[Any], turn: int) -> list[Any]:
    k = turn % len(items)
    return [*items[k:], *items[:k]]


def moves(
    drivers: Sequence[Any], admin: PlacementAdmin, n: int, rounds: int, wire: WireCounter
) -> dict[str, Any]:
    """Workload 1: each op moves a fresh instance's claim to a new migration consumer."""
    big = {"total": 10_000_000, "max_unit": 10_000_000}
    rp = admin.create_provider(inventory={"VCPU": big, "MEMORY_MB": big})
    cells = {d.name: Cell() for d in drivers}
    per_round = math.ceil(n / rounds)
    for turn in range(rounds):
        for driver in _rotated(drivers, turn):
            pairs = [(str(uuid.uuid4()), str(uuid.uuid4())) for _ in range(per_round)]
            for instance, _ in pairs:  # claimed beforehand, not measured
                body = {
                    "allocations": {rp: {"resources": QUERY}},
                    "consumer_generation": None,
                    "project_id": PROJECT,
                    "user_id": USER,
                    "consumer_type": "INSTANCE",
                }
                if admin.put_allocations(instance, body).status_code != 204:
                    raise RuntimeError("could not claim an instance for a move")
            cell = cells[driver.name]
            for instance, migration in pairs:
                cell.timed(wire, functools.partial(driver.move, instance, migration))
                moved = admin.get_allocations(migration).get("allocations", {})
                left = admin.get_allocations(instance).get("allocations", {})
                if not left and moved.get(rp, {}).get("resources") == QUERY:
                    cell.state_ok += 1
    return {"n": per_round * rounds, "variants": {k: c.summary() for k, c in cells.items()}}


def candidates(
    drivers: Sequence[Any], admin: PlacementAdmin, sizes: dict[str, Any], wire: WireCounter
) -> dict[str, Any]:
    """Workload 2: the same candidates query, over ``providers`` roots, half with the trait."""
    with_trait = 0
    for i in range(sizes["providers"]):
        rp = admin.create_provider(inventory={"VCPU": {"total": 16}, "MEMORY_MB": {"total": 8192}})
        if i % 2 == 0:
            generation = admin.provider(rp)["generation"]
            body = {"resource_provider_generation": generation, "traits": [TRAIT]}
            if (
                admin.request("PUT", f"/resource_providers/{rp}/traits", json=body).status_code
                != 200
            ):
                raise RuntimeError("could not set a trait")
            with_trait += 1
    for driver in drivers:
        driver.query(dict(QUERY), TRAIT)
    cells = {d.name: Cell() for d in drivers}
    per_round = math.ceil(sizes["candidates_n"] / sizes["rounds"])
    for turn in range(sizes["rounds"]):
        for driver in _rotated(drivers, turn):
            cell = cells[driver.name]
            for _ in range(per_round):
                found = cell.timed(wire, driver.candidates)
                if found is not None:
                    cell.results[str(found)] += 1
                    cell.state_ok += found == with_trait
    return {
        "n": per_round * sizes["rounds"],
        "providers": sizes["providers"],
        "with_trait": with_trait,
        "query": {"resources": QUERY, "required": [TRAIT], "limit": LIMIT},
        "variants": {k: c.summary() for k, c in cells.items()},
    }


def reconcile(
    drivers: Sequence[Any], admin: PlacementAdmin, n: int, rounds: int, wire: WireCounter
) -> dict[str, Any]:
    """Workload 3: per tree, a create, an unchanged and a changed (VCPU 16 -> 32) sync."""
    # Both clients ensure the custom names on every create anyway; made here so that
    # whichever variant runs first does not pay for their first creation.
    admin.request("PUT", f"/traits/{CUSTOM_TRAIT}")
    admin.request("PUT", f"/resource_classes/{CUSTOM_RC}")
    cells = {(d.name, p): Cell() for d in drivers for p in PHASES}
    per_round = math.ceil(n / rounds)
    for turn in range(rounds):
        trees = {d.name: [Tree.new() for _ in range(per_round)] for d in drivers}
        for phase in PHASES:
            for driver in _rotated(drivers, turn):
                for tree in trees[driver.name]:
                    wanted = dataclasses.replace(tree, vcpu=32) if phase == "changed" else tree
                    driver.prepare_sync()
                    cells[(driver.name, phase)].timed(wire, functools.partial(driver.sync, wanted))
                    if _tree_ok(admin, wanted):
                        cells[(driver.name, phase)].state_ok += 1
    return {
        "n": per_round * rounds,
        "phases": list(PHASES),
        "variants": {d.name: {p: cells[(d.name, p)].summary() for p in PHASES} for d in drivers},
    }


def _tree_ok(admin: PlacementAdmin, tree: Tree) -> bool:
    def get(path: str) -> Any:
        return admin.request("GET", path).json()

    rp = f"/resource_providers/{tree.root}"
    child = admin.request("GET", f"/resource_providers/{tree.child}")
    return (
        {k: v["total"] for k, v in admin.inventory(tree.root).items()}
        == {"VCPU": tree.vcpu, "MEMORY_MB": 8192}
        and set(get(f"{rp}/traits")["traits"]) == set(tree.traits)
        and get(f"{rp}/aggregates")["aggregates"] == [tree.aggregate]
        and child.status_code == 200
        and child.json()["parent_provider_uuid"] == tree.root
        and {k: v["total"] for k, v in admin.inventory(tree.child).items()} == {CUSTOM_RC: 4}
    )


def _rows(
    variants: dict[str, dict[str, Any]], extra: Callable[[dict[str, Any]], Any], label: str = ""
) -> list[list[Any]]:
    """One row per variant; ``extra(cell)`` is the column before the errors."""
    nova = variants.get("nova")
    rows = []
    for name, v in variants.items():
        ratio = v["p50_ms"] / nova["p50_ms"] if nova and nova["ok"] else math.nan
        span = f"{v['requests_min']}-{v['requests_max']}" if v["ok"] else "-"
        figures = [v["requests_per_op"], span, v["p50_ms"], v["p99_ms"], v["mean_ms"], ratio]
        figures.append(v["client_cpu_p50_ms"])
        rows.append(
            [
                f"{label}{name}",
                f"{v['ok']}/{v['ops']}",
                *figures,
                extra(v),
                errors_cell(v["errors"]),
            ]
        )
    return rows


def _state(cell: dict[str, Any]) -> str:
    return f"{cell['state_ok']}/{cell['ok']}"


HEAD = ["ok/ops", "req/op", "req range", "p50 ms", "p99 ms", "mean ms", "p50 x nova", "cpu ms"]


def render(meta: dict[str, Any], results: dict[str, Any]) -> list[str]:
    """The printed report."""
    out = [
        *header(
            "reportclient surface benchmarks (moves, allocation candidates, provider reconcile)",
            meta,
        ),
        f"server: {meta['server']}",
        f"nova: {meta['nova_note']}",
        "req = requests the server saw; p50/p99/mean = wall time per operation; cpu ms = the "
        "client's own CPU per operation (median; the server runs in another process)",
    ]
    w1, w2, w3 = results["move"], results["candidates"], results["reconcile"]
    out += ["", f"[1] Move an instance's allocations to a new migration consumer (n={w1['n']})"]
    out += table(["variant", *HEAD, "state ok", "errors"], _rows(w1["variants"], _state))
    out += [
        "",
        f"[2] Allocation candidates: VCPU:1, MEMORY_MB:512, required {TRAIT}, limit {LIMIT}; "
        f"{w2['providers']} providers, {w2['with_trait']} with the trait (n={w2['n']})",
    ]
    rows = _rows(w2["variants"], lambda v: "/".join(v["results"]) or "-")
    out += table(["variant", *HEAD, "candidates", "errors"], rows)
    out += [
        "",
        f"[3] Provider tree sync, {w3['n']} trees per variant: create, then unchanged, then "
        "one inventory total changed (root VCPU 16 -> 32)",
    ]
    rows = []
    for phase in w3["phases"]:
        by_variant = {name: phases[phase] for name, phases in w3["variants"].items()}
        rows += _rows(by_variant, _state, f"{phase:<9} ")
    out += table(["phase / variant", *HEAD, "state ok", "errors"], rows)
    out += ["", "requests the server saw (most common sequence per operation; * = a uuid)"]
    for title, cells in (
        ("move", w1["variants"]),
        ("candidates", w2["variants"]),
        *((phase, {n: p[phase] for n, p in w3["variants"].items()}) for phase in w3["phases"]),
    ):
        for name, cell in cells.items():
            share = "" if cell["sequence_share"] == 1 else f" ({cell['sequence_share']:.0%} of ops)"
            out.append(f"  {title:<10} {name:<21} {cell['sequence'] or '-'}{share}")
    return out


def build_parser() -> argparse.ArgumentParser:
    """``python -m bench surface``'s options."""
    parser = results_parser("surface", __doc__, "surface.json", "small counts, about a minute")
    output_options(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the three workloads, print the tables, write the JSON."""
    args = build_parser().parse_args(argv)
    began = time.perf_counter()
    quiet_logging()
    sizes: dict[str, int] = QUICK if args.quick else FULL
    meta: dict[str, Any] = {**run_meta(args.quick, sizes), **identity("surface", argv)}
    report = nova_for(meta, "not compared", "NOTE")
    with placement_server() as server:
        meta["server"] = server_description(server)
        url, token = server.url, server.token
        admin = PlacementAdmin(url, token)
        wire = WireCounter(server)
        rc = RcSurfaceDriver(url, token)
        rc_ttl = RcSurfaceDriver(url, token, cache_ttl=TTL)
        rc_128 = RcSurfaceDriver(url, token, microversion="1.28")
        nova = nova_drivers(report, url, token) if report is not None else {}
        workloads: dict[str, Callable[[list[Any]], dict[str, Any]]] = {
            "move": lambda ds: moves(ds, admin, sizes["move_n"], sizes["rounds"], wire),
            "candidates": lambda ds: candidates(ds, admin, sizes, wire),
            "reconcile": lambda ds: reconcile(ds, admin, sizes["trees"], sizes["rounds"], wire),
        }
        results: dict[str, Any] = {}
        progress = Progress("surface", len(workloads), "workloads", quiet=args.quiet)
        for name, run in workloads.items():
            progress.begin(name)
            extra = {"move": [rc_128], "reconcile": [rc_ttl]}.get(name, [])
            results[name] = run([rc, *extra, *nova.get(name, [])])
        admin.close()
    meta["wall_seconds"] = time.perf_counter() - began
    return emit(render(meta, results), meta, results, args.json, args.plot, args.quiet)
