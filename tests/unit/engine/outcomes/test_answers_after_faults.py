"""After a fault, with nobody else writing, the answer is the truth and a fault is no refusal.

The write machine (tests/machines/write_machine.py) judges what *landed*; these rows pin what
the retired consumer and provider state machines also judged about what the client *said*
(doc/source/testing.rst, "One model checker"):

* a success reports exactly the content and generation Placement holds afterwards ("false
  success" in the provider machine, "success reported X, not Y" in the consumer machine);
* a fault alone never becomes a refusal (``ConsumerChanged``, ``ConsumerGone``,
  ``GenerationConflict``): those say another writer acted, and here none did;
* a write is applied once or not at all, whatever the client said;
* an outage from the first request is ``PlacementUnavailable`` (or its ``OutcomeUnknown``)
  with nothing written; a lost answer followed by an outage is ``OutcomeUnknown``.

Each row runs with no cache and with a trusted one (``cache_ttl=60``, the consumer and the
provider read first), as both machines did.

Faults come from the fake's injection, aimed at the operation's first write. Nothing sleeps.
"""

from __future__ import annotations

from typing import Any

import pytest

import reportclient
from reportclient import Inventory
from reportclient.fixture import FakePlacement, make_client
from tests.support.hooks import once_after
from tests.support.wire import PROJECT, USER, new_uuid

TRAIT = "HW_CPU_X86_AVX2"
#: The retired machines' faults, each aimed at the operation's first write.
FAULTS = ("lost-reset", "lost-timeout", "5xx-before-commit", "5xx-after-commit")
FAULTS += ("slow-write", "failing-reread")
#: Refusals that say another writer acted.
REFUSALS = (reportclient.ConsumerChanged, reportclient.ConsumerGone)
REFUSALS += (reportclient.GenerationConflict,)
WRITES = ("PUT", "POST", "DELETE")


class PageOnWrite(FakePlacement):
    """The fake, arming ``fail_next`` as the next write arrives (not a read before it)."""

    page: tuple[int, bool] | None = None

    def serve(self, method: str, url: str, headers: Any, body: bytes | None) -> Any:
        if self.page and method in WRITES:
            self.fail_next(1, self.page[0], applied=self.page[1])
            self.page = None
        return super().serve(method, url, headers, body)


def arm(fake: PageOnWrite, fault: str) -> None:
    if fault in ("lost-reset", "failing-reread"):
        fake.lose_next_response(how="reset")
    elif fault == "lost-timeout":
        fake.lose_next_response(how="timeout")
    elif fault == "slow-write":
        fake.delay_next_write().apply_after(lambda r: r.method == "GET")
    elif fault in ("5xx-before-commit", "5xx-after-commit"):
        fake.page = (503, False) if fault == "5xx-before-commit" else (500, True)
    if fault == "failing-reread":
        once_after(fake, lambda r: r.fault == "lost", lambda f: f.fail_next(1, 503))


class World:
    """One consumer holding VCPU 1 on ``rp``, which has ample VCPU, MEMORY_MB and a trait."""

    def __init__(self, ttl: float) -> None:
        self.fake = PageOnWrite()
        inventory = {"VCPU": 64, "MEMORY_MB": 4096}
        self.rp = self.fake.create_provider(inventory=inventory)
        self.fake.set_traits(self.rp, [TRAIT])
        self.consumer = new_uuid()
        owner = {"project_id": PROJECT, "user_id": USER}
        self.fake.put_allocations(self.consumer, {self.rp: {"VCPU": 1}}, **owner)
        policy = reportclient.default_retry(sleep=lambda s: None, rand=lambda: 0.5)
        self.client = make_client(self.fake, microversion="1.39", retry=policy, cache_ttl=ttl)
        if ttl:
            self.client.get_allocations(self.consumer)
            self.client.providers.get_inventories(self.rp)
            self.client.providers.get_traits(self.rp)
        self.fake.reset_requests()

    def allocations(self) -> tuple[Any, Any]:
        return self.fake.allocations(self.consumer), self.fake.consumer_generation(self.consumer)

    def inventory(self) -> tuple[Any, Any]:
        return self.fake.inventory(self.rp), self.fake.provider_generation(self.rp)

    def traits(self) -> tuple[Any, Any]:
        return self.fake.traits(self.rp), self.fake.provider_generation(self.rp)


def said_allocations(result: Any) -> tuple[Any, Any]:
    return result.allocations, result.generation


def said_inventory(result: Any) -> tuple[Any, Any]:
    return dict(result.inventories), result.generation


def said_traits(result: Any) -> tuple[Any, Any]:
    return set(result.traits), result.generation


def vcpu_plus_one(current: dict[str, Inventory]) -> dict[str, Inventory]:
    total = current["VCPU"].total + 1
    return {**current, "VCPU": Inventory(total=total, max_unit=total)}


