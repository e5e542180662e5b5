"""The mixed cell: a contended pair of writers beside many threads claiming fresh consumers.

A compute node's consumer is rarely written by one party alone (the scheduler and the
compute service, the conductor and the compute service), and while two of them collide on
it, other schedulers keep claiming new instances on the same provider. Every allocation
write moves the provider's generation, so the pair's conflicts and the claims share one
row in Placement. The cell asks two questions at once: do the pair's retries (their
backoff, their extra reads) slow the claims down, and do the claims starve the pair?

One cell: ``pair`` writers (one client each) add 1 VCPU to one consumer while ``claimers``
threads (one client each, as separate schedulers are) claim fresh consumers on the same
provider, all released at one barrier. Whichever group finishes its operations first
stops the other starting new ones, so both groups' rates are measured over the time they
ran beside each other. Afterwards the consumer's VCPU is read back against the pair's
successful updates and the rest of the provider's usage against the successful claims:
a lost write in either group shows. Placement CPU is read for the cell as a whole (the
gunicorn workers serve both groups at once), so it is reported per successful operation of
either group.

The claimers are one background for every variant (``claimer``, the bare PUT in the
production shape): only the pair changes, so the pair's rows compare like with like and
the claimers' rows show what each pair costs the same claims. With each variant's own
claimers (MariaDB, 4 workers, 8 rounds) reportclient's pair made 2.3-2.9 updates/s to
nova's 3.9-4.1 at a p50 of 360 ms to 225 ms, because its claimers (one PUT each, 67
claims/s to nova's 58-60) kept Placement's queue fuller; beside the same claimers the
pairs made 4.2 and 4.1-4.3. How fast each client claims is the fresh-claims table's
question.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from bench.drivers.allocations import Driver
from bench.support.common import INVENTORY
from bench.workloads.contention import (
    Figure,
    Worker,
    group_result,
    interval,
    ok_per_s,
    rotations,
    run_groups,
    shared_consumer,
    summarise,
    vs_baseline,
)
from reportclient.testing import PlacementAdmin

PAIR, CLAIMERS = "pair", "claimers"


def mixed_cell(
    make_driver: Callable[[], Driver],
    make_claimer: Callable[[], Driver],
    sizes: dict[str, Any],
    admin: PlacementAdmin,
    meter: Callable[[], float],
) -> dict[str, Any]:
    """One mixed cell on a fresh provider: each group's figures and the cell's CPU."""
    rp = admin.create_provider(inventory=INVENTORY)
    shared = shared_consumer(admin, rp)
    pair = [Worker(make_driver()) for _ in range(sizes["pair"])]
    for worker in pair:
        worker.driver.warm(shared)
    claimers = [Worker(make_claimer()) for _ in range(sizes["claimers"])]
    (pair_wall, claim_wall), cpu = run_groups(
        [
            (pair, lambda driver: driver.update(shared, rp), sizes["pair_updates"]),
            (claimers, lambda driver: driver.claim(str(uuid.uuid4()), rp), sizes["claims"]),
        ],
        sizes["budget"],
        meter,
    )
    held = admin.get_allocations(shared)["allocations"].get(rp, {}).get("resources", {})
    pair_vcpu = held.get("VCPU", 0)
    total = admin.usages(rp).get("VCPU", 0)
    return {
        PAIR: group_result(pair, pair_wall, pair_vcpu, 1, len(pair) * sizes["pair_updates"]),
        CLAIMERS: group_result(
            claimers, claim_wall, total - pair_vcpu, 0, len(claimers) * sizes["claims"]
        ),
        "placement_cpu_s": cpu,
    }


def mixed(
    factories: dict[str, Callable[[], Driver]],
    claimer: Callable[[], Driver],
    admin: PlacementAdmin,
    meter: Callable[[], float],
    sizes: dict[str, Any],
    against: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """One row per (variant, group), summed over ``sizes["rounds"]`` interleaved cells.

    ``factories`` make each variant's pair; ``claimer`` makes the claimers beside every pair.
    ``against`` names the variant the others are set against, and its repeats (nova, nova
    again): each row then carries ``vs_nova``, its ok ops/s and the cell's Placement CPU per
    ok op as paired ratios with intervals (:func:`bench.workloads.contention.vs_baseline`).
    """
    cells: dict[str, list[dict[str, Any]]] = {name: [] for name in factories}
    for name in rotations(list(factories), sizes["rounds"]):
        cells[name].append(mixed_cell(factories[name], claimer, sizes, admin, meter))
    rows: list[dict[str, Any]] = []
    for name, done in cells.items():
        for group in (PAIR, CLAIMERS):
            row = summarise([c[group] for c in done])
            row.update(variant=name, group=group, cell_cpu_ms_per_ok=_cell_cpu(done))
            rows.append(row)
    figures: dict[str, Figure] = {
        "ok_per_s": ok_per_s,
        "cell_cpu_ms_per_ok": lambda rounds: _cell_cpu([c["cell"] for c in rounds]),
    }
    for group in (PAIR, CLAIMERS):
        found = vs_baseline(
            {name: [c[group] | {"cell": c} for c in done] for name, done in cells.items()},
            against,
            figures,
        )
        for row in rows:
            if row["group"] == group and row["variant"] in found:
                row["vs_nova"] = found[row["variant"]]
    return rows


def _cell_cpu(cells: list[dict[str, Any]]) -> float:
    """Placement CPU ms per ok op of whole mixed cells, both groups' ops counted."""
    ok = sum(c[group]["ok"] for c in cells for group in (PAIR, CLAIMERS))
    return 1000 * sum(c["placement_cpu_s"] for c in cells) / ok if ok else float("inf")


