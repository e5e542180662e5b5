"""What each nova allocation call costs in requests: nova 34's client beside the adapter.

Each row runs one call of ``SchedulerReportClient`` on both clients, each over its
own keystoneauth Adapter to the same Placement, and counts the requests that
client sent (another writer's requests, the setup's and the interference's, go
through an admin client and are not counted). A *contended* row has another
writer act just before the client's first write of the call, as a scheduler,
a compute service or an operator would. The table in
``doc/source/nova_adapter.rst`` is :func:`table_rst` of :data:`ROWS`, and these tests
prove every number in it. Run by ``tox -e nova``, which installs nova.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from nova import exception
from nova.scheduler.client import report as nova_report

from reportclient import PlacementClient
from reportclient.nova import SchedulerReportClient
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import make_client

PROJECT, USER = "p-costs", "u-costs"


class Context:
    """nova's RequestContext as both clients read it."""

    global_id = None


CTX = Context()


class Counting(ks_adapter.Adapter):  # type: ignore[misc]
    """A keystoneauth Adapter that counts its requests and can run one action before a write."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Containers, not attributes: a client may copy the Adapter it is given
        # (reportclient does, to pin its own settings), and the copies share them.
        self.sent: list[str] = []
        self.actions: list[Callable[[], None]] = []

    @property
    def before_write(self) -> Callable[[], None] | None:
        return self.actions[0] if self.actions else None

    @before_write.setter
    def before_write(self, action: Callable[[], None]) -> None:
        self.actions[:] = [action]

    def request(self, url: str, method: str, **kwargs: Any) -> Any:
        if method.upper() in ("PUT", "POST", "DELETE") and self.actions:
            self.actions.pop()()
        self.sent.append(method.upper())
        return super().request(url, method, **kwargs)


def counting_adapter(placement: EmbeddedPlacement) -> Counting:
    session = ks_session.Session(auth=token_endpoint.Token(placement.url, "admin"))
    # raise_exc=False as nova builds its own: nova reads the statuses itself.
    return Counting(
        session, service_type="placement", endpoint_override=placement.url, raise_exc=False
    )


@dataclass
class World:
    """Two compute nodes, an admin writer, and one client of the kind under test."""

    placement: EmbeddedPlacement
    admin: PlacementClient
    wire: Counting
    client: Any
    source: str
    dest: str

    def counted(self, call: Callable[[], Any]) -> tuple[Any, int]:
        self.wire.sent.clear()
        result = call()
        return result, len(self.wire.sent)

    def holds(self, consumer: str) -> dict[str, dict[str, int]]:
        return self.admin.get_allocations(consumer).allocations

    def write(self, consumer: str, allocations: dict[str, dict[str, int]]) -> None:
        """Another service's write of the consumer (whatever it holds now)."""
        self.admin.claim(consumer, allocations, project_id=PROJECT, user_id=USER, overwrite=True)

    def empty(self, consumer: str) -> None:
        """Another service empties the consumer (a shelve-offload, a migration's move)."""
        self.admin.force_release(consumer)


def new_id() -> str:
    return str(uuid.uuid4())


def node(admin: PlacementClient) -> str:
    rp = new_id()
    admin.providers.create_provider(f"cn-{rp}", uuid=rp)
    admin.providers.set_inventories(rp, {"VCPU": 64, "MEMORY_MB": 65536})
    return rp


@pytest.fixture(params=["nova", "adapter"])
def world(request: pytest.FixtureRequest, real_placement: EmbeddedPlacement) -> Iterator[World]:
    admin = make_client(real_placement)
    wire = counting_adapter(real_placement)
    if request.param == "nova":
        client: Any = nova_report.SchedulerReportClient(adapter=wire)
    else:
        client = SchedulerReportClient(client=PlacementClient(wire, microversion="1.39"))
    yield World(real_placement, admin, wire, client, node(admin), node(admin))


def alloc_request(rp: str, vcpu: int = 1) -> dict[str, Any]:
    return {"allocations": {rp: {"resources": {"VCPU": vcpu, "MEMORY_MB": 256}}}}


