"""The agent setting against the real Placement: what an agent's periods cost under claims."""

from __future__ import annotations

from reportclient import ProviderSpec
from reportclient.fixture import FakeClock
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import claim, make_client, new_id, wire

WINDOW = 300.0


def _tree(root: str, child: str, vcpus: int = 16) -> list[ProviderSpec]:
    return [
        ProviderSpec(root, f"cn-{root}", inventories={"VCPU": vcpus}, traits={"HW_CPU_X86_AVX2"}),
        ProviderSpec(child, f"dev-{child}", parent=root, inventories={"CUSTOM_FUNCTIONAL_DEV": 2}),
    ]


def test_an_agent_pays_nothing_in_the_window_and_one_409_for_a_claim_since(
    real_placement: EmbeddedPlacement,
) -> None:
    clock = FakeClock()
    agent = make_client(real_placement, clock=clock).providers
    scheduler = make_client(real_placement)
    root, child = new_id(), new_id()
    agent.reconcile(_tree(root, child), max_staleness=WINDOW)
    claim(scheduler, new_id(), {root: {"VCPU": 1}})

    real_placement.clear_requests_seen()
    clock.advance(60)
    assert agent.reconcile(_tree(root, child), max_staleness=WINDOW).requests == 0
    report = agent.reconcile(_tree(root, child, vcpus=32), max_staleness=WINDOW)

    assert [(m, p.rsplit("/", 1)[-1], s) for m, p, s in wire(real_placement)] == [
        ("PUT", "inventories", 409),
        ("GET", "inventories", 200),
        ("PUT", "inventories", 200),
    ]
    assert report.requests == 3

    real_placement.clear_requests_seen()
    clock.advance(WINDOW)
    report = agent.reconcile(_tree(root, child, vcpus=32), max_staleness=WINDOW)
    # The listing, then every field not proven within the window: the root's
    # traits (and the child's inventories) were read 360 s ago; the root's
    # inventories, re-read and written 300 s ago, are young enough.
    assert [p.split("?")[0] for _m, p, _s in wire(real_placement)] == [
        "/resource_providers",
        f"/resource_providers/{root}/traits",
        f"/resource_providers/{child}/inventories",
    ]
    assert report.written == ()


# The re-created provider's case is in test_agent_reproof.py, beside the clock it rests on.
