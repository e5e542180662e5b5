"""The tables print from the same summaries the JSON and the figures hold, as they printed before.

The fleet, claims and saturation benches used to format their rows straight from what they
measured; they now reduce it to a summary first, so a figure and a table cannot disagree.
These rows were computed by hand with the old formatting: a table that changed would fail.
"""

from __future__ import annotations

from collections import Counter

from bench.claims_nova import Cell as ClaimsCell
from bench.claims_nova import row_cells as claims_row
from bench.claims_nova import summarise as claims_summary
from bench.fleet import Cell as FleetCell
from bench.fleet_report import render_fleet, render_ratios, starvation_line, summarise
from bench.saturation import Tally
from bench.saturation_report import Row, Spent, row_cells


def test_a_fleet_row_prints_from_its_summary_as_before() -> None:
    cell = FleetCell(
        status=Counter({("GET", 200): 8, ("PUT", 409): 1}),
        agent_periods=20,
        cpu=0.134,
        latencies=[0.001, 0.002, 0.050],
        claim_latencies=[],
        failures=0,
        claim_failures=0,
        diffs=0,
    )
    row = summarise("steady", "rc agent", cell)
    assert render_fleet([row], real=True)[2] == (
        "| steady | rc agent | 0.45 | GET 200: 0.40, PUT 409: 0.05 | 1 | 6.7 | 2/49 | - "
        "| 0 | ok | 0 (0.00) |"
    )
    assert render_fleet([row])[2].endswith("| 0 | ok |")


def test_the_fleet_ratio_table_sets_nova_on_reportclient_over_nova_per_phase() -> None:
    def row(variant: str, requests: float, cpu: float) -> dict[str, object]:
        return {"phase": "steady", "variant": variant, "requests_per_agent_period": requests,
                "placement_cpu_ms_per_agent_period": cpu}  # fmt: skip

    lines = render_ratios(
        [row("nova", 1.6, 7.7), row("nova on reportclient", 0.4, 2.8)], ["create", "steady"]
    )
    assert lines[2:] == ["| steady | 0.40 / 1.60 = 0.25 | 2.8 / 7.7 = 0.36 |"]


def test_a_starvation_row_prints_nova_without_retry_columns() -> None:
    row = {
        "claims_per_s": 10, "done_per_s": 9.6, "writer": "nova update_from_provider_tree",
        "writes": 249, "success": 1.0, "p50_ms": 23.2, "p99_ms": 94.0,
        "requests_per_write": 3.01, "conflicts_per_write": 0.4,
        "retries_at_once_per_write": None, "backoff_s_per_write": None, "holds": True,
    }  # fmt: skip
    assert starvation_line(row) == (
        "| 10 | 10 | nova update_from_provider_tree | 249 | 100% | 23/94 | 3.01 | 0.40 "
        "| - | - | yes |"
    )


def test_a_claims_row_prints_from_its_summary_as_before() -> None:
    def cell(variant: str, claims: int, cpu: float, placement: float) -> ClaimsCell:
        method = "GET" if variant == "nova" else "PUT"
        return ClaimsCell(
            variant,
            4,
            claims=claims,
            wall=2.0,
            cpu=cpu,
            placement_cpu=placement,
            latencies=[0.02] * claims,
            requests=Counter({method: claims}),
        )

    adapter = [cell("adapter", 110, 0.6, 2.4), cell("adapter", 130, 0.6, 2.4)]
    adapter[1].failures = Counter({"ConsumerChanged": 2})
    nova = [cell("nova", 100, 0.5, 2.0), cell("nova", 120, 0.5, 2.0)]
    rows = claims_summary(4, {"nova": nova, "adapter": adapter})
    assert claims_row(rows[1]) == [
        "4", "adapter", "240", "60.0 (55.0, 65.0)", "16.7%", "1.09 (1.10, 1.08)", "1.00",
        "PUT 1.00", "5.00", "20.00", "20.0", "20.0", "ConsumerChanged x2",
    ]  # fmt: skip
    assert claims_row(rows[0])[5] == "-"


def test_a_saturation_row_prints_from_its_summary_as_before() -> None:
    tally = Tally(begun=7, done=[0.050, 0.060, 0.070], errors=Counter(PlacementOverloaded=4))
    row = Row("reportclient", 0.5, "set_inventory", 7, tally, Counter(GET=10, PUT=8),
              Spent(2, 14.0, 6, 0))  # fmt: skip
    assert row_cells(row.summary(40.4, 0.0189, 0.76)) == [
        "reportclient", "0.5x", "set_inventory", "7", "43%", "60/70", "6.00", "0.14", "40.4",
        "18.9", "0.76", "PlacementOverloaded 4", "2/14", "6/0",
    ]  # fmt: skip
    nova = Row("nova", 2.0, "claims (194/s offered)", 0, Tally(), Counter(), None)
    assert row_cells(nova.summary(76.2, 0.0185, 1.41))[4:6] == ["0%", "-/-"]
    assert row_cells(nova.summary(76.2, 0.0185, 1.41))[-2:] == ["-", "-"]