def mixed_targets(
    rows: list[dict[str, Any]], ours: str, nova: str, nova_control: str
) -> list[dict[str, Any]]:
    """The mixed cell's goals: nothing lost, the pair done, each group's rate beside nova's.

    nova ran twice (``nova_control``): both runs together are the estimate compared with,
    and the second over the first is the noise floor printed beside each comparison.
    """
    by = {(r["variant"], r["group"]): r for r in rows}
    out: list[dict[str, Any]] = []

    def add(target: str, goal: str, measured: Any, ok: bool | None) -> None:
        out.append({"target": f"mixed: {target}", "goal": goal, "measured": measured, "pass": ok})

    floor = by.get((nova_control, PAIR), {}).get("vs_nova")
    for group in (PAIR, CLAIMERS):
        mine = by.get((ours, group))
        if mine is None:
            continue
        add(f"{group} lost writes", "= 0", mine["lost_updates"], mine["lost_updates"] == 0)
        add(f"{group} success", "= 1.000", mine["success_rate"], mine["success_rate"] == 1.0)
        if "vs_nova" not in mine:
            continue
        found = mine["vs_nova"]["ok_per_s"]
        # At nova's or better, or not shown worse: the interval over rounds reaches it.
        goal = ">= 1.00, or its interval reaches it"
        add(f"{group} ok ops/s vs nova (both runs)", goal, interval(found), found[2] >= 1.0)
        again = by.get((nova_control, group), {}).get("vs_nova")
        if again is not None:
            add(
                f"(noise floor) {group} ops/s, nova again vs nova",
                "1.00",
                interval(again["ok_per_s"]),
                None,
            )
    mine = by.get((ours, PAIR))
    if mine is not None and "vs_nova" in mine:
        found = mine["vs_nova"]["cell_cpu_ms_per_ok"]
        goal = "<= 1.00, or its interval reaches it"
        add("Placement CPU per ok op vs nova (both runs)", goal, interval(found), found[1] <= 1.0)
        if floor is not None:
            add(
                "(noise floor) CPU per ok op, nova again vs nova",
                "1.00",
                interval(floor["cell_cpu_ms_per_ok"]),
                None,
            )
    return out


def mixed_table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Headers and rows for the printed mixed-cell table."""
    headers = [
        "variant",
        "group",
        "ok/ops",
        "success",
        "ok ops/s",
        "p50 ms",
        "p99 ms",
        "req/op",
        "CPU ms/ok op (cell)",
        "lost",
    ]
    return headers, [
        [
            r["variant"],
            r["group"],
            f"{r['ok']}/{r['ops']}",
            r["success_rate"],
            r["ok_per_s"],
            r["p50_ms"],
            r["p99_ms"],
            r["requests_per_op"],
            r["cell_cpu_ms_per_ok"],
            r["lost_updates"],
        ]
        for r in rows
    ]
