"""The saturation bench's results as data, and the table printed from them.

``python -m bench saturation`` measures each cell's operations (:class:`Row`: a tally, the
requests its client sent, its retry budget); :meth:`Row.summary` reduces one to the figures
its table row shows, and the table (:func:`render_database`), the results JSON and the
figure (:mod:`bench.figures.saturation`) are all made from those summaries.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.support.common import percentile

if TYPE_CHECKING:
    from bench.saturation import Tally

__all__ = ["Row", "Spent", "capacity_line", "render_database", "row_cells", "spent", "table"]


@dataclass(frozen=True)
class Spent:
    """What one client's retry budget charged, allowed, gave back and refused in a cell.

    ``allowed`` is the most the budget could charge in one window:
    ``ratio x first attempts + floor x window``. Every client of a cell is
    made for it and the cell (with its warm-up) is shorter than the window,
    so all of its first attempts and retries fall in one window.
    """

    charged: int
    allowed: float
    refunded: int
    refused: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "charged": self.charged,
            "allowed": self.allowed,
            "refunded": self.refunded,
            "refused": self.refused,
        }


def spent(client: Any) -> Spent | None:
    """The client's budget so far (None for nova's client, or a client without one)."""
    budget = getattr(getattr(client, "_core", None), "budget", None)
    if budget is None:
        return None
    stats = budget.stats()
    allowed = budget.ratio * stats.first_attempts + budget.floor * budget.window
    return Spent(stats.retries - stats.refunded, allowed, stats.refunded, stats.refused)


def _ms(values: list[float], q: float) -> float | None:
    return percentile(values, q) * 1000 if values else None


def _whole(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.0f}"


@dataclass
class Row:
    """One line of the table: one kind of operation in one cell."""

    kind: str
    factor: float
    what: str
    begun: int
    tally: Tally
    counts: Counter[str]
    budget: Spent | None

    @property
    def retries_per_first(self) -> float:
        """Writes sent beyond one per operation begun, per operation begun."""
        writes = self.counts["PUT"] + self.counts["POST"]
        return max(writes - self.tally.begun, 0) / max(self.tally.begun, 1)

    def summary(self, goodput: float, cpu_per_write: float, cores: float) -> dict[str, Any]:
        """The row's figures, with its cell's (goodput, CPU per write, cores) beside them."""
        done = self.tally.done
        return {
            "client": self.kind,
            "factor": self.factor,
            "operation": self.what,
            "begun": self.begun,
            "done": len(done),
            "p50_ms": _ms(done, 50),
            "p99_ms": _ms(done, 99),
            "requests_per_success": sum(self.counts.values()) / max(len(done), 1),
            "retries_per_first": self.retries_per_first,
            "goodput_per_s": goodput,
            "cpu_ms_per_write": cpu_per_write * 1000,
            "cores": cores,
            "errors": dict(sorted(self.tally.errors.items())),
            "budget": self.budget.as_dict() if self.budget is not None else None,
        }


def row_cells(r: dict[str, Any]) -> list[str]:
    """One row of the table, as printed, from :meth:`Row.summary`."""
    budget = r["budget"]
    return [
        r["client"],
        f"{r['factor']:g}x",
        r["operation"],
        str(r["begun"]),
        f"{r['done'] / max(r['begun'], 1):.0%}",
        f"{_whole(r['p50_ms'])}/{_whole(r['p99_ms'])}",
        f"{r['requests_per_success']:.2f}",
        f"{r['retries_per_first']:.2f}",
        f"{r['goodput_per_s']:.1f}",
        f"{r['cpu_ms_per_write']:.1f}",
        f"{r['cores']:.2f}",
        ", ".join(f"{k} {v}" for k, v in r["errors"].items()) or "-",
        *(
            [f"{budget['charged']}/{budget['allowed']:.0f}",
             f"{budget['refunded']}/{budget['refused']}"]
            if budget is not None
            else ["-", "-"]
        ),
    ]  # fmt: skip


HEADERS = [
    "client",
    "load",
    "operation",
    "offered/begun",
    "success",
    "p50/p99 ms",
    "requests/success",
    "retries/first",
    "goodput/s",
    "CPU ms/write",
    "Placement cores",
    "errors",
    "budget charged/allowed",
    "budget refunded/refused",
]


def table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)]
    rule = "  ".join("=" * w for w in widths)
    line = [rule, "  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True)), rule]
    line += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return [*line, rule]


def capacity_line(db: dict[str, Any]) -> str:
    """The line above a database's table: its capacity, noise floor and the agents' pace."""
    (first, second), (cores0, cores1) = db["capacity"], db["cores"]
    line = (
        f"{db['database']}, {db['workers']} gunicorn workers: capacity "
        f"{first:.1f} and {second:.1f} fresh claims/s "
        f"(reportclient, {db['claim_threads']} threads closed loop; noise floor "
        f"{db['noise_floor']:.0%}; Placement cores {cores0:.2f} and {cores1:.2f}); agents "
        + (f"begin a write every {db['pace']:g} s" if db["pace"] else "write back to back")
    )
    if db["nova_capacity"] is not None:
        line += f"; nova {db['nova_capacity']:.1f}"
    return line


def render_database(db: dict[str, Any]) -> list[str]:
    """A database's capacity line and table, from :func:`run_database`'s results."""
    return [capacity_line(db), "", *table([row_cells(r) for r in db["rows"]])]