def resources(rp: str, vcpu: int = 1) -> dict[str, dict[str, int]]:
    return {rp: {"VCPU": vcpu, "MEMORY_MB": 256}}


def claim(w: World, consumer: str, rp: str, **kwargs: Any) -> Any:
    return w.client.claim_resources(
        CTX, consumer, alloc_request(rp), PROJECT, USER, "1.36", **kwargs
    )


# -- the rows: each runs the call on one client and returns its request count --------------
def claim_new(w: World) -> int:
    consumer = new_id()
    ok, n = w.counted(lambda: claim(w, consumer, w.dest))
    assert ok is True and w.holds(consumer) == resources(w.dest)
    return n


def claim_emptied_since(w: World) -> int:
    consumer = new_id()
    assert claim(w, consumer, w.source)
    w.empty(consumer)  # shelve-offload, or a migration moved it to the migration record
    ok, n = w.counted(lambda: claim(w, consumer, w.dest))
    assert ok is True and w.holds(consumer) == resources(w.dest)
    return n


def claim_evacuation(w: World) -> int:
    consumer = new_id()
    w.write(consumer, resources(w.source))  # built by another scheduler
    ok, n = w.counted(lambda: claim(w, consumer, w.dest))
    assert ok is True and w.holds(consumer) == {**resources(w.source), **resources(w.dest)}
    return n


def claim_at_generation(w: World) -> int:
    consumer = new_id()
    w.write(consumer, resources(w.source))
    generation = w.admin.get_allocations(consumer).generation
    ok, n = w.counted(lambda: claim(w, consumer, w.dest, consumer_generation=generation))
    assert ok is True and w.holds(consumer) == {**resources(w.source), **resources(w.dest)}
    return n


def put_allocations(w: World) -> int:
    consumer = new_id()
    w.write(consumer, resources(w.source))
    body = {
        "allocations": {w.dest: {"resources": {"VCPU": 2, "MEMORY_MB": 256}}},
        "consumer_generation": w.admin.get_allocations(consumer).generation,
        "project_id": PROJECT,
        "user_id": USER,
    }
    ok, n = w.counted(lambda: w.client.put_allocations(CTX, consumer, body))
    assert ok is True and w.holds(consumer) == resources(w.dest, 2)
    return n


def move_allocations(w: World) -> int:
    instance, migration = new_id(), new_id()
    w.write(instance, resources(w.source))
    ok, n = w.counted(lambda: w.client.move_allocations(CTX, instance, migration))
    assert ok is True
    assert w.holds(migration) == resources(w.source) and w.holds(instance) == {}
    return n


def add_resources(w: World) -> int:
    consumer = new_id()
    w.write(consumer, resources(w.source))
    extra = {w.dest: {"resources": {"VCPU": 1}}}
    _, n = w.counted(lambda: w.client.add_resources_to_instance_allocation(CTX, consumer, extra))
    assert w.holds(consumer) == {**resources(w.source), w.dest: {"VCPU": 1}}
    return n


def add_resources_contended(w: World) -> int:
    consumer = new_id()
    w.write(consumer, resources(w.source))
    extra = {w.dest: {"resources": {"VCPU": 1}}}
    w.wire.before_write = lambda: w.write(consumer, resources(w.source, 2))
    _, n = w.counted(lambda: w.client.add_resources_to_instance_allocation(CTX, consumer, extra))
    assert w.holds(consumer) == {**resources(w.source, 2), w.dest: {"VCPU": 1}}
    return n


def remove_resources(w: World) -> int:
    consumer = new_id()
    w.write(consumer, {**resources(w.source), w.dest: {"VCPU": 1}})
    gone = {w.dest: {"resources": {"VCPU": 1}}}
    _, n = w.counted(
        lambda: w.client.remove_resources_from_instance_allocation(CTX, consumer, gone)
    )
    assert w.holds(consumer) == resources(w.source)
    return n


