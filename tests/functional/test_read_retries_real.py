"""Typed reads on the real Placement behind a proxy that answers 503 once, or resets.

Issue 37: a scheduler's candidates call failed on a single proxy hiccup. The
real Placement (the suite's embedded one) sits behind the FaultProxy; the first
matching request gets the proxy's error page (or a reset) and never reaches
Placement, the second is forwarded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reportclient import PlacementClient, PlacementOverloaded, PlacementUnavailable, RetryBudget
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import new_id
from tests.functional._outcome_helpers import client_for, no_sleep_retry
from tests.support.faultproxy import FaultProxy, answer, reset

pytestmark = pytest.mark.functional


@pytest.fixture
def proxy(real_placement: EmbeddedPlacement) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", real_placement.port, timeout=30.0) as faults:
        yield faults


@pytest.fixture
def rp(placement_admin: PlacementAdmin) -> str:
    return placement_admin.create_provider(inventory={"VCPU": {"total": 8, "max_unit": 8}})


READS: dict[str, tuple[str, Callable[[PlacementClient, str], Any]]] = {
    "get_allocations": ("/allocations/", lambda c, rp: c.get_allocations(new_id())),
    "get_provider": ("/resource_providers/", lambda c, rp: c.providers.get_provider(rp)),
    "get_allocation_candidates": (
        "/allocation_candidates",
        lambda c, rp: c.get_allocation_candidates(resources={"VCPU": 1}),
    ),
    "get_usages": ("/usages", lambda c, rp: c.get_usages("p")),
    "get_inventories": (
        "/resource_providers/",
        lambda c, rp: c.providers.get_inventories(rp),
    ),
}


@pytest.mark.parametrize("name", sorted(READS))
@pytest.mark.parametrize("fault", ["503", "reset"])
def test_a_typed_read_recovers_from_one_proxy_fault(
    proxy: FaultProxy, rp: str, name: str, fault: str
) -> None:
    prefix, read = READS[name]
    sleeps: list[float] = []
    client = client_for(proxy.url, retry=no_sleep_retry(sleeps))
    proxy.add_rule("GET", prefix, answer(503) if fault == "503" else reset())

    read(client, rp)

    gets = [r for r in proxy.log if r.method == "GET" and r.path.startswith(prefix)]
    assert len(gets) == 2 and len(sleeps) == 1


def test_a_read_that_keeps_failing_is_never_may_have_been_applied(
    proxy: FaultProxy, rp: str
) -> None:
    client = client_for(proxy.url)
    proxy.add_rule("GET", "/resource_providers/", answer(503), times=10)

    with pytest.raises(PlacementUnavailable) as caught:
        client.providers.get_provider(rp)

    assert caught.value.outcome_unknown is False
    assert len([r for r in proxy.log if r.method == "GET"]) == 4


def test_an_empty_budget_says_overloaded_on_the_real_placement(proxy: FaultProxy, rp: str) -> None:
    client = client_for(proxy.url, retry_budget=RetryBudget(ratio=0.0, floor=0.0))
    proxy.add_rule("GET", "/resource_providers/", answer(503))

    with pytest.raises(PlacementOverloaded) as caught:
        client.providers.get_provider(rp)

    assert caught.value.last.status == 503 and not caught.value.outcome_unknown
