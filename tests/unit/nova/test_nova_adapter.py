"""reportclient.nova.SchedulerReportClient on the fake Placement, with fakes of nova's objects.

nova is not installed for the unit suite: every error here is reportclient's
typed one, as the adapter raises it outside nova (one test puts a stand-in
``nova.exception`` in place to show nova's type is raised when there is one).
"""

from __future__ import annotations

import subprocess
import sys
import types
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests_mock

import reportclient
from reportclient.fixture import FakeClock, FakePlacement, make_client
from reportclient.nova import SchedulerReportClient, TraitInfo
from tests.support.wire import URL

PROJECT = "project-a"
USER = "user-a"
REQUEST_ID = "req-0b7d2f3e-6a4c-4e2b-9f00-6f3c2d1e0a9b"


def new_id() -> str:
    return str(uuid.uuid4())


@dataclass
class FakeContext:
    """nova's RequestContext as the adapter reads it: ``global_id`` only."""

    global_id: str | None = REQUEST_ID


@dataclass
class FakeResourceRequest:
    """nova's ResourceRequest as the adapter reads it: ``to_querystring()`` only."""

    query: str

    def to_querystring(self) -> str:
        return self.query


@dataclass
class FakeProviderData:
    uuid: str
    name: str
    parent_uuid: str | None
    inventory: dict[str, dict[str, Any]] = field(default_factory=dict)
    traits: set[str] = field(default_factory=set)
    aggregates: set[str] = field(default_factory=set)
    generation: int | None = None


class FakeProviderTree:
    """nova's ProviderTree as the adapter reads and builds it (parents first)."""

    def __init__(self, *providers: FakeProviderData) -> None:
        self._providers = {p.uuid: p for p in providers}

    def get_provider_uuids(self) -> list[str]:
        return list(self._providers)

    def data(self, uuid: str) -> FakeProviderData:
        return self._providers[uuid]

    def exists(self, uuid: str) -> bool:
        return uuid in self._providers

    def new_root(self, name: str, uuid: str, generation: int | None = None) -> str:
        self._providers[uuid] = FakeProviderData(uuid, name, None, generation=generation)
        return uuid

    def new_child(
        self, name: str, parent: str, uuid: str | None = None, generation: int | None = None
    ) -> str:
        uuid = uuid or new_id()
        self._providers[uuid] = FakeProviderData(uuid, name, parent, generation=generation)
        return uuid

    def update_inventory(
        self, uuid: str, inventory: dict[str, Any], generation: int | None = None
    ) -> None:
        self._providers[uuid].inventory = dict(inventory)
        if generation is not None:
            self._providers[uuid].generation = generation

    def update_traits(self, uuid: str, traits: Any, generation: int | None = None) -> None:
        self._providers[uuid].traits = set(traits)
        if generation is not None:
            self._providers[uuid].generation = generation

    def update_aggregates(self, uuid: str, aggs: Any, generation: int | None = None) -> None:
        self._providers[uuid].aggregates = set(aggs)
        if generation is not None:
            self._providers[uuid].generation = generation

    def subtree(self, uuid: str) -> FakeProviderTree:
        inside, kept = {uuid}, []
        for p in self._providers.values():
            if p.uuid == uuid or p.parent_uuid in inside:
                inside.add(p.uuid)
                kept.append(p)
        sub = FakeProviderTree(*kept)
        sub.scope_rp_uuid = uuid  # type: ignore[attr-defined]
        return sub


@pytest.fixture
def nova_tree_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """``nova.compute.provider_tree`` holding the stand-in, as nova is not installed here."""
    module = types.ModuleType("nova.compute.provider_tree")
    module.ProviderTree = FakeProviderTree  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nova.compute.provider_tree", module)


@dataclass
class FakeComputeNode:
    uuid: str


