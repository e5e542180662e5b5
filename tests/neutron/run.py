"""``tox -e neutron``: neutron's placement callers on neutron-lib's client and on the drop-in.

Every scenario of :mod:`tests.neutron.scenarios` runs twice, each time on a
fresh real Placement (openstack-placement from PyPI, on 127.0.0.1): once with
neutron-lib's ``PlacementAPIClient``, once with ``reportclient.neutron``'s.
Per phase, what neutron concluded is compared (the exceptions it let out,
its log lines at INFO and above, the agent's ``resources_synced``, the port's
binding profile), and at the end what Placement holds. A difference fails
the run unless it is a race neutron-lib loses and the drop-in wins with
both writers' changes kept (:data:`IMPROVEMENTS`, each checked); the
drop-in may not send more requests than neutron-lib over a scenario both
finish alike (its phases are printed; the report plugin's first sync pays
once for proving the compute node's tree), and its steady re-sync costs
at most a quarter of neutron-lib's.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from reportclient.testing import EmbeddedPlacement
from tests.neutron import scenarios
from tests.neutron.world import KINDS, Admin, Wire, configure


def _kept_both_pools(lib: Any, ours: Any) -> bool:
    inv = ours.state["providers"][f"Neutron segment id {scenarios.SEGMENT}"]["inventories"]
    # 10 addresses, + 5 (grown), + 5 (server one) + 30 (server two, another subnet).
    return (
        int(inv["IPV4_ADDRESS"]["total"]) == 50
        and ours.conclusions["two servers grow it at once"]["raised"] is None
    )


def _kept_nova_and_neutron(lib: Any, ours: Any) -> bool:
    held = ours.state["allocations"][scenarios.VM]
    return (
        held[scenarios.DEVICE]["resources"]["NET_BW_EGR_KILOBIT_PER_SEC"] == 3000
        and held[scenarios.CN]["resources"]["VCPU"] == 12
        and ours.conclusions["2000 -> 3000 through 10 nova writes"]["raised"] is None
    )


#: Races neutron-lib loses: (scenario, phase) -> the check that the drop-in kept both writers'.
IMPROVEMENTS = {
    ("segments at 1.1", "two servers grow it at once"): _kept_both_pools,
    ("QoS allocation change", "2000 -> 3000 through 10 nova writes"): _kept_nova_and_neutron,
}
#: The phase whose drop-in cost must be at most a quarter of neutron-lib's.
STEADY = ("report plugin sync", "re-sync, unchanged")


def run_one(name: str, kind: str) -> scenarios.Outcome:
    with EmbeddedPlacement() as placement:
        wire = Wire(placement.url)
        out = scenarios.SCENARIOS[name](kind, Admin(placement), wire)
        out.state = Admin(placement).state()
        return out


def _differences(lib: scenarios.Outcome, ours: scenarios.Outcome) -> list[str]:
    found = []
    for phase, seen in lib.conclusions.items():
        other = ours.conclusions.get(phase)
        for key in ("raised", "logs", "result"):
            if other is None or other[key] != seen[key]:
                got = None if other is None else other[key]
                found.append(f"{phase}: {key} {seen[key]!r} != {got!r}")
    if lib.state != ours.state:
        found.append(f"final state: {lib.state!r} != {ours.state!r}")
    return found


def main() -> int:
    configure()
    started = time.monotonic()
    rows, failures = [], []
    for name in scenarios.SCENARIOS:
        lib, ours = (run_one(name, kind) for kind in KINDS)
        differences = _differences(lib, ours)
        improved = [p for (s, p) in IMPROVEMENTS if s == name]
        for phase in improved:
            if not IMPROVEMENTS[(name, phase)](lib, ours):
                failures.append(f"{name} / {phase}: the drop-in did not keep both writers' changes")
        unexplained = [
            d
            for d in differences
            if not any(d.startswith(f"{p}:") for p in improved)
            and not (improved and d.startswith("final state"))
        ]
        failures += [f"{name} / {d}" for d in unexplained]
        for phase, count in lib.requests.items():
            mine = ours.requests[phase]
            verdict = (
                "improved" if phase in improved else "same" if not unexplained else "DIFFERENT"
            )
            rows.append((name, phase, count, mine, verdict))
            if (name, phase) == STEADY and mine * 4 > count:
                failures.append(
                    f"{name} / {phase}: {mine} requests, more than a quarter of {count}"
                )
        lib_total, ours_total = sum(lib.requests.values()), sum(ours.requests.values())
        if not improved and ours_total > lib_total:
            failures.append(f"{name}: {ours_total} requests in all, neutron-lib {lib_total}")
    width = max(len(f"{r[0]} / {r[1]}") for r in rows)
    print(f"{'scenario / phase':<{width}}  neutron-lib  reportclient  verdict")
    for name, phase, lib_n, ours_n, verdict in rows:
        print(f"{name + ' / ' + phase:<{width}}  {lib_n:>11}  {ours_n:>12}  {verdict}")
    same = sum(1 for r in rows if r[4] == "same")
    better = sum(1 for r in rows if r[4] == "improved")
    print(
        f"neutron on reportclient: {same} same, {better} improved, {len(failures)} failed "
        f"({time.monotonic() - started:.0f} s)"
    )
    for failure in failures:
        print(f"FAILED {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
