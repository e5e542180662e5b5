"""Small, fixed results of each comparing bench, shaped as its ``--json`` writes them.

The figure tests draw these and read the SVG back; the numbers are chosen apart from each
other, so a figure that showed one series' values as another's would not match.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CLAIMS",
    "FLEET",
    "META",
    "OVERLAP",
    "PRODUCTION",
    "SATURATION",
    "SQLITE",
    "SURFACE",
]

META: dict[str, Any] = {
    "command": "python -m bench test --agents 3",
    "date": "2026-12-06T10:00:00+00:00",
    "cpu_model": "Test CPU 9000",
    "cores": 2,
    "python": "3.11.7",
}


def _fleet_row(phase: str, variant: str, requests: float, cpu: float) -> dict[str, Any]:
    return {
        "phase": phase,
        "variant": variant,
        "agent_periods": 20,
        "requests_per_agent_period": requests,
        "by_status": [["GET", 200, requests]],
        "conflicts": 0,
        "placement_cpu_ms_per_agent_period": cpu,
        "reconcile_p50_ms": 1.0,
        "reconcile_p99_ms": 40.0,
        "claim_p50_ms": None,
        "claim_p99_ms": None,
        "failed": 0,
        "diffs": 0,
        "overruns": 0,
        "max_late_s": 0.0,
    }


#: Three phases, three variants; ``nova`` was not run in ``claims`` (a bar must be missing).
FLEET: dict[str, Any] = {
    "meta": {**META, "bench": "fleet"},
    "results": {
        "shape": {
            "placement": "mariadb",
            "workers": 2,
            "agents": 3,
            "periods": 2,
            "claim_rate": 20.0,
            "clock": "real time, 6 s periods",
        },
        "real_time": True,
        "fleet": [
            _fleet_row("create", "rc agent", 8.65, 43.7),
            _fleet_row("create", "nova", 9.98, 66.9),
            _fleet_row("create", "nova on reportclient", 8.0, 50.3),
            _fleet_row("steady", "rc agent", 0.2, 1.5),
            _fleet_row("steady", "nova", 1.6, 7.7),
            _fleet_row("steady", "nova on reportclient", 0.4, 2.8),
            _fleet_row("claims", "rc agent", 1.11, 17.0),
            _fleet_row("claims", "nova on reportclient", 1.14, 16.9),
        ],
        "starvation": [],
    },
}


def _claims_row(threads: int, variant: str, rate: float, requests: float) -> dict[str, Any]:
    return {"threads": threads, "variant": variant, "claims_per_s": rate,
            "requests_per_claim": requests}  # fmt: skip


CLAIMS: dict[str, Any] = {
    "meta": {**META, "bench": "claims"},
    "results": {
        "claims": [
            _claims_row(1, "nova", 30.0, 2.0),
            _claims_row(1, "adapter", 36.0, 1.0),
            _claims_row(4, "nova", 50.0, 2.0),
            _claims_row(4, "adapter", 59.0, 1.0),
            _claims_row(16, "nova", 55.0, 2.0),
            _claims_row(16, "adapter", 62.0, 1.0),
        ]
    },
}


def _sat_row(client: str, factor: float, operation: str, goodput: float) -> dict[str, Any]:
    return {"client": client, "factor": factor, "operation": operation,
            "goodput_per_s": goodput}  # fmt: skip


SATURATION: dict[str, Any] = {
    "meta": {**META, "bench": "saturation"},
    "results": {
        "databases": [
            {
                "database": "mariadb",
                "workers": 4,
                "capacity": [73.5, 75.9],
                "pace": 1.0,
                "rows": [
                    _sat_row("reportclient", 0.5, "claims (37/s offered)", 40.4),
                    _sat_row("reportclient", 0.5, "set_inventory", 40.4),
                    _sat_row("reportclient", 1.0, "claims (75/s offered)", 72.2),
                    _sat_row("reportclient", 2.0, "claims (149/s offered)", 73.0),
                    _sat_row("nova", 0.5, "claims (37/s offered)", 38.7),
                    _sat_row("nova", 1.0, "claims (75/s offered)", 65.5),
                    _sat_row("nova", 2.0, "claims (149/s offered)", 62.8),
                ],
            }
        ]
    },
}


def _overlap_row(op: str, offset: float, rounds: int, wrong: int, errors: int) -> dict[str, Any]:
    failed = {"Boom": errors} if errors else {}
    return {"database": "mariadb", "workers": 2, "op": op, "offset_ms": offset,
            "rounds": rounds, "wrong": wrong, "errors": failed}  # fmt: skip


#: 4 of 10 rounds judged wrong at 0 ms (40%), 1 of 5 judged at 2 ms (20%: 5 errors).
OVERLAP: dict[str, Any] = {
    "meta": {**META, "bench": "overlap"},
    "overlap": [
        _overlap_row("claim", 0.0, 10, 4, 0),
        _overlap_row("claim", 2.0, 10, 1, 5),
        _overlap_row("claim", 50.0, 10, 0, 0),
        _overlap_row("release", 0.0, 10, 3, 0),
        _overlap_row("release", 2.0, 10, 0, 0),
        _overlap_row("release", 50.0, 10, 0, 0),
    ],
    "requests": [],
}


def _writers_row(writers: int, variant: str, rate: float, p99: float) -> dict[str, Any]:
    return {"writers": writers, "variant": variant, "updates_per_s": rate, "p99_ms": p99}


PRODUCTION: dict[str, Any] = {
    "meta": {**META, "bench": "run", "placement": "mariadb"},
    "results": {
        "fresh_claims": [
            {"threads": t, "variant": v, "claims_per_s": r, "cpu_ms_per_claim": c}
            for t, v, r, c in [
                (1, "reportclient", 38.3, 19.7),
                (1, "nova", 32.2, 22.6),
                (16, "reportclient", 63.8, 23.5),
                (16, "nova", 59.2, 25.0),
            ]
        ],
        "contention": [
            _writers_row(2, "reportclient", 19.5, 959.0),
            _writers_row(2, "nova", 13.5, 1781.0),
            _writers_row(64, "reportclient", 10.9, 6106.0),
            _writers_row(64, "nova", 8.7, 7249.0),
        ],
        "mixed": [
            {"variant": "reportclient", "group": "pair", "ok_per_s": 2.68},
            {"variant": "reportclient", "group": "claimers", "ok_per_s": 67.46},
            {"variant": "nova", "group": "pair", "ok_per_s": 2.53},
            {"variant": "nova", "group": "claimers", "ok_per_s": 66.5},
        ],
    },
}

SQLITE: dict[str, Any] = {
    "meta": {**META, "bench": "run"},
    "results": {
        "contention": {
            "total_ops_per_cell": 96,
            "cells": [
                {"client": c, "kind": k, "clients": n, "ops_per_s": r, "p99_ms": p}
                for c, k, n, r, p in [
                    ("reportclient", "provider", 1, 64.1, 24.5),
                    ("nova", "provider", 1, 52.0, 24.9),
                    ("reportclient", "provider", 16, 61.6, 324.5),
                    ("nova", "provider", 16, 45.9, 390.7),
                    ("reportclient", "consumer", 1, 49.0, 29.0),
                    ("nova", "consumer", 1, 49.4, 31.7),
                    ("reportclient", "consumer", 16, 14.2, 4774.5),
                    ("nova", "consumer", 16, 16.8, 4399.3),
                ]
            ],
        }
    },
}


def _op(requests: float, p50: float) -> dict[str, Any]:
    return {"requests_per_op": requests, "p50_ms": p50}


#: The ttl-60 client reconciles only; the @1.28 client moves only: their other bars are missing.
SURFACE: dict[str, Any] = {
    "meta": {**META, "bench": "surface"},
    "results": {
        "move": {"variants": {"reportclient": _op(3.0, 36.9), "nova": _op(3.0, 34.4),
                              "reportclient @1.28": _op(3.0, 34.2)}},
        "candidates": {"variants": {"reportclient": _op(1.0, 14.6), "nova": _op(1.0, 14.6)}},
        "reconcile": {
            "phases": ["create", "unchanged"],
            "variants": {
                "reportclient": {"create": _op(9.0, 70.5), "unchanged": _op(5.0, 34.8)},
                "reportclient (ttl 60)": {"create": _op(9.0, 68.1), "unchanged": _op(1.0, 7.9)},
                "nova": {"create": _op(10.0, 84.1), "unchanged": _op(0.0, 3.5)},
            },
        },
    },
}  # fmt: skip
