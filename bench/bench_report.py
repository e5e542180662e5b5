"""Turn the results into the printed table and the list of targets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bench_common import mark

BASE = "bare PUT"
GETPUT = "bare GET+PUT"
RC = "reportclient"


def _fmt(value: Any, digits: int = 2) -> str:
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A left-aligned first column and right-aligned figures."""
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(row: Sequence[str]) -> str:
        first = row[0].ljust(widths[0])
        rest = (str(c).rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))
        return "  ".join([first, *rest])

    return [line([str(h) for h in headers]), line(["-" * w for w in widths])] + [
        line(r) for r in cells
    ]


def _errors(errors: dict[str, int]) -> str:
    return ", ".join(f"{k}x{v}" for k, v in errors.items()) or "-"


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with its measured figure and whether it was met."""
    out: list[dict[str, Any]] = []

    def add(name: str, target: str, measured: float | None, ok: bool | None) -> None:
        out.append({"target": name, "goal": target, "measured": measured, "pass": ok})

    w1 = results.get("fresh_claims", {}).get("variants", {})
    if RC in w1:
        rc = w1[RC]
        add(
            "requests per fresh claim",
            "= 1.00",
            rc["requests_per_claim"],
            abs(rc["requests_per_claim"] - 1) < 1e-9,
        )
        for floor, goal in ((BASE, 0.95), (GETPUT, 1.25)):
            ratio = rc["claim_per_s"] / w1[floor]["claim_per_s"]
            add(f"fresh-claim throughput vs {floor}", f">= {goal:.2f}x", ratio, ratio >= goal)
    w2 = results.get("cached_updates", {}).get("variants", {})
    if RC in w2:
        value = w2[RC]["requests_per_update"]
        add("requests per cached update", "= 1.00", value, abs(value - 1) < 1e-9)
    w3 = results.get("shelve_race", {}).get("variants", {})
    if RC in w3:
        race = w3[RC]
        ok = race["recovered"] == race["of"] and race["requests_min"] == race["requests_max"] == 3
        add("requests per shelve-race recovery", "= 3", race["requests_median"], ok)
    w5 = results.get("overhead")
    if w5:
        ratio = w5["ratio_to_ks_put"]["reportclient claim"]
        add("claim CPU vs bare keystoneauth1 PUT (stubbed)", "<= 1.15x", ratio, ratio <= 1.15)
    w6 = results.get("memory", {}).get("bytes")
    if w6:
        value = w6["bytes_per_consumer"]
        add("cache bytes per consumer", "<= 300", value, value <= 300)
    return out


def _rate_table(
    variants: dict[str, Any], unit: str, base_name: str, ratio_header: str
) -> list[str]:
    """Rate, ratio to ``base_name``, latency and requests per ``unit`` for each variant."""
    base = variants[base_name][f"{unit}_per_s"]
    rows = [
        [
            name,
            v[f"{unit}_per_s"],
            v[f"{unit}_per_s"] / base,
            v["p50_ms"],
            v["p99_ms"],
            v[f"requests_per_{unit}"],
            _errors(v["errors"]),
        ]
        for name, v in variants.items()
    ]
    headers = ["variant", f"{unit}s/s", ratio_header, "p50 ms", "p99 ms", f"req/{unit}", "errors"]
    return table(headers, rows)


def render(meta: dict[str, Any], results: dict[str, Any]) -> list[str]:
    """The whole printed report."""
    out = [
        "reportclient benchmarks",
        f"machine: {meta['cpu_model']}, {meta['cores']} cores, Python {meta['python']}, "
        f"openstack-placement {meta['placement']}, keystoneauth1 {meta['keystoneauth1']}, "
        f"reportclient {meta['reportclient']}, nova {meta.get('nova') or '-'}",
        f"mode: {meta['mode']}   started: {meta['started']}",
    ]
    if meta.get("server"):
        out.append(
            f"server (workloads 1-4): {meta['server']}; startup {meta['server_startup_s']:.1f} s"
        )
    if meta.get("nova_note"):
        out.append(f"nova: {meta['nova_note']}")
    w1 = results.get("fresh_claims")
    if w1:
        out += [
            "",
            f"[1] Fresh claims: one client, new consumers, 1 provider "
            f"(n={w1['n']} per variant, {w1['rounds']} interleaved rounds; "
            "requests counted by the server)",
        ]
        out += _rate_table(w1["variants"], "claim", BASE, "x bare PUT")
    w2 = results.get("cached_updates")
    if w2:
        out += ["", f"[2] Updates of known consumers (+1 VCPU each; n={w2['n']} per variant)"]
        out += _rate_table(w2["variants"], "update", GETPUT, "x GET+PUT")
    w3 = results.get("shelve_race")
    if w3:
        out += [
            "",
            f"[3] Shelve race: claim; another writer deletes the consumer; claim "
            f"again (n={w3['n']}); the second claim's requests and time (other writer's "
            "request excluded; includes reportclient's backoff sleep)",
        ]
        rows = [
            [
                name,
                f"{v['recovered']}/{v['of']}",
                v["state_correct"],
                v["requests_median"],
                f"{v['requests_min']}-{v['requests_max']}",
                v["server_requests_mean"],
                v["p50_ms"],
                v["p99_ms"],
                _errors(v["errors"]),
            ]
            for name, v in w3["variants"].items()
        ]
        out += table(
            [
                "variant",
                "recovered",
                "state ok",
                "req (median)",
                "req range",
                "req (server)",
                "p50 ms",
                "p99 ms",
                "errors",
            ],
            rows,
        )
    w4 = results.get("contention")
    if w4:
        out += [
            "",
            "[4] Contention: N threads, one client each; 'provider' = distinct new "
            "consumers on one provider, 'consumer' = every thread adds 1 VCPU to one "
            f"consumer ({w4['total_ops_per_cell']} ops per cell, split over threads)",
        ]
        rows = [
            [
                f"{c['client']} / {c['kind']}",
                c["clients"],
                f"{c['ok']}/{c['ops']}",
                c["ops_per_s"],
                c["p50_ms"],
                c["p99_ms"],
                c["retries_median"],
                c["retries_p99"],
                c["retried_share"] * 100,
                c["requests_per_op"],
                c["lost_updates"],
                "ok" if c["puts_match"] else "MISMATCH",
                _errors(c["errors"]),
            ]
            for c in w4["cells"]
        ]
        out += table(
            [
                "client / kind",
                "N",
                "ok/ops",
                "ok ops/s",
                "p50 ms",
                "p99 ms",
                "retry p50",
                "retry p99",
                "% retried",
                "req/op",
                "lost",
                "wire check",
                "errors",
            ],
            rows,
        )
    out += _render_local(results)
    out += ["", "Targets (informational; CI does not gate on time)"]
    out += table(
        ["target", "goal", "measured", "mark"],
        [[t["target"], t["goal"], t["measured"], mark(t["pass"])] for t in results["targets"]],
    )
    return out


def _render_local(results: dict[str, Any]) -> list[str]:
    out: list[str] = []
    w5 = results.get("overhead")
    if w5:
        out += [
            "",
            f"[5] Client CPU per call, transport stubbed (null requests adapter, no "
            f"server; {w5['repeats']} blocks of {w5['per_block']}, median)",
        ]
        rows = [
            [name, us, w5["ratio_to_ks_put"][name]] for name, us in w5["cpu_us_per_call"].items()
        ]
        out += table(["variant", "CPU us/call", "x ks Adapter.put"], rows)
        out.append(
            f"library's own CPU: {w5['library_us_per_claim']:.1f} us per claim, "
            f"{w5['library_us_per_update']:.1f} us per cached update"
        )
    w6 = results.get("memory")
    if w6:
        b = w6["bytes"]
        out += ["", f"[6] Consumer cache memory (tracemalloc, n={b['n']}; where the bytes go)"]
        rows = [[k, v] for k, v in b["breakdown"].items()]
        rows.append(["total per consumer", b["bytes_per_consumer"]])
        out += table(["part", "bytes"], rows)
        out += ["", "peak RSS of a fresh child with the cache full (VmHWM; ru_maxrss in JSON)"]
        rows = [
            [
                f"{r['n']:,} entries",
                r["baseline_rss_bytes"] / 2**20,
                r["peak_rss_bytes"] / 2**20,
                r["delta_bytes_per_consumer"],
                r["fill_seconds"],
            ]
            for r in w6["rss"]
        ]
        out += table(["cache", "baseline MiB", "peak MiB", "delta B/consumer", "fill s"], rows)
        for skipped in w6.get("skipped", []):
            out.append(f"skipped: {skipped}")
    return out
