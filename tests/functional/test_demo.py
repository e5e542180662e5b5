"""The demo against the real Placement (the embedded one the suite already runs)."""

from __future__ import annotations

import io

from reportclient._demo import run_demo


def test_demo_against_real_placement_recovers_in_three_requests(real_placement):
    out = io.StringIO()
    real_placement.clear_requests_seen()

    status = run_demo(url=real_placement.url, token=real_placement.token, out=out)

    text = out.getvalue()
    assert status == 0, text
    assert "RECOVERED: Placement holds {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 20}" in text
    statuses = [
        (r.method, r.status) for r in real_placement.requests_seen if r.path.startswith("/alloc")
    ]
    # story with retries: claim, (nova-compute) GET + PUT {}, recovery PUT 409/GET/PUT, check GET
    assert statuses[:7] == [
        ("PUT", 204),
        ("GET", 200),
        ("PUT", 204),
        ("PUT", 409),
        ("GET", 200),
        ("PUT", 204),
        ("GET", 200),
    ]
    # story without retries ends on the 409
    assert statuses[7:] == [("PUT", 204), ("GET", 200), ("PUT", 204), ("PUT", 409)]
