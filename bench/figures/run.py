"""``python -m bench run``'s figures, whichever of its shapes the results hold.

* one SQLite Placement (workload 4, ``results["contention"]["cells"]``): successful
  operations/s and p99 against threads, one consumer and one provider;
* the production shape (``--placement mariadb|postgresql``): fresh claims/s and Placement
  CPU per claim against threads; updates/s and p99 against writers on one consumer; the
  mixed cell's pair and claimers as bars;
* ``--shared``: updates/s and p99 against threads sharing one client;
* ``--galera``: fresh claims/s and p99 against threads, via HAProxy beside host 1 direct.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.figures.lines import against, order
from bench.figures.spec import Figure, Panel, Series, caption

__all__ = ["figures"]

Row = Mapping[str, Any]
P99 = "p99 latency (ms, log scale)"
KINDS = {
    "consumer": ("one consumer: every thread adds 1 VCPU", "successful updates/s"),
    "provider": ("one provider: a new consumer per claim", "successful claims/s"),
}


def _sqlite_contention(meta: Mapping[str, Any], cells: Sequence[Row]) -> Figure:
    panels: list[Panel] = []
    for kind, (title, unit) in KINDS.items():
        mine = [c for c in cells if c["kind"] == kind]
        if not mine:
            continue
        common: dict[str, Any] = {
            "x": "clients", "x_label": "threads (one client each)", "series": "client",
        }  # fmt: skip
        panels += [
            against(mine, key=f"{kind}-rate", title=title, value="ops_per_s", y_label=unit,
                    **common),
            against(mine, key=f"{kind}-p99", title=title, value="p99_ms", y_label=P99,
                    log_y=True, **common),
        ]  # fmt: skip
    return Figure(
        "contention",
        "Contention on one SQLite Placement: N threads, one client each",
        tuple(panels),
        caption(meta),
    )


def _claims(meta: Mapping[str, Any], rows: Sequence[Row], galera: bool) -> Figure:
    common: dict[str, Any] = {"x": "threads", "x_label": "threads sharing one client",
                              "series": "variant"}  # fmt: skip
    rate = against(rows, key="rate", title="throughput", value="claims_per_s",
                   y_label="successful claims/s", **common)  # fmt: skip
    if galera:
        second = against(rows, key="p99", title="latency", value="p99_ms", y_label=P99,
                         log_y=True, **common)  # fmt: skip
        title = "Fresh claims on three Galera nodes: through HAProxy beside host 1 direct"
    else:
        second = against(rows, key="cpu", title="what a claim costs Placement",
                         value="cpu_ms_per_claim", y_label="Placement CPU ms per claim",
                         **common)  # fmt: skip
        title = "Fresh claims on the production shape: one client shared by T threads"
    return Figure("galera" if galera else "fresh-claims", title, (rate, second), caption(meta))


def _writers(meta: Mapping[str, Any], rows: Sequence[Row], name: str, title: str,
             x_label: str) -> Figure:  # fmt: skip
    """Updates/s against writers, beside the p99 (or, in tables older than the p99 column,
    Placement CPU per update)."""
    common: dict[str, Any] = {"x": "writers", "x_label": x_label, "series": "variant"}
    rate = against(rows, key="rate", title="throughput", value="updates_per_s",
                   y_label="successful updates/s", **common)  # fmt: skip
    if all("p99_ms" in r for r in rows):
        second = against(rows, key="p99", title="latency, every update to its outcome",
                         value="p99_ms", y_label=P99, log_y=True, **common)  # fmt: skip
    else:
        cpu = "cpu_ms_per_success" if "cpu_ms_per_success" in rows[0] else "cpu_ms_per_update"
        second = against(rows, key="cpu", title="what an update costs Placement", value=cpu,
                         y_label="Placement CPU ms per successful update", **common)  # fmt: skip
    return Figure(name, title, (rate, second), caption(meta))


def _mixed(meta: Mapping[str, Any], rows: Sequence[Row]) -> Figure:
    variants = order(rows, "variant")
    found = {(r["variant"], r["group"]): r["ok_per_s"] for r in rows}
    shape = meta.get("sizes", {}).get("mixed") or {}
    groups = (
        ("pair", f"{shape.get('pair', 2)} writers, one consumer", "successful updates/s"),
        ("claimers", f"{shape.get('claimers', 14)} bare-PUT claimers beside them",
         "successful claims/s"),
    )  # fmt: skip
    return Figure(
        "mixed",
        "Mixed cell: a pair of writers on one consumer beside claims on the same provider",
        tuple(
            Panel(
                key=group,
                title=title,
                kind="bars",
                x_label="",
                y_label=unit,
                x=(group,),
                series=tuple(Series(v, (found.get((v, group)),)) for v in variants),
            )
            for group, title, unit in groups
        ),
        caption(meta),
    )


def figures(meta: Mapping[str, Any], results: Mapping[str, Any]) -> list[Figure]:
    """Every figure the results of one ``run`` can draw."""
    out: list[Figure] = []
    claims, contention = results.get("fresh_claims"), results.get("contention")
    if isinstance(contention, Mapping) and contention.get("cells"):
        out.append(_sqlite_contention(meta, contention["cells"]))
    if isinstance(claims, list) and claims:
        out.append(_claims(meta, claims, galera=meta.get("placement") == "galera"))
    if isinstance(contention, list) and contention:
        out.append(
            _writers(meta, contention, "contention",
                     "Contention on the production shape: W writers add 1 VCPU to one consumer",
                     "writers (one client each)")
        )  # fmt: skip
    if results.get("mixed"):
        out.append(_mixed(meta, results["mixed"]))
    if results.get("shared"):
        out.append(
            _writers(meta, results["shared"], "shared",
                     "Threads sharing one client, all adding 1 VCPU to one consumer",
                     "threads sharing one client")
        )  # fmt: skip
    return out