def remove_provider_tree(w: World) -> int:
    consumer = new_id()
    w.write(consumer, {**resources(w.source), **resources(w.dest)})
    ok, n = w.counted(
        lambda: w.client.remove_provider_tree_from_instance_allocation(CTX, consumer, w.source)
    )
    assert ok is True and w.holds(consumer) == resources(w.dest)
    return n


def delete_allocation(w: World) -> int:
    consumer = new_id()
    w.write(consumer, resources(w.source))
    ok, n = w.counted(lambda: w.client.delete_allocation_for_instance(CTX, consumer))
    assert ok is True and w.holds(consumer) == {}
    return n


def delete_allocation_contended(w: World) -> int:
    consumer = new_id()
    w.write(consumer, resources(w.source))
    w.wire.before_write = lambda: w.write(consumer, {**resources(w.source), **resources(w.dest)})
    w.wire.sent.clear()
    with pytest.raises(exception.AllocationDeleteFailed):
        w.client.delete_allocation_for_instance(CTX, consumer)
    assert w.holds(consumer) == {**resources(w.source), **resources(w.dest)}  # nothing removed
    return len(w.wire.sent)


def delete_allocation_forced(w: World) -> int:
    consumer = new_id()
    w.write(consumer, resources(w.source))
    ok, n = w.counted(lambda: w.client.delete_allocation_for_instance(CTX, consumer, force=True))
    assert ok is True and w.holds(consumer) == {}
    return n


def get_allocs(w: World) -> int:
    consumer = new_id()
    w.write(consumer, resources(w.source))
    body, n = w.counted(lambda: w.client.get_allocs_for_consumer(CTX, consumer))
    assert body["allocations"][w.source]["resources"] == resources(w.source)[w.source]
    return n


@dataclass(frozen=True)
class Row:
    call: str
    situation: str
    run: Callable[[World], int]
    nova: int
    adapter: int


#: Every row, with the requests each client sends (proven by the tests below).
ROWS = (
    Row("claim_resources", "a new consumer", claim_new, 2, 1),
    Row("claim_resources", "emptied by another service since", claim_emptied_since, 2, 1),
    Row("claim_resources", "an evacuation (it holds allocations)", claim_evacuation, 2, 3),
    Row("claim_resources", "at the caller's consumer_generation", claim_at_generation, 2, 2),
    Row("put_allocations", "at the body's generation", put_allocations, 1, 1),
    Row("move_allocations", "to a new consumer", move_allocations, 3, 3),
    Row("add_resources_to_instance_allocation", "fresh", add_resources, 2, 2),
    Row(
        "add_resources_to_instance_allocation",
        "contended: another writer first",
        add_resources_contended,
        4,
        4,
    ),
    Row("remove_resources_from_instance_allocation", "fresh", remove_resources, 2, 2),
    Row("remove_provider_tree_from_instance_allocation", "fresh", remove_provider_tree, 3, 3),
    Row("delete_allocation_for_instance", "fresh", delete_allocation, 2, 2),
    Row(
        "delete_allocation_for_instance",
        "contended: another writer adds first",
        delete_allocation_contended,
        2,
        2,
    ),
    Row("delete_allocation_for_instance", "force=True", delete_allocation_forced, 1, 1),
    Row("get_allocs_for_consumer", "fresh", get_allocs, 1, 1),
)


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.call}: {r.situation}" for r in ROWS])
def test_requests_per_call(world: World, row: Row, request: pytest.FixtureRequest) -> None:
    kind = request.node.callspec.params["world"]
    assert row.run(world) == (row.nova if kind == "nova" else row.adapter)


def table_rst() -> list[str]:
    """:data:`ROWS` as the list-table in doc/source/nova_adapter.rst."""
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - call",
        "     - situation",
        "     - nova",
        "     - adapter",
    ]
    for row in ROWS:
        lines += [
            f"   * - ``{row.call}``",
            f"     - {row.situation}",
            f"     - {row.nova}",
            f"     - {row.adapter}",
        ]
    return lines


def test_the_doc_prints_the_table_the_tests_prove() -> None:
    doc = (Path(__file__).parents[2] / "doc/source/nova_adapter.rst").read_text()
    assert "\n".join(table_rst()) in doc
