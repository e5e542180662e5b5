"""``tox -e neutron``: neutron's placement callers on neutron-lib's client and on the drop-in.

Every scenario of :mod:`tests.neutron.scenarios` runs twice, each time on a
fresh real Placement (openstack-placement from PyPI, on 127.0.0.1): once with
neutron-lib's ``PlacementAPIClient``, once with ``reportclient.neutron``'s,
the drop-in on its production retry policy (its backoff sleeps are part of
what is compared). Per phase, what neutron concluded is compared (the
exceptions it let out, its log lines at INFO and above, the agent's
``resources_synced``, the port's binding profile), and at the end what
Placement holds.

A difference fails the run unless it is a race neutron-lib loses and the
drop-in wins with both writers' changes kept (:data:`IMPROVEMENTS`: each
checked, and the part of the final state it explains named). A phase the
drop-in is expected to finish exactly as neutron-lib does, for a reason
worth printing, is a regression row (:data:`REGRESSIONS`, checked too).
Every phase both finish alike must cost the drop-in no more requests than
neutron-lib; the steady re-sync at most a quarter; and every request of the
drop-in must go at the microversion neutron gave it.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reportclient.testing import EmbeddedPlacement
from tests.neutron import scenarios
from tests.neutron.world import KINDS, Admin, Wire, configure

SEGMENT_RP = f"Neutron segment id {scenarios.SEGMENT}"
RACED = "2000 -> 3000 through 10 nova writes"
DELETED = "instance deleted mid-change"
GROWN_AT_ONCE = "two servers grow it at once"


@dataclass(frozen=True)
class Improvement:
    """A race neutron-lib loses: the check that the drop-in kept both writers' changes.

    ``explains`` removes from a final state the part the race changed, so
    the rest must still match neutron-lib's.
    """

    kept_both: Callable[[scenarios.Outcome], bool]
    explains: Callable[[dict[str, Any]], None]


def _kept_both_pools(ours: scenarios.Outcome) -> bool:
    inv = ours.state["providers"][SEGMENT_RP]["inventories"]
    # 10 addresses, + 5 (grown), + 5 (server one) + 30 (server two, another subnet).
    return (
        int(inv["IPV4_ADDRESS"]["total"]) == 50
        and ours.conclusions[GROWN_AT_ONCE]["raised"] is None
    )


def _segment_total(state: dict[str, Any]) -> None:
    state["providers"][SEGMENT_RP]["inventories"]["IPV4_ADDRESS"].pop("total", None)


def _kept_nova_and_neutron(ours: scenarios.Outcome) -> bool:
    held = ours.state["allocations"][scenarios.VM]
    return (
        held[scenarios.DEVICE]["resources"]["NET_BW_EGR_KILOBIT_PER_SEC"] == 3000
        and held[scenarios.CN]["resources"]["VCPU"] == 12
        and ours.conclusions[RACED]["raised"] is None
    )


def _raced_instance(state: dict[str, Any]) -> None:
    state["allocations"].pop(scenarios.VM, None)


#: Races neutron-lib loses: (scenario, phase) -> what the drop-in must have kept.
IMPROVEMENTS = {
    ("segments at 1.1", GROWN_AT_ONCE): Improvement(_kept_both_pools, _segment_total),
    ("QoS allocation change", RACED): Improvement(_kept_nova_and_neutron, _raced_instance),
}


def _both_left_it_deleted(lib: scenarios.Outcome, ours: scenarios.Outcome) -> bool:
    gone = scenarios.fixed("instance-2")
    return all(
        side.conclusions[DELETED]["raised"] == "PlacementAllocationRemoved"
        and gone not in side.state["allocations"]
        for side in (lib, ours)
    )


#: Phases the drop-in finishes as neutron-lib does, kept as regression checks: the check, why.
REGRESSIONS = {
    ("QoS allocation change", DELETED): (
        _both_left_it_deleted,
        "neutron-lib's write at the read's generation gets a 409, it re-reads, "
        "finds the consumer gone and raises PlacementAllocationRemoved too",
    ),
}
#: The phase whose drop-in cost must be at most a quarter of neutron-lib's.
STEADY = ("report plugin sync", "re-sync, unchanged")
#: The microversion neutron gives each scenario's client.
VERSIONS = {"segments at 1.1": "placement 1.1"}
DEFAULT_VERSION = "placement 1.37"


def run_one(name: str, kind: str, retry: scenarios.Retry = None) -> scenarios.Outcome:
    """Scenario ``name`` on a fresh Placement with client ``kind`` (``retry``: the drop-in's)."""
    with EmbeddedPlacement() as placement:
        wire = Wire(placement.url)
        out = scenarios.SCENARIOS[name](kind, Admin(placement), wire, retry)
        out.state = Admin(placement).state()
        return out


def _differences(name: str, lib: scenarios.Outcome, ours: scenarios.Outcome) -> list[str]:
    """What neutron concluded differently per phase, and the final states' differences.

    An improvement's phase is judged by its own check; the part of the
    final state it explains is left out of the comparison, nothing else.
    """
    improved = {p: i for (s, p), i in IMPROVEMENTS.items() if s == name}
    found = []
    for phase, seen in lib.conclusions.items():
        if phase in improved:
            continue
        other = ours.conclusions.get(phase)
        for key in ("raised", "logs", "result"):
            if other is None or other[key] != seen[key]:
                got = None if other is None else other[key]
                found.append(f"{phase}: {key} {seen[key]!r} != {got!r}")
    theirs, mine = copy.deepcopy(lib.state), copy.deepcopy(ours.state)
    for improvement in improved.values():
        improvement.explains(theirs)
        improvement.explains(mine)
    if theirs != mine:
        found.append(f"final state: {theirs!r} != {mine!r}")
    return found


def _judge(
    name: str, lib: scenarios.Outcome, ours: scenarios.Outcome
) -> tuple[list[Any], list[str]]:
    """One scenario's table rows and failures."""
    rows, failures = [], [f"{name} / {d}" for d in _differences(name, lib, ours)]
    version = VERSIONS.get(name, DEFAULT_VERSION)
    for phase, count in lib.requests.items():
        mine = ours.requests[phase]
        improvement = IMPROVEMENTS.get((name, phase))
        regression = REGRESSIONS.get((name, phase))
        verdict = "same"
        if improvement is not None:
            verdict = "improved"
            if not improvement.kept_both(ours):
                failures.append(f"{name} / {phase}: the drop-in did not keep both writers' changes")
        elif regression is not None:
            verdict = "same (regression)"
            if not regression[0](lib, ours):
                failures.append(f"{name} / {phase}: not what neutron-lib concludes")
        if improvement is None and mine > count:
            failures.append(f"{name} / {phase}: {mine} requests, neutron-lib {count}")
        if (name, phase) == STEADY and mine * 4 > count:
            failures.append(f"{name} / {phase}: {mine} requests, more than a quarter of {count}")
        if ours.versions[phase] - {version}:
            failures.append(
                f"{name} / {phase}: sent at {sorted(ours.versions[phase])}, not {version}"
            )
        rows.append((name, phase, count, mine, verdict))
    return rows, failures


def main() -> int:
    configure()
    started = time.monotonic()
    rows, failures = [], []
    for name in scenarios.SCENARIOS:
        lib, ours = (run_one(name, kind) for kind in KINDS)
        found_rows, found_failures = _judge(name, lib, ours)
        rows += found_rows
        failures += found_failures
    width = max(len(f"{r[0]} / {r[1]}") for r in rows)
    print(f"{'scenario / phase':<{width}}  neutron-lib  reportclient  verdict")
    for name, phase, lib_n, ours_n, verdict in rows:
        print(f"{name + ' / ' + phase:<{width}}  {lib_n:>11}  {ours_n:>12}  {verdict}")
    for (name, phase), (_check, why) in REGRESSIONS.items():
        print(f"regression, {name} / {phase}: same because {why}")
    same = sum(1 for r in rows if r[4].startswith("same"))
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