@pytest.fixture
def fake() -> FakePlacement:
    return FakePlacement()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def nova(fake: FakePlacement, sleeps: list[float]) -> SchedulerReportClient:
    policy = reportclient.default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    # nova-compute calls the reshaper with a service token, as Placement's policy wants.
    client = make_client(
        fake,
        microversion="1.39",
        retry=policy,
        clock=FakeClock(),
        additional_headers={"X-Roles": "admin,service"},
    )
    return SchedulerReportClient(client=client)


@pytest.fixture
def ctx() -> FakeContext:
    return FakeContext()


@pytest.fixture
def host(fake: FakePlacement) -> str:
    return fake.create_provider("host-a", inventory={"VCPU": 8, "MEMORY_MB": 4096})


@pytest.fixture
def other_host(fake: FakePlacement) -> str:
    return fake.create_provider("host-b", inventory={"VCPU": 8, "MEMORY_MB": 4096})


def request_for(rp: str, vcpu: int = 1) -> dict[str, Any]:
    return {"allocations": {rp: {"resources": {"VCPU": vcpu}}}}


# -- import ------------------------------------------------------------------------------
def test_importing_the_adapter_imports_no_nova() -> None:
    code = (
        "import sys, reportclient.nova; print(any(m.split('.')[0] == 'nova' for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- claims ------------------------------------------------------------------------------
def test_claim_resources_for_a_new_consumer_writes_the_request(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    consumer = new_id()
    assert nova.claim_resources(ctx, consumer, request_for(host), PROJECT, USER, "1.36") is True
    assert fake.allocations(consumer) == {host: {"VCPU": 1}}


def test_claim_resources_doubles_up_a_consumer_that_holds_allocations_as_nova_evacuate(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str, other_host: str
) -> None:
    consumer = new_id()
    fake.put_allocations(consumer, {host: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    assert nova.claim_resources(ctx, consumer, request_for(other_host), PROJECT, USER, "1.36")
    assert fake.allocations(consumer) == {host: {"VCPU": 2}, other_host: {"VCPU": 1}}


def test_claim_resources_doubles_up_a_consumer_this_client_claimed_itself(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str, other_host: str
) -> None:
    """nova's evacuation in the scheduler that built the server: the client knew what it held.

    The library's claim replaces what the client knew the consumer to hold;
    nova's keeps it and adds the destination (nova's functional
    ``ServerMovingTests.test_evacuate_*`` found the difference).
    """
    consumer = new_id()
    assert nova.claim_resources(ctx, consumer, request_for(host, 2), PROJECT, USER, "1.36")
    fake.reset_requests()

    assert nova.claim_resources(ctx, consumer, request_for(other_host), PROJECT, USER, "1.36")

    assert fake.allocations(consumer) == {host: {"VCPU": 2}, other_host: {"VCPU": 1}}
    assert [(r.method, r.status) for r in fake.requests] == [
        ("PUT", 409),
        ("GET", 200),
        ("PUT", 204),
    ]


def test_claim_resources_meeting_a_409_worded_as_none_of_placements_fails_after_one_put(
    wire: requests_mock.Mocker, ctx: FakeContext, host: str, other_host: str
) -> None:
    """nova's ConsumerGenerationConflictTest: every PUT answered 409 by a test double.

    The read shows the consumer holding allocations (an evacuation), but the
    409 said nothing Placement says, so no doubled-up write follows: nova's
    answer after the one ``PUT``, as nova's own claim fails on its first 409.
    """
    nova = SchedulerReportClient(
        client=reportclient.PlacementClient.from_endpoint(URL, "admin", microversion="1.39")
    )
    consumer = new_id()
    conflict = {"code": "placement.concurrent_update", "detail": "consumer generation conflict"}
    put = wire.put(f"{URL}/allocations/{consumer}", status_code=409, json={"errors": [conflict]})
    wire.get(
        f"{URL}/allocations/{consumer}",
        json={
            "allocations": {host: {"resources": {"VCPU": 1}, "generation": 3}},
            "consumer_generation": 1,
            "project_id": PROJECT,
            "user_id": USER,
        },
    )

    with pytest.raises(reportclient.ConsumerChanged):  # nova's AllocationUpdateFailed
        nova.claim_resources(ctx, consumer, request_for(other_host), PROJECT, USER, "1.36")

    assert put.call_count == 1


def test_claim_resources_of_a_consumer_emptied_elsewhere_since_this_client_claimed_it_is_one_put(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str, other_host: str
) -> None:
    """A migration, a shelve-offload or a reschedule: another service emptied the consumer."""
    consumer = new_id()
    assert nova.claim_resources(ctx, consumer, request_for(host, 2), PROJECT, USER, "1.36")
    fake.delete_allocations(consumer)
    fake.reset_requests()

    assert nova.claim_resources(ctx, consumer, request_for(other_host), PROJECT, USER, "1.36")

    assert fake.allocations(consumer) == {other_host: {"VCPU": 1}}
    assert [(r.method, r.status) for r in fake.requests] == [("PUT", 204)]


def test_claim_resources_doubles_up_from_a_fresh_read_when_what_it_knew_moved(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str, other_host: str
) -> None:
    consumer = new_id()
    assert nova.claim_resources(ctx, consumer, request_for(host, 2), PROJECT, USER, "1.36")
    fake.put_allocations(consumer, {host: {"VCPU": 3}}, project_id=PROJECT, user_id=USER)

    assert nova.claim_resources(ctx, consumer, request_for(other_host), PROJECT, USER, "1.36")

    assert fake.allocations(consumer) == {host: {"VCPU": 3}, other_host: {"VCPU": 1}}


def test_claim_resources_after_the_consumer_was_emptied_claims_afresh_not_a_conflict(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    """The shelve race: shelve-offload emptied the consumer; nova's scheduler passes None."""
    consumer = new_id()
    fake.put_allocations(consumer, {host: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    fake.delete_allocations(consumer)  # shelve-offload
    fake.reset_requests()
    assert nova.claim_resources(ctx, consumer, request_for(host), PROJECT, USER, "1.36")
    assert fake.allocations(consumer) == {host: {"VCPU": 1}}
    assert [r.method for r in fake.requests] == ["PUT"]  # one request, generation null


def test_claim_resources_at_a_stale_caller_generation_is_proven_stale_by_placement(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    consumer = new_id()
    fake.put_allocations(consumer, {host: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    stale = fake.consumer_generation(consumer)
    fake.delete_allocations(consumer)
    fake.reset_requests()
    with pytest.raises(reportclient.GenerationConflict):  # nova's AllocationUpdateFailed
        nova.claim_resources(
            ctx, consumer, request_for(host), PROJECT, USER, "1.36", consumer_generation=stale
        )
    assert fake.allocations(consumer) == {}
    assert [(r.method, r.status) for r in fake.requests] == [("GET", 200), ("PUT", 409)]


def test_claim_resources_at_the_callers_generation_doubles_up_in_novas_two_requests(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str, other_host: str
) -> None:
    consumer = new_id()
    fake.put_allocations(consumer, {host: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    generation = fake.consumer_generation(consumer)
    fake.reset_requests()
    assert nova.claim_resources(
        ctx,
        consumer,
        request_for(other_host),
        PROJECT,
        USER,
        "1.36",
        consumer_generation=generation,
    )
    assert fake.allocations(consumer) == {host: {"VCPU": 2}, other_host: {"VCPU": 1}}
    assert [r.method for r in fake.requests] == ["GET", "PUT"]


def test_claim_resources_that_does_not_fit_returns_false(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    consumer = new_id()
    assert (
        nova.claim_resources(ctx, consumer, request_for(host, 99), PROJECT, USER, "1.36") is False
    )
    assert fake.allocations(consumer) == {}


def test_the_context_global_id_is_sent_as_the_request_id(
    wire: requests_mock.Mocker, ctx: FakeContext
) -> None:
    nova = SchedulerReportClient(
        client=reportclient.PlacementClient.from_endpoint(URL, "admin", microversion="1.39")
    )
    consumer = new_id()
    wire.get(f"{URL}/allocations/{consumer}", json={"allocations": {}})
    assert nova.get_allocations_for_consumer(ctx, consumer) == {}
    assert wire.last_request.headers["X-OpenStack-Request-ID"] == REQUEST_ID


# -- put_allocations ---------------------------------------------------------------------
def test_put_allocations_at_a_stale_generation_raises_without_replaying_it(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    consumer = new_id()
    fake.put_allocations(consumer, {host: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    payload = {
        **request_for(host, 3),
        "consumer_generation": None,
        "project_id": PROJECT,
        "user_id": USER,
    }
    with pytest.raises(reportclient.GenerationConflict) as caught:
        nova.put_allocations(ctx, consumer, payload)
    assert caught.value.consumer_conflict
    assert [r.method for r in fake.requests] == ["PUT"]
    assert fake.allocations(consumer) == {host: {"VCPU": 1}}


def test_put_allocations_raises_novas_type_when_nova_is_importable(
    nova: SchedulerReportClient,
    fake: FakePlacement,
    ctx: FakeContext,
    host: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class AllocationUpdateFailed(Exception):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(kwargs)
            self.kwargs = kwargs

    stand_in = types.ModuleType("nova.exception")
    stand_in.AllocationUpdateFailed = AllocationUpdateFailed  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nova", types.ModuleType("nova"))
    monkeypatch.setitem(sys.modules, "nova.exception", stand_in)
    consumer = new_id()
    fake.put_allocations(consumer, {host: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    payload = {
        **request_for(host),
        "consumer_generation": 7,
        "project_id": PROJECT,
        "user_id": USER,
    }
    with pytest.raises(AllocationUpdateFailed) as caught:
        nova.put_allocations(ctx, consumer, payload)
    assert caught.value.kwargs["consumer_uuid"] == consumer
    assert isinstance(caught.value.__cause__, reportclient.GenerationConflict)


def test_put_allocations_at_the_generation_writes_and_returns_true(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    consumer = new_id()
    payload = {**request_for(host), "consumer_generation": None, "project_id": PROJECT}
    assert nova.put_allocations(ctx, consumer, {**payload, "user_id": USER}) is True
    assert fake.consumer_generation(consumer) == 1


# -- moves and updates ---------------------------------------------------------------------
def test_move_allocations_moves_everything_to_an_empty_target(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    instance, migration = new_id(), new_id()
    fake.put_allocations(instance, {host: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    assert nova.move_allocations(ctx, instance, migration) is True
    assert fake.allocations(instance) == {}
    assert fake.allocations(migration) == {host: {"VCPU": 2}}


def test_move_allocations_from_an_empty_source_is_already_done(
    nova: SchedulerReportClient, ctx: FakeContext
) -> None:
    assert nova.move_allocations(ctx, new_id(), new_id()) is True


def test_move_allocations_replaces_what_the_target_holds_as_nova_revert_resize(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str, other_host: str
) -> None:
    instance, migration = new_id(), new_id()
    fake.put_allocations(migration, {host: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    fake.put_allocations(instance, {other_host: {"VCPU": 4}}, project_id=PROJECT, user_id=USER)
    assert nova.move_allocations(ctx, migration, instance) is True
    assert fake.allocations(instance) == {host: {"VCPU": 2}}
    assert fake.allocations(migration) == {}


def test_remove_resources_subtracts_and_refuses_more_than_is_held(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    consumer = new_id()
    fake.put_allocations(
        consumer, {host: {"VCPU": 2, "MEMORY_MB": 512}}, project_id=PROJECT, user_id=USER
    )
    nova.remove_resources_from_instance_allocation(
        ctx, consumer, {host: {"resources": {"VCPU": 1}}}
    )
    assert fake.allocations(consumer) == {host: {"VCPU": 1, "MEMORY_MB": 512}}
    with pytest.raises(reportclient.AllocationsNotHeld):
        nova.remove_resources_from_instance_allocation(
            ctx, consumer, {host: {"resources": {"VCPU": 5}}}
        )
    assert fake.allocations(consumer) == {host: {"VCPU": 1, "MEMORY_MB": 512}}


def test_remove_provider_tree_drops_only_that_tree(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str, other_host: str
) -> None:
    child = fake.create_provider("host-a-numa0", inventory={"VCPU": 4}, parent=host)
    consumer = new_id()
    allocations = {host: {"MEMORY_MB": 512}, child: {"VCPU": 1}, other_host: {"VCPU": 1}}
    fake.put_allocations(consumer, allocations, project_id=PROJECT, user_id=USER)
    assert nova.remove_provider_tree_from_instance_allocation(ctx, consumer, host) is True
    assert fake.allocations(consumer) == {other_host: {"VCPU": 1}}


def test_delete_allocation_for_instance_says_whether_anything_was_held(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    consumer = new_id()
    fake.put_allocations(consumer, {host: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    assert nova.delete_allocation_for_instance(ctx, consumer) is True
    assert fake.allocations(consumer) == {}
    assert nova.delete_allocation_for_instance(ctx, consumer) is False
    fake.put_allocations(consumer, {host: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    assert nova.delete_allocation_for_instance(ctx, consumer, force=True) is True


def test_get_allocs_for_consumer_is_novas_body(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    consumer = new_id()
    fake.put_allocations(consumer, {host: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    body = nova.get_allocs_for_consumer(ctx, consumer)
    assert body["allocations"][host]["resources"] == {"VCPU": 1}
    assert (body["consumer_generation"], body["project_id"]) == (1, PROJECT)
    assert "consumer_type" not in body  # read at nova's microversion
    assert nova.get_allocations_for_consumer(ctx, new_id()) == {}


# -- providers -------------------------------------------------------------------------------
def tree_of(root: str, child: str, agg: str) -> FakeProviderTree:
    return FakeProviderTree(
        FakeProviderData(root, "cn1", None, {"VCPU": {"total": 8}}, {"CUSTOM_GOLD"}, {agg}),
        FakeProviderData(child, "cn1-numa0", root, {"MEMORY_MB": {"total": 1024}}),
    )


def test_update_from_provider_tree_creates_the_tree_with_its_fields(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext
) -> None:
    root, child, agg = new_id(), new_id(), new_id()
    nova.update_from_provider_tree(ctx, tree_of(root, child, agg))
    assert fake.traits(root) == {"CUSTOM_GOLD"}
    assert fake.aggregates(root) == {agg}
    assert fake.inventory(child)["MEMORY_MB"].total == 1024


def test_update_from_provider_tree_deletes_a_provider_the_tree_dropped(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext
) -> None:
    root, child, agg = new_id(), new_id(), new_id()
    nova.update_from_provider_tree(ctx, tree_of(root, child, agg))
    only_root = FakeProviderTree(tree_of(root, child, agg).data(root))
    nova.update_from_provider_tree(ctx, only_root)
    assert [p["uuid"] for p in nova.get_providers_in_tree(ctx, root)] == [root]


@pytest.mark.usefixtures("nova_tree_module")
def test_a_reshape_moves_inventories_and_allocations_together_from_novas_reads(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext
) -> None:
    root, child = new_id(), new_id()
    nova.update_from_provider_tree(
        ctx,
        FakeProviderTree(
            FakeProviderData(root, "cn1", None, {"VCPU": {"total": 8}}),
            FakeProviderData(child, "cn1-numa0", root),
        ),
    )
    consumer = new_id()
    fake.put_allocations(consumer, {root: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    nova.clear_provider_cache()  # the allocation moved the root: as nova's tests, read anew
    tree = nova.get_provider_tree_and_ensure_root(ctx, root)
    allocations = nova.get_allocations_for_provider_tree(ctx, "cn1")
    tree.update_inventory(root, {})
    tree.update_inventory(child, {"VCPU": {"total": 8}})
    allocations[consumer]["allocations"] = {child: {"resources": {"VCPU": 2}}}

    nova.update_from_provider_tree(ctx, tree, allocations=allocations)

    assert fake.allocations(consumer) == {child: {"VCPU": 2}}
    assert fake.inventory(root) == {}


@pytest.mark.usefixtures("nova_tree_module")
def test_a_reshape_computed_before_another_allocation_is_a_conflict_and_drops_the_view(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext
) -> None:
    root, child = new_id(), new_id()
    nova.update_from_provider_tree(
        ctx,
        FakeProviderTree(
            FakeProviderData(root, "cn1", None, {"VCPU": {"total": 8}}),
            FakeProviderData(child, "cn1-numa0", root),
        ),
    )
    tree = nova.get_provider_tree_and_ensure_root(ctx, root)
    allocations = nova.get_allocations_for_provider_tree(ctx, "cn1")
    fake.put_allocations(new_id(), {root: {"VCPU": 2}}, project_id=PROJECT, user_id=USER)
    tree.update_inventory(root, {})
    tree.update_inventory(child, {"VCPU": {"total": 8}})

    with pytest.raises(reportclient.GenerationConflict):  # nova's PlacementReshapeConflict
        nova.update_from_provider_tree(ctx, tree, allocations=allocations)

    assert fake.inventory(root)["VCPU"].total == 8  # nothing replayed
    with pytest.raises(ValueError):  # the view was dropped: nova's cache is cleared too
        nova.get_allocations_for_provider_tree(ctx, "cn1")


def tracker_period(
    nova: SchedulerReportClient, ctx: FakeContext, root: str, **changes: Any
) -> FakeProviderTree:
    """One period of nova's resource tracker: the tree, the driver's changes, the flush."""
    tree = nova.get_provider_tree_and_ensure_root(ctx, root, name="cn1")
    for name, value in changes.items():
        getattr(tree, f"update_{name}")(root, value)
    nova.update_from_provider_tree(ctx, tree)
    assert isinstance(tree, FakeProviderTree)
    return tree


@pytest.mark.usefixtures("nova_tree_module")
def test_a_steady_tracker_period_inside_the_window_sends_nothing(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext
) -> None:
    root, agg = new_id(), new_id()
    tracker_period(nova, ctx, root, inventory={"VCPU": {"total": 8}}, aggregates={agg})
    fake.reset_requests()

    tree = tracker_period(nova, ctx, root, inventory={"VCPU": {"total": 8}})

    assert fake.requests == []
    assert tree.data(root).aggregates == {agg}
    assert tree.data(root).generation == fake.provider_generation(root)


@pytest.mark.usefixtures("nova_tree_module")
def test_an_aggregate_another_writer_added_after_the_tree_was_read_survives_the_flush(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext
) -> None:
    root, ours, theirs = new_id(), new_id(), new_id()
    tracker_period(nova, ctx, root, inventory={"VCPU": {"total": 8}}, aggregates={ours})
    tree = nova.get_provider_tree_and_ensure_root(ctx, root)
    other = SchedulerReportClient(client=make_client(fake, microversion="1.39"))
    other.aggregate_add_host(ctx, theirs, rp_uuid=root)  # nova-api, meanwhile
    tree.update_inventory(root, {"VCPU": {"total": 16}})

    nova.update_from_provider_tree(ctx, tree)

    assert fake.aggregates(root) == {ours, theirs}
    assert fake.inventory(root)["VCPU"].total == 16


@pytest.mark.usefixtures("nova_tree_module")
def test_a_trait_changed_by_another_writer_makes_the_flush_of_traits_novas_conflict(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext
) -> None:
    root = new_id()
    tracker_period(nova, ctx, root, traits={"HW_CPU_X86_AVX2"})
    tree = nova.get_provider_tree_and_ensure_root(ctx, root)
    fake.set_traits(root, {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"})  # an operator
    tree.update_traits(root, {"HW_CPU_X86_AVX2", "COMPUTE_STATUS_DISABLED"})

    with pytest.raises(reportclient.ProviderChanged):  # nova's ResourceProviderUpdateConflict
        nova.update_from_provider_tree(ctx, tree)

    assert fake.traits(root) == {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"}
    again = nova.get_provider_tree_and_ensure_root(ctx, root)  # the tracker's redrive
    assert again.data(root).traits == {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"}


@pytest.mark.usefixtures("nova_tree_module")
def test_the_association_refresh_keyword_is_the_views_window(
    fake: FakePlacement, ctx: FakeContext
) -> None:
    clock = FakeClock()
    client = make_client(fake, microversion="1.39", clock=clock)
    nova = SchedulerReportClient(client=client, association_refresh=60)
    root = new_id()
    nova.get_provider_tree_and_ensure_root(ctx, root, name="cn1")
    clock.advance(60)
    fake.reset_requests()
    nova.get_provider_tree_and_ensure_root(ctx, root)
    assert fake.requests == []
    clock.advance(1)
    nova.get_provider_tree_and_ensure_root(ctx, root)
    assert fake.requests[0].method == "GET" and fake.requests[0].path.startswith(
        "/resource_providers?in_tree="
    )


@pytest.mark.parametrize("refresh", [-1, "300", True])
def test_a_bad_association_refresh_is_refused(fake: FakePlacement, refresh: object) -> None:
    with pytest.raises(reportclient.InvalidInput):
        SchedulerReportClient(client=make_client(fake), association_refresh=refresh)  # type: ignore[arg-type]


def test_without_nova_the_window_is_novas_default(fake: FakePlacement) -> None:
    from reportclient.nova import ASSOCIATION_REFRESH

    nova = SchedulerReportClient(client=make_client(fake))
    assert nova._refresh_window() == ASSOCIATION_REFRESH == 300.0


@pytest.mark.usefixtures("nova_tree_module")
def test_clear_and_invalidate_drop_the_view_without_a_request(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext
) -> None:
    root, child = new_id(), new_id()
    nova.update_from_provider_tree(
        ctx,
        FakeProviderTree(
            FakeProviderData(root, "cn1", None), FakeProviderData(child, "cn1-numa0", root)
        ),
    )
    fake.reset_requests()
    assert nova.get_resource_provider_name(ctx, child) == "cn1-numa0"  # from the view
    nova.invalidate_resource_provider("cn1-numa0")
    nova.clear_provider_cache()
    assert fake.requests == []
    with pytest.raises(ValueError):
        nova.get_allocations_for_provider_tree(ctx, "cn1")
    tree = nova.get_provider_tree_and_ensure_root(ctx, root)
    assert tree.get_provider_uuids() == [root, child]


@pytest.mark.usefixtures("nova_tree_module")
def test_set_traits_for_provider_with_a_stale_generation_is_a_conflict(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    nova.get_provider_tree_and_ensure_root(ctx, host)
    stale = fake.provider_generation(host)
    fake.set_traits(host, ["HW_CPU_X86_AVX2"])
    with pytest.raises(reportclient.ProviderChanged):  # from the view: as nova's stale cache
        nova.set_traits_for_provider(ctx, host, ["CUSTOM_NEW"])
    with pytest.raises(reportclient.GenerationConflict):
        nova.set_traits_for_provider(ctx, host, ["CUSTOM_NEW"], generation=stale)
    # nova's compute manager: the traits read afresh, its own added, at that generation.
    info = nova.get_provider_traits(ctx, host)
    nova.set_traits_for_provider(
        ctx, host, info.traits | {"CUSTOM_NEW"}, generation=info.generation
    )
    assert nova.get_provider_traits(ctx, host) == TraitInfo(
        {"CUSTOM_NEW", "HW_CPU_X86_AVX2"}, fake.provider_generation(host)
    )


def test_a_provider_field_write_needs_the_provider_in_view_as_novas_cache(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    fake.reset_requests()
    with pytest.raises(ValueError):
        nova.set_inventory_for_provider(ctx, host, {"VCPU": {"total": 2}})
    with pytest.raises(ValueError):
        nova.set_traits_for_provider(ctx, host, ["HW_CPU_X86_AVX2"])
    with pytest.raises(ValueError):
        nova.set_aggregates_for_provider(ctx, host, [new_id()], use_cache=False)
    assert fake.requests == []


@pytest.mark.usefixtures("nova_tree_module")
def test_set_inventory_for_provider_creates_custom_classes_and_skips_an_unchanged_one(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    nova.get_provider_tree_and_ensure_root(ctx, host)
    nova.set_inventory_for_provider(ctx, host, {"CUSTOM_FPGA": {"total": 2}})
    assert fake.inventory(host)["CUSTOM_FPGA"].total == 2
    fake.reset_requests()
    nova.set_inventory_for_provider(ctx, host, {"CUSTOM_FPGA": {"total": 2}})
    assert fake.requests == []  # the view holds it: nothing to send, as nova's cache


def test_provider_by_name_and_aggregate_membership(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    agg = new_id()
    assert nova.get_provider_by_name(ctx, "host-a")["uuid"] == host
    nova.aggregate_add_host(ctx, agg, host_name="host-a")
    assert fake.aggregates(host) == {agg}
    nova.aggregate_remove_host(ctx, agg, "host-a")
    assert fake.aggregates(host) == set()
    with pytest.raises(reportclient.ProviderNotFound):
        nova.get_provider_by_name(ctx, "no-such-host")


def test_delete_resource_provider_leaves_one_in_use_and_cascade_releases_its_consumers(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    consumer = new_id()
    fake.put_allocations(consumer, {host: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    assert nova.delete_resource_provider(ctx, FakeComputeNode(host)) is None  # as nova: left
    assert fake.provider_generation(host) is not None
    nova.delete_resource_provider(ctx, FakeComputeNode(host), cascade=True)
    nova.delete_resource_provider(ctx, FakeComputeNode(host))  # already gone: fine
    assert fake.allocations(consumer) == {}
    assert nova.get_providers_in_tree(ctx, host) == []


# -- scheduling and usages ---------------------------------------------------------------------
def test_get_allocation_candidates_answers_in_novas_shape(
    nova: SchedulerReportClient, ctx: FakeContext, host: str
) -> None:
    requests, summaries, version = nova.get_allocation_candidates(
        ctx, FakeResourceRequest("resources=VCPU:1,MEMORY_MB:512&limit=10")
    )
    assert requests == [
        {
            "allocations": {host: {"resources": {"VCPU": 1, "MEMORY_MB": 512}}},
            "mappings": {"": [host]},
        }
    ]
    assert summaries[host]["resources"]["VCPU"] == {"capacity": 8, "used": 0}
    assert version == "1.36"


def test_usage_counts_for_quota_add_pcpu_to_cores(
    nova: SchedulerReportClient, fake: FakePlacement, ctx: FakeContext, host: str
) -> None:
    fake.put_allocations(
        new_id(), {host: {"VCPU": 2, "MEMORY_MB": 256}}, project_id=PROJECT, user_id=USER
    )
    assert nova.get_usages_counts_for_quota(ctx, PROJECT, USER) == {
        "project": {"cores": 2, "ram": 256},
        "user": {"cores": 2, "ram": 256},
    }
    assert nova.get_usages_counts_for_limits(ctx, PROJECT) == {"VCPU": 2, "MEMORY_MB": 256}
