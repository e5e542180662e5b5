"""Turn the results into the printed table and the list of targets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.drivers.allocations import RC_TTL_NAME
from bench.support.common import mark
from bench.support.tables import errors_cell, fmt, header, table
from bench.workloads.claims import RACE_RC, RACE_RC_TTL

BASE = "bare PUT"
GETPUT = "bare GET+PUT"
RC = "reportclient"
NOVA = "nova"


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with its measured figure and whether it was met."""
    out: list[dict[str, Any]] = []

    def add(name: str, target: str, measured: float | str | None, ok: bool | None) -> None:
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
    for name, label, goal in (
        (RC_TTL_NAME, "requests per cached update (ttl 60)", 1),
        (RC, "requests per update, default ttl 0 (GET+PUT)", 2),
    ):
        if name in w2:
            value = w2[name]["requests_per_update"]
            add(label, f"= {goal:.2f}", value, abs(value - goal) < 1e-9)
    w3 = results.get("shelve_race", {}).get("variants", {})
    for name, label, goal in (
        (RACE_RC, "requests per shelve-race recovery, default", 2),
        (RACE_RC_TTL, "requests per shelve-race recovery, ttl 60", 3),
    ):
        if name in w3:
            race = w3[name]
            ok = (
                race["recovered"] == race["of"]
                and race["requests_min"] == race["requests_max"] == goal
            )
            add(label, f"= {goal}", race["requests_median"], ok)
    w5 = results.get("overhead")
    if w5:
        ratio = w5["ratio_to_ks_put"]["reportclient claim"]
        add("claim CPU vs bare keystoneauth1 PUT (stubbed)", "<= 1.15x", ratio, ratio <= 1.15)
    w6 = results.get("memory", {}).get("bytes")
    if w6:
        value = w6["bytes_per_consumer"]
        add("cache bytes per consumer", "<= 300", value, value <= 300)
    w7 = results.get("lifecycle")
    if w7:
        for name in (RC, RC_TTL_NAME):
            if name not in w7["results"]:
                continue
            below, misses = lifecycle_vs_nova(w7, name)
            label = f"lifecycle: {name} at or below nova on every step"
            if below is None:
                add(label, "<= nova", None, None)
            else:
                add(label, "<= nova", f"{below}/{len(w7['steps'])} steps", not misses)
    return out


def lifecycle_vs_nova(w7: dict[str, Any], name: str) -> tuple[int | None, list[str]]:
    """How many lifecycle steps ``name`` took no more requests than nova, and the others."""
    if NOVA not in w7["results"]:
        return None, []
    ours, theirs = w7["results"][name]["steps"], w7["results"][NOVA]["steps"]
    misses = []
    for step in w7["steps"]:
        a, b = ours[step]["requests_per_op"], theirs[step]["requests_per_op"]
        # A step with no successful operation (NaN) is a miss, not a pass.
        if not a <= b + 1e-9:
            misses.append(f"{step} ({fmt(a)} vs {fmt(b)})")
    return len(w7["steps"]) - len(misses), misses


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
            errors_cell(v["errors"]),
        ]
        for name, v in variants.items()
    ]
    headers = ["variant", f"{unit}s/s", ratio_header, "p50 ms", "p99 ms", f"req/{unit}", "errors"]
    return table(headers, rows)


