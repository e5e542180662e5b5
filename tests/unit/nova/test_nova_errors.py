"""Every row of the adapter's failure table, through the whole client, on the fake Placement.

For each adapter method (and step) and each situation nova's code tells apart, a
failure of that kind is put on the wire the step uses (keystoneauth's verb method
patched, as nova's own functional tests patch it), everything else answered by the
fake, and the adapter must do what :data:`reportclient.nova._errors.TABLE` says
nova 34's method does: raise that nova exception (a stand-in ``nova.exception``
here, nova is not installed), let keystoneauth's exception through, or return the
value. The table itself is nova's behaviour read off its source
(doc/source/nova_adapter.rst); this proves the adapter follows it end to end.
"""

from __future__ import annotations

import json
import sys
import types
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest
import requests
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc

import reportclient
from reportclient.fixture import FakeClock, FakePlacement, make_client
from reportclient.nova import SchedulerReportClient
from reportclient.nova._errors import TABLE, Situation, table_rst
from tests.unit.nova.test_nova_adapter import (
    PROJECT,
    USER,
    FakeComputeNode,
    FakeContext,
    FakeProviderData,
    FakeProviderTree,
    FakeResourceRequest,
    request_for,
)

NAMES = sorted(
    {outcome.nova for row in TABLE.values() for outcome in row.values() if outcome.nova}
    | {"InventoryInUse"}
)