#: (name, the call, what Placement holds, what the answer says, every state one application
#: may leave, every state none leaves). The states are (content, generation)-free contents.
OPS: dict[str, tuple[Any, ...]] = {
    "claim": (
        lambda w: w.client.claim(w.consumer, {w.rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER),
        World.allocations,
        said_allocations,
        lambda w: {w.rp: {"VCPU": 2}},
        lambda w: {w.rp: {"VCPU": 1}},
    ),
    "update add": (
        lambda w: w.client.update_allocations(
            w.consumer,
            reportclient.add_allocations({w.rp: {"VCPU": 1}}),
            project_id=PROJECT,
            user_id=USER,
        ),
        World.allocations,
        said_allocations,
        lambda w: {w.rp: {"VCPU": 2}},
        lambda w: {w.rp: {"VCPU": 1}},
    ),
    "release": (
        lambda w: w.client.release(w.consumer),
        World.allocations,
        None,
        lambda w: {},
        lambda w: {w.rp: {"VCPU": 1}},
    ),
    "set_traits": (
        lambda w: w.client.providers.set_traits(w.rp, ["STORAGE_DISK_SSD"]),
        World.traits,
        said_traits,
        lambda w: {"STORAGE_DISK_SSD"},
        lambda w: {TRAIT},
    ),
    "set_inventory": (
        lambda w: w.client.providers.set_inventory(w.rp, "VCPU", Inventory(total=32)),
        World.inventory,
        said_inventory,
        lambda w: {"VCPU": 32, "MEMORY_MB": 4096},
        lambda w: {"VCPU": 64, "MEMORY_MB": 4096},
    ),
    "remove_inventory": (
        lambda w: w.client.providers.remove_inventory(w.rp, "MEMORY_MB"),
        World.inventory,
        said_inventory,
        lambda w: {"VCPU": 64},
        lambda w: {"VCPU": 64, "MEMORY_MB": 4096},
    ),
    "set_inventories": (
        lambda w: w.client.providers.set_inventories(w.rp, {"VCPU": Inventory(total=16)}),
        World.inventory,
        said_inventory,
        lambda w: {"VCPU": 16},
        lambda w: {"VCPU": 64, "MEMORY_MB": 4096},
    ),
    "update_inventories +1": (
        lambda w: w.client.providers.update_inventories(w.rp, vcpu_plus_one),
        World.inventory,
        said_inventory,
        lambda w: {"VCPU": 65, "MEMORY_MB": 4096},
        lambda w: {"VCPU": 64, "MEMORY_MB": 4096},
    ),
}


def totals(content: Any) -> Any:
    """Inventories as {class: total}; other contents as they are."""
    if isinstance(content, dict) and all(hasattr(v, "total") for v in content.values()):
        return {k: v.total for k, v in content.items()}
    return content


@pytest.mark.parametrize("ttl", [0.0, 60.0], ids=["cache_ttl=0", "cache_ttl=60"])
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("name", list(OPS))
def test_a_fault_alone_ends_in_the_truth_or_an_unknown_outcome(
    name: str, fault: str, ttl: float
) -> None:
    call, held, said, once, never = OPS[name]
    world = World(ttl)
    arm(world.fake, fault)
    try:
        result = call(world)
    except reportclient.OutcomeUnknown:
        result = None
    except REFUSALS as refusal:  # pragma: no cover - the failure message
        pytest.fail(f"{name} after {fault} with nobody else writing: {refusal!r}")
    world.fake.clear_faults()
    content, generation = held(world)
    assert totals(content) in (once(world), never(world)), "applied once or not at all"
    if result is not None:
        assert totals(content) == once(world), "a success, yet its write is not in Placement"
    if result is not None and said is not None:
        answer, answer_generation = said(result)
        assert (totals(answer), answer_generation) == (totals(content), generation)


@pytest.mark.parametrize("name", list(OPS))
def test_an_outage_from_the_first_request_writes_nothing(name: str) -> None:
    call, held, _, _, never = OPS[name]
    world = World(0.0)
    before = held(world)
    world.fake.fail_next(100, 503)  # outlasts the retry policy's attempts
    with pytest.raises(reportclient.PlacementUnavailable):
        call(world)
    world.fake.clear_faults()
    assert held(world) == before
    assert totals(before[0]) == never(world)


@pytest.mark.parametrize("name", list(OPS))
def test_a_lost_answer_then_an_outage_is_an_unknown_outcome(name: str) -> None:
    call, held, _, once, never = OPS[name]
    world = World(0.0)
    world.fake.lose_next_response(how="reset")
    once_after(world.fake, lambda r: r.fault == "lost", lambda f: f.fail_next(100, 503))
    with pytest.raises(reportclient.OutcomeUnknown):
        call(world)
    world.fake.clear_faults()
    assert totals(held(world)[0]) in (once(world), never(world))