def render(meta: dict[str, Any], results: dict[str, Any]) -> list[str]:
    """The whole printed report."""
    out = header("reportclient benchmarks", meta)
    if meta.get("server"):
        out.append(
            f"server (workloads 1-4, 7): {meta['server']}; startup {meta['server_startup_s']:.1f} s"
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
        out += [
            "",
            f"[2] Updates of known consumers (+1 VCPU each; n={w2['n']} per variant; each "
            "consumer claimed earlier by the same client: in [1], or for the ttl-60 client "
            "just before each of its rounds, within its ttl)",
        ]
        out += _rate_table(w2["variants"], "update", GETPUT, "x GET+PUT")
    w3 = results.get("shelve_race")
    if w3:
        out += [
            "",
            f"[3] Shelve race: claim; another writer deletes the consumer; claim "
            f"again (n={w3['n']}); the second claim's requests and time (other writer's "
            "request excluded; includes any backoff sleep)",
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
                errors_cell(v["errors"]),
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
                errors_cell(c["errors"]),
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
    out += _render_lifecycle(results)
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


def _render_lifecycle(results: dict[str, Any]) -> list[str]:
    w7 = results.get("lifecycle")
    if not w7:
        return []
    names = w7["variants"]
    res = w7["results"]
    flavor = ", ".join(f"{k} {v}" for k, v in w7["flavor"].items())
    lived = f"n={w7['n']} instances per variant"
    if w7["n"] < w7["planned"]:
        lived += f" of {w7['planned']} planned ({w7['budget_s']:.0f} s budget per variant)"
    out = [
        "",
        f"[7] Instance lifecycle, nova's way ({lived}, interleaved; flavor {flavor}; each "
        "variant has a scheduler, a conductor and compute services A and B, one client "
        "each; requests per step counted by the server; p50 = median wall time of the step)",
    ]
    short = {RC: "rc", RC_TTL_NAME: "rc ttl 60", NOVA: "nova"}
    headers = ["step"]
    headers += [f"req {short.get(n, n)}" for n in names]
    headers += [f"p50 ms {short.get(n, n)}" for n in names]
    rows = []
    for step in w7["steps"]:
        cells = [res[n]["steps"][step] for n in names]
        rows.append([step, *(c["requests_per_op"] for c in cells), *(c["p50_ms"] for c in cells)])
    whole = [res[n]["whole_life"] for n in names]
    rows.append(
        ["whole life", *(w["requests_per_op"] for w in whole), *(w["p50_ms"] for w in whole)]
    )
    out += table(headers, rows)

    out += ["", "requests the server saw per step (most common sequence; (rp) = not /allocations)"]
    rows = []
    for step in w7["steps"]:
        row: list[Any] = [step]
        for n in names:
            cell = res[n]["steps"][step]
            text = cell["sequence"] or "-"
            if cell["ok"] and cell["sequence_share"] < 1:
                text += f" ({cell['sequence_share'] * 100:.0f}% of ops)"
            row.append(text)
        rows.append(row)
    out += _left_table(["step", *names], rows)

    out += [
        "",
        "calls per step (sched = scheduler, cond = conductor, inst = instance, "
        "mig = migration consumer; both reportclient variants make the same calls)",
    ]
    for step in w7["steps"]:
        mapping = w7["mapping"][step]
        out.append(f"  {step}")
        out.append(f"    reportclient: {mapping[RC]}")
        if NOVA in names:
            out.append(f"    nova:         {mapping[NOVA]}")

    checks = []
    for n in names:
        steps = res[n]["steps"].values()
        done = sum(c["ok"] for c in steps)
        state_ok = sum(c["state_ok"] for c in steps)
        errors: dict[str, int] = {}
        for c in steps:
            for k, v in c["errors"].items():
                errors[k] = errors.get(k, 0) + v
        usage = w7["usage_left"][n]
        left = sum(sum(u.values()) for u in usage.values())
        checks.append(
            f"  {n}: {done} steps done, state as expected after {state_ok}, errors "
            f"{errors_cell(errors)}, usage left on A and B {left}, wall {res[n]['wall_s']:.1f} s"
        )
    out += ["", "checks (allocations read back after every step)", *checks]
    if NOVA in names:
        for n in (RC, RC_TTL_NAME):
            if n in names:
                below, misses = lifecycle_vs_nova(w7, n)
                verdict = "PASS" if not misses else "MISS: " + "; ".join(misses)
                out.append(
                    f"  {n} at or below nova on every step: {below}/{len(w7['steps'])} {verdict}"
                )
    return out


def _left_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Every column left-aligned (for text cells)."""
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(row: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    return [line([str(h) for h in headers]), line(["-" * w for w in widths])] + [
        line(r) for r in cells
    ]
