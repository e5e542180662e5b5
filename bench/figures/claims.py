"""The claims bench's figure: fresh claims as nova's scheduler makes them, nova beside the adapter.

Drawn from ``results["claims"]``, the rows ``python -m bench claims`` prints (one per thread
count and variant, pooled over its rounds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.figures.lines import against
from bench.figures.spec import Figure, caption

__all__ = ["figures"]

THREADS = "threads sharing one client"


def figures(meta: Mapping[str, Any], results: Mapping[str, Any]) -> list[Figure]:
    """Claims per second and requests per claim against threads, a line per variant."""
    rows = results["claims"]
    common: dict[str, Any] = {"x": "threads", "x_label": THREADS, "series": "variant"}
    return [
        Figure(
            "claims",
            "Fresh claims through claim_resources: nova's client beside reportclient.nova",
            (
                against(
                    rows,
                    key="rate",
                    title="throughput",
                    value="claims_per_s",
                    y_label="successful claims/s",
                    **common,
                ),
                against(
                    rows,
                    key="requests",
                    title="what a claim costs",
                    value="requests_per_claim",
                    y_label="requests per claim",
                    **common,
                ),
            ),
            caption(meta),
        )
    ]
