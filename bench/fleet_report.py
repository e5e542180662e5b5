"""The fleet bench's results as data, and the tables printed from them.

``python -m bench fleet`` measures :class:`bench.fleet.Cell` values (raw counts, latencies
and CPU seconds); this module reduces each to the figures its table row shows
(:func:`summarise`), and the tables, the results JSON and the figures
(:mod:`bench.figures.fleet`) are all made from those summaries. So a figure shows what the
table says, and ``python -m bench plot`` redraws it from the JSON alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.support.common import percentile

__all__ = ["render_fleet", "render_ratios", "starvation_line", "summarise"]

NOVA, NOVA_RC = "nova", "nova on reportclient"
Row = Mapping[str, Any]


@dataclass
class Cell:
    """What one phase x variant of the fleet run measured, before it is summarised."""

    status: Counter[tuple[str, int]]
    agent_periods: int
    cpu: float
    latencies: list[float]
    claim_latencies: list[float]
    failures: int
    claim_failures: int
    diffs: int
    overruns: int = 0
    late: float = 0.0


def _ms(values: list[float], q: float) -> float | None:
    return percentile(values, q) * 1000 if values else None


def summarise(phase: str, variant: str, cell: Cell) -> dict[str, Any]:
    """One table row's figures, per agent-period where the table divides."""
    periods = cell.agent_periods
    return {
        "phase": phase,
        "variant": variant,
        "agent_periods": periods,
        "requests_per_agent_period": sum(cell.status.values()) / periods,
        "by_status": [[m, s, k / periods] for (m, s), k in sorted(cell.status.items())],
        "conflicts": sum(k for (_m, s), k in cell.status.items() if s == 409),
        "placement_cpu_ms_per_agent_period": cell.cpu * 1000 / periods,
        "reconcile_p50_ms": _ms(cell.latencies, 50),
        "reconcile_p99_ms": _ms(cell.latencies, 99),
        "claim_p50_ms": _ms(cell.claim_latencies, 50),
        "claim_p99_ms": _ms(cell.claim_latencies, 99),
        "failed": cell.failures + cell.claim_failures,
        "diffs": cell.diffs,
        "overruns": cell.overruns,
        "max_late_s": cell.late,
    }


def _whole(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.0f}"


def render_fleet(rows: Sequence[Row], real: bool = False) -> list[str]:
    """The fleet table, a row per phase x variant (``real``: the overruns column too)."""
    head = (
        "| phase | variant | req/agent-period | by method and status | 409s "
        "| Placement CPU ms/agent-period | reconcile p50/p99 ms | claim p50/p99 ms "
        "| failed | read-back |"
    ) + (" overruns (max late s) |" if real else "")
    lines = [head, "|" + " --- |" * (11 if real else 10)]
    for r in rows:
        by = ", ".join(f"{m} {s}: {k:.2f}" for m, s, k in r["by_status"])
        claim = (
            f"{_whole(r['claim_p50_ms'])}/{_whole(r['claim_p99_ms'])}"
            if r["claim_p50_ms"] is not None
            else "-"
        )
        read_back = "ok" if r["diffs"] == 0 else f"{r['diffs']} DIFF"
        lines.append(
            f"| {r['phase']} | {r['variant']} | {r['requests_per_agent_period']:.2f} "
            f"| {by or '-'} | {r['conflicts']} | {r['placement_cpu_ms_per_agent_period']:.1f} "
            f"| {_whole(r['reconcile_p50_ms'])}/{_whole(r['reconcile_p99_ms'])} | {claim} "
            f"| {r['failed']} | {read_back} |"
            + (f" {r['overruns']} ({r['max_late_s']:.2f}) |" if real else "")
        )
    return lines


def render_ratios(
    rows: Sequence[Row], phases: Sequence[str], variant: str = NOVA_RC, base: str = NOVA
) -> list[str]:
    """Per phase, ``variant`` over ``base`` (nova's flow): requests and Placement CPU."""
    lines = [
        f"| phase | req/agent-period {variant} / {base} "
        f"| Placement CPU ms/agent-period {variant} / {base} |",
        "| --- | --- | --- |",
    ]
    cells = {(r["phase"], r["variant"]): r for r in rows}
    for phase in phases:
        ours, theirs = cells.get((phase, variant)), cells.get((phase, base))
        if ours is None or theirs is None:
            continue
        req = [c["requests_per_agent_period"] for c in (ours, theirs)]
        cpu = [c["placement_cpu_ms_per_agent_period"] for c in (ours, theirs)]

        def ratio(pair: list[float], digits: int) -> str:
            r = f"{pair[0] / pair[1]:.2f}" if pair[1] else "-"
            return f"{pair[0]:.{digits}f} / {pair[1]:.{digits}f} = {r}"

        lines.append(f"| {phase} | {ratio(req, 2)} | {ratio(cpu, 1)} |")
    return lines


STARVATION_HEAD = [
    "| claims/s | done/s | writer | writes | success | p50/p99 ms | requests/write "
    "| 409s/write | retries at once/write | backoff s/write | last write holds |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
]


def starvation_line(r: Row) -> str:
    """One starvation row as printed; nova's writers have no retry columns (``None``)."""

    def per(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    return (
        f"| {r['claims_per_s']} | {r['done_per_s']:.0f} | {r['writer']} | {r['writes']} "
        f"| {r['success']:.0%} | {_whole(r['p50_ms'])}/{_whole(r['p99_ms'])} "
        f"| {r['requests_per_write']:.2f} | {r['conflicts_per_write']:.2f} "
        f"| {per(r['retries_at_once_per_write'])} | {per(r['backoff_s_per_write'])} "
        f"| {'yes' if r['holds'] else 'NO'} |"
    )