class StandIn(Exception):
    """A nova exception: its class name and the keywords it was given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args)
        self.kwargs = kwargs


@pytest.fixture
def nova_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    exception = types.ModuleType("nova.exception")
    for name in NAMES:
        setattr(exception, name, type(name, (StandIn,), {}))
    monkeypatch.setitem(sys.modules, "nova.exception", exception)
    tree = types.ModuleType("nova.compute.provider_tree")
    tree.ProviderTree = FakeProviderTree  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nova.compute.provider_tree", tree)


def answered(status: int, code: str, detail: str) -> requests.Response:
    resp = requests.Response()
    resp.status_code = status
    body = {"errors": [{"status": status, "title": "x", "code": code, "detail": detail}]}
    resp._content = json.dumps(body).encode()
    resp.encoding = "utf-8"
    resp.headers["content-type"] = "application/json"
    return resp


CONCURRENT = "placement.concurrent_update"
#: What each situation looks like on the wire (an answer, or keystoneauth raising).
WIRE: dict[Situation, Callable[[], requests.Response]] = {
    Situation.SERVER: lambda: answered(503, "placement.undefined_code", "unavailable"),
    Situation.NOT_FOUND: lambda: answered(404, "placement.undefined_code", "not found"),
    Situation.REFUSED: lambda: answered(400, "placement.undefined_code", "JSON does not validate"),
    Situation.CONSUMER_CONFLICT: lambda: answered(
        409, CONCURRENT, "consumer generation conflict - expected 7 but got 1"
    ),
    Situation.CONFLICT: lambda: answered(
        409,
        CONCURRENT,
        "Inventory and/or allocations changed while attempting to allocate: Another thread "
        "concurrently updated the resource provider data. Please retry your update",
    ),
    Situation.REFUSED_409: lambda: answered(
        409,
        "placement.undefined_code",
        "Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource "
        "provider 'x'. The requested amount would exceed the capacity.",
    ),
}
RAISED: dict[Situation, Callable[[], Exception]] = {
    Situation.UNREACHABLE: lambda: ks_exc.ConnectFailure("Connection refused"),
    Situation.TIMEOUT: lambda: ks_exc.ConnectTimeout("timed out"),
    Situation.AUTH: lambda: ks_exc.MissingAuthPlugin("no auth plugin"),
}


@dataclass
class World:
    nova: SchedulerReportClient
    fake: FakePlacement
    ctx: FakeContext
    host: str
    consumer: str
    other: str
    agg: str


@pytest.fixture
def world(nova_modules: None) -> World:
    fake = FakePlacement()
    policy = reportclient.default_retry(attempts=2, sleep=lambda _s: None, rand=lambda: 0.5)
    client = make_client(
        fake,
        microversion="1.39",
        retry=policy,
        clock=FakeClock(),
        additional_headers={"X-Roles": "admin,service"},
    )
    nova = SchedulerReportClient(client=client)
    host = fake.create_provider("host-a", inventory={"VCPU": 8, "MEMORY_MB": 4096})
    other = fake.create_provider("host-b", inventory={"VCPU": 8})
    consumer = str(uuid.uuid4())
    fake.put_allocations(consumer, {host: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    agg = str(uuid.uuid4())
    fake.set_aggregates(other, {agg})
    ctx = FakeContext()
    nova.get_provider_tree_and_ensure_root(ctx, host)  # the node in view, as nova's cache
    return World(nova, fake, ctx, host, consumer, other, agg)


#: For each row: the call, and which requests carry the failure (verb, path part).
CALLS: dict[str, tuple[Callable[[World], Any], str, str]] = {
    "get_allocation_candidates": (
        lambda w: w.nova.get_allocation_candidates(w.ctx, FakeResourceRequest("resources=VCPU:1")),
        "get",
        "",
    ),
    "get_provider_traits": (lambda w: w.nova.get_provider_traits(w.ctx, w.other), "get", ""),
    "get_resource_provider_name": (
        lambda w: w.nova.get_resource_provider_name(w.ctx, w.other),
        "get",
        "",
    ),
    "get_providers_in_tree": (lambda w: w.nova.get_providers_in_tree(w.ctx, w.host), "get", ""),
    "get_provider_tree_and_ensure_root read": (
        lambda w: w.nova.get_provider_tree_and_ensure_root(w.ctx, str(uuid.uuid4())),
        "get",
        "",
    ),
    "get_provider_tree_and_ensure_root write": (
        lambda w: w.nova.get_provider_tree_and_ensure_root(w.ctx, str(uuid.uuid4())),
        "post",
        "",
    ),
    "set_inventory_for_provider": (
        lambda w: w.nova.set_inventory_for_provider(w.ctx, w.host, {"VCPU": {"total": 16}}),
        "put",
        "",
    ),
    "set_traits_for_provider": (
        lambda w: w.nova.set_traits_for_provider(w.ctx, w.host, ["HW_CPU_X86_AVX2"]),
        "put",
        "",
    ),
    "set_aggregates_for_provider": (
        lambda w: w.nova.set_aggregates_for_provider(w.ctx, w.host, [str(uuid.uuid4())]),
        "put",
        "",
    ),
    "update_from_provider_tree create": (
        lambda w: w.nova.update_from_provider_tree(
            w.ctx,
            FakeProviderTree(
                FakeProviderData(
                    w.host, "host-a", None, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}}
                ),
                FakeProviderData(str(uuid.uuid4()), "host-a-numa0", w.host),
            ),
        ),
        "post",
        "",
    ),
    "update_from_provider_tree reshape": (
        lambda w: w.nova.update_from_provider_tree(
            w.ctx,
            FakeProviderTree(FakeProviderData(w.host, "host-a", None, {"VCPU": {"total": 8}})),
            allocations={},
        ),
        "post",
        "/reshaper",
    ),
    "update_from_provider_tree write": (
        lambda w: w.nova.update_from_provider_tree(
            w.ctx,
            FakeProviderTree(FakeProviderData(w.host, "host-a", None, {"VCPU": {"total": 16}})),
        ),
        "put",
        "",
    ),
    "get_allocs_for_consumer": (
        lambda w: w.nova.get_allocs_for_consumer(w.ctx, w.consumer),
        "get",
        "",
    ),
    "get_allocations_for_consumer": (
        lambda w: w.nova.get_allocations_for_consumer(w.ctx, w.consumer),
        "get",
        "",
    ),
    "claim_resources": (
        lambda w: w.nova.claim_resources(
            w.ctx, str(uuid.uuid4()), request_for(w.host), PROJECT, USER, "1.36"
        ),
        "put",
        "",
    ),
    "add_resources_to_instance_allocation read": (
        lambda w: w.nova.add_resources_to_instance_allocation(
            w.ctx, w.consumer, {w.other: {"resources": {"VCPU": 1}}}
        ),
        "get",
        "",
    ),
    "add_resources_to_instance_allocation write": (
        lambda w: w.nova.add_resources_to_instance_allocation(
            w.ctx, w.consumer, {w.other: {"resources": {"VCPU": 1}}}
        ),
        "put",
        "",
    ),
    "remove_resources_from_instance_allocation read": (
        lambda w: w.nova.remove_resources_from_instance_allocation(
            w.ctx, w.consumer, {w.host: {"resources": {"VCPU": 1}}}
        ),
        "get",
        "",
    ),
    "remove_resources_from_instance_allocation write": (
        lambda w: w.nova.remove_resources_from_instance_allocation(
            w.ctx, w.consumer, {w.host: {"resources": {"VCPU": 1}}}
        ),
        "put",
        "",
    ),
    "remove_provider_tree_from_instance_allocation read": (
        lambda w: w.nova.remove_provider_tree_from_instance_allocation(w.ctx, w.consumer, w.host),
        "get",
        "/allocations/",
    ),
    "remove_provider_tree_from_instance_allocation tree": (
        lambda w: w.nova.remove_provider_tree_from_instance_allocation(w.ctx, w.consumer, w.host),
        "get",
        "/resource_providers",
    ),
    "remove_provider_tree_from_instance_allocation write": (
        lambda w: w.nova.remove_provider_tree_from_instance_allocation(w.ctx, w.consumer, w.host),
        "put",
        "",
    ),
    "move_allocations read": (
        lambda w: w.nova.move_allocations(w.ctx, w.consumer, str(uuid.uuid4())),
        "get",
        "",
    ),
    "move_allocations write": (
        lambda w: w.nova.move_allocations(w.ctx, w.consumer, str(uuid.uuid4())),
        "post",
        "",
    ),
    "put_allocations": (
        lambda w: w.nova.put_allocations(
            w.ctx,
            str(uuid.uuid4()),
            {
                **request_for(w.host),
                "consumer_generation": None,
                "project_id": PROJECT,
                "user_id": USER,
            },
        ),
        "put",
        "",
    ),
    "delete_allocation_for_instance": (
        lambda w: w.nova.delete_allocation_for_instance(w.ctx, w.consumer),
        "put",
        "",
    ),
    "get_allocations_for_resource_provider": (
        lambda w: w.nova.get_allocations_for_resource_provider(w.ctx, w.host),
        "get",
        "",
    ),
    "delete_resource_provider read": (
        lambda w: w.nova.delete_resource_provider(w.ctx, FakeComputeNode(w.other)),
        "get",
        "",
    ),
    "delete_resource_provider write": (
        lambda w: w.nova.delete_resource_provider(w.ctx, FakeComputeNode(w.other)),
        "delete",
        "",
    ),
    "get_provider_by_name": (lambda w: w.nova.get_provider_by_name(w.ctx, "host-b"), "get", ""),
    "aggregate_add_host read": (
        lambda w: w.nova.aggregate_add_host(w.ctx, str(uuid.uuid4()), rp_uuid=w.other),
        "get",
        "/aggregates",
    ),
    "aggregate_add_host write": (
        lambda w: w.nova.aggregate_add_host(w.ctx, str(uuid.uuid4()), rp_uuid=w.other),
        "put",
        "/aggregates",
    ),
    "aggregate_remove_host read": (
        lambda w: w.nova.aggregate_remove_host(w.ctx, w.agg, "host-b"),
        "get",
        "/aggregates",
    ),
    "aggregate_remove_host write": (
        lambda w: w.nova.aggregate_remove_host(w.ctx, w.agg, "host-b"),
        "put",
        "/aggregates",
    ),
    "get_usages_counts_for_limits": (
        lambda w: w.nova.get_usages_counts_for_limits(w.ctx, PROJECT),
        "get",
        "",
    ),
    "get_usages_counts_for_quota": (
        lambda w: w.nova.get_usages_counts_for_quota(w.ctx, PROJECT, USER),
        "get",
        "",
    ),
}


def failing(verb: str, part: str, situation: Situation) -> Iterator[Any]:
    """keystoneauth's ``verb`` method failing as ``situation`` on paths with ``part``."""
    original = getattr(ks_adapter.Adapter, verb)

    def send(self: ks_adapter.Adapter, url: str, **kwargs: Any) -> Any:
        if part in url:
            if situation in RAISED:
                raise RAISED[situation]()
            return WIRE[situation]()
        return original(self, url, **kwargs)

    return mock.patch.object(ks_adapter.Adapter, verb, send)


ROWS = [(key, s) for key in CALLS for s in Situation]


def test_every_row_of_the_table_has_a_call_here() -> None:
    assert set(CALLS) == set(TABLE)


@pytest.mark.parametrize(("key", "situation"), ROWS, ids=[f"{k}-{s.name}" for k, s in ROWS])
def test_the_adapter_answers_each_failure_as_novas_method_does(
    world: World, key: str, situation: Situation
) -> None:
    call, verb, part = CALLS[key]
    outcome = TABLE[key][situation]
    with failing(verb, part, situation):
        if outcome.keystoneauth:
            with pytest.raises(ks_exc.ClientException) as caught:
                call(world)
            assert type(caught.value) is type(RAISED[situation]())
            return
        if outcome.nova is not None:
            with pytest.raises(StandIn) as raised:
                call(world)
            assert type(raised.value).__name__ == outcome.nova
            assert isinstance(raised.value.__cause__, reportclient.PlacementError)
            return
        assert call(world) == outcome.returns


def test_the_doc_prints_the_table_as_the_code_holds_it() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[3] / "doc/source/nova_adapter.rst").read_text()
    assert "\n".join(table_rst()) in doc
