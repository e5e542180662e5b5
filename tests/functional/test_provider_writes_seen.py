"""Every Placement write that changes a provider is seen past the window (real Placement).

One test per row of the table "Every write that changes a provider" in
doc/source/providers.rst (issue 53). Each row is another writer's request,
sent raw at the microversion the row names, against a tree that a compute
agent (``reconcile(max_staleness=...)``) and a provider-tree view
(``views(window=...)``) proved, after the database's timestamps were moved back
to 2001: every listing and ``Last-Modified`` then proves everything it can, so
a proof that relied on one for a write it cannot see keeps the old state and
the row fails. Past the window the view must show the other writer's change
and the agent must put its description back. The rows Placement refuses (a
class or a trait in use deleted) are shown refused: nothing to see.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from reportclient import PlacementClient, ProviderSpec, TreeView, TreeViews
from reportclient.errors import PlacementError
from reportclient.fixture import FakeClock
from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import backdate, backdate_classes, claim, make_client, new_id
from tests.functional._reshape import SERVICE

WINDOW = 300.0


@dataclass
class Node:
    """One compute node's tree, its agent and a view of it on another client."""

    placement: EmbeddedPlacement
    root: str
    child: str
    agg: str
    dev: str  # the child's custom class, this test's own (a rename reaches every inventory)
    clock: FakeClock
    agent: PlacementClient
    viewer: PlacementClient
    views: TreeViews
    other: PlacementClient
    extra: str  # a provider another writer may add under the root

    def specs(self) -> list[ProviderSpec]:
        return [
            ProviderSpec(
                self.root, f"cn-{self.root}", None, {"VCPU": 8}, {"HW_CPU_X86_AVX2"}, {self.agg}
            ),
            ProviderSpec(
                self.child, f"dev-{self.child}", self.root, {self.dev: 2}, {"CUSTOM_T53"}, set()
            ),
        ]

    def raw(self, method: str, path: str, version: str, body: Any = None) -> Any:
        """Another writer's request (not through the agent's or the viewer's client)."""
        return self.other.request(method, path, json=body, microversion=version)

    def generation(self, uuid: str) -> int:
        return int(self.raw("GET", f"/resource_providers/{uuid}", "1.39").body["generation"])

    def quiet(self) -> None:
        """Everything looks last changed in 2001: a listing proves all it can."""
        backdate(self.placement, [self.root, self.child])
        backdate_classes(self.placement)

    def past_the_window(self) -> tuple[TreeView, Any]:
        """The view, then the agent, one window later."""
        self.clock.advance(WINDOW + 1)
        view = self.views.ensure(self.root)
        report = self.agent.providers.reconcile(self.specs(), max_staleness=WINDOW)
        return view, report

    def holds(self) -> dict[str, Any]:
        """What Placement holds of the tree, read fresh by another client."""
        p = make_client(self.placement).providers
        out: dict[str, Any] = {}
        for rp in p.list_providers(in_tree=self.root):
            out[rp.uuid] = (
                rp.name,
                rp.parent_provider_uuid,
                {rc: inv.total for rc, inv in p.get_inventories(rp.uuid).inventories.items()},
                set(p.get_traits(rp.uuid).traits),
                set(p.get_aggregates(rp.uuid).aggregates),
            )
        return out


@pytest.fixture
def node(real_placement: EmbeddedPlacement) -> Node:
    clock = FakeClock()
    agent = make_client(real_placement, clock=clock)
    viewer = make_client(real_placement, clock=clock)
    made = Node(
        real_placement,
        new_id(),
        new_id(),
        new_id(),
        "CUSTOM_T53_" + uuidlib.uuid4().hex[:12].upper(),
        clock,
        agent,
        viewer,
        viewer.providers.views(window=WINDOW),
        make_client(real_placement, additional_headers=SERVICE),  # reshaper: role:service
        new_id(),
    )
    agent.providers.reconcile(made.specs(), max_staleness=WINDOW)
    made.views.ensure(made.root)
    made.quiet()
    made.past_the_window()  # every field proven once more, as of now: the steady state
    made.quiet()
    return made


def inventory_body(node: Node, uuid: str, inventories: dict[str, int]) -> dict[str, Any]:
    return {
        "resource_provider_generation": node.generation(uuid),
        "inventories": {rc: {"total": total} for rc, total in inventories.items()},
    }


@dataclass(frozen=True)
class Row:
    """One write of the table: what another writer sends, and what the view then shows."""

    write: Callable[[Node], None]
    shows: Callable[[Node, TreeView], bool]


def _show(view: TreeView, uuid: str) -> Any:
    found = view.get(uuid)
    assert found is not None, f"{uuid} not in the view"
    return found


def _rename_class(node: Node) -> None:
    node.raw("PUT", f"/resource_classes/{node.dev}", "1.6", {"name": node.dev + "_RENAMED"})


ROWS: dict[str, Row] = {
    "PUT inventories": Row(
        lambda n: n.raw(
            "PUT",
            f"/resource_providers/{n.root}/inventories",
            "1.39",
            inventory_body(n, n.root, {"VCPU": 4}),
        ),
        lambda n, v: _show(v, n.root).inventories["VCPU"].total == 4,
    ),
    "POST inventories (one class)": Row(
        lambda n: n.raw(
            "POST",
            f"/resource_providers/{n.root}/inventories",
            "1.39",
            {"resource_class": "MEMORY_MB", "total": 512},
        ),
        lambda n, v: "MEMORY_MB" in _show(v, n.root).inventories,
    ),
    "PUT inventories/{rc}": Row(
        lambda n: n.raw(
            "PUT",
            f"/resource_providers/{n.root}/inventories/VCPU",
            "1.39",
            {"resource_provider_generation": n.generation(n.root), "total": 6},
        ),
        lambda n, v: _show(v, n.root).inventories["VCPU"].total == 6,
    ),
    "DELETE inventories/{rc}": Row(
        lambda n: n.raw("DELETE", f"/resource_providers/{n.root}/inventories/VCPU", "1.39"),
        lambda n, v: "VCPU" not in _show(v, n.root).inventories,
    ),
    "DELETE inventories (1.5+)": Row(
        lambda n: n.raw("DELETE", f"/resource_providers/{n.child}/inventories", "1.5"),
        lambda n, v: dict(_show(v, n.child).inventories) == {},
    ),
    "PUT aggregates below 1.19": Row(
        lambda n: n.raw("PUT", f"/resource_providers/{n.root}/aggregates", "1.1", [new_id()]),
        lambda n, v: n.agg not in _show(v, n.root).aggregates,
    ),
    "PUT aggregates 1.19+": Row(
        lambda n: n.raw(
            "PUT",
            f"/resource_providers/{n.root}/aggregates",
            "1.19",
            {"aggregates": [new_id()], "resource_provider_generation": n.generation(n.root)},
        ),
        lambda n, v: n.agg not in _show(v, n.root).aggregates,
    ),
    "PUT traits": Row(
        lambda n: n.raw(
            "PUT",
            f"/resource_providers/{n.root}/traits",
            "1.6",
            {"traits": ["HW_CPU_X86_SSE"], "resource_provider_generation": n.generation(n.root)},
        ),
        lambda n, v: set(_show(v, n.root).traits) == {"HW_CPU_X86_SSE"},
    ),
    "DELETE traits": Row(
        lambda n: n.raw("DELETE", f"/resource_providers/{n.root}/traits", "1.6"),
        lambda n, v: set(_show(v, n.root).traits) == set(),
    ),
    "PUT resource_providers/{uuid} (name)": Row(
        lambda n: n.raw("PUT", f"/resource_providers/{n.child}", "1.39", {"name": "renamed"}),
        lambda n, v: _show(v, n.child).name == "renamed",
    ),
    "PUT resource_providers/{uuid} (re-parent, 1.37+)": Row(
        lambda n: n.raw(
            "PUT",
            f"/resource_providers/{n.child}",
            "1.37",
            {"name": f"dev-{n.child}", "parent_provider_uuid": None},
        ),
        lambda n, v: v.get(n.child) is None or _show(v, n.child).parent is None,
    ),
    "POST resource_providers (a child)": Row(
        lambda n: n.raw(
            "POST",
            "/resource_providers",
            "1.39",
            {"name": f"extra-{n.root}", "uuid": n.extra, "parent_provider_uuid": n.root},
        ),
        lambda n, v: v.get(n.extra) is not None,
    ),
    "DELETE resource_providers/{uuid}": Row(
        lambda n: n.raw("DELETE", f"/resource_providers/{n.child}", "1.39"),
        lambda n, v: v.get(n.child) is None,
    ),
    "DELETE and POST under the uuid": Row(
        lambda n: _recreate(n),
        lambda n, v: (
            dict(_show(v, n.child).inventories) == {} and set(_show(v, n.child).traits) == set()
        ),
    ),
    "POST reshaper (1.30+)": Row(
        lambda n: n.raw(
            "POST",
            "/reshaper",
            "1.39",
            {
                "inventories": {
                    n.root: inventory_body(n, n.root, {"VCPU": 3}),
                    n.child: inventory_body(n, n.child, {n.dev: 2}),
                },
                "allocations": {},
            },
        ),
        lambda n, v: _show(v, n.root).inventories["VCPU"].total == 3,
    ),
    "PUT resource_classes/{name} rename (1.2-1.6)": Row(
        _rename_class,
        lambda n, v: set(_show(v, n.child).inventories) == {n.dev + "_RENAMED"},
    ),
}


def _recreate(node: Node) -> None:
    """Delete the child and create it again under its uuid: empty, at generation 0."""
    node.raw("DELETE", f"/resource_providers/{node.child}", "1.39")
    node.raw(
        "POST",
        "/resource_providers",
        "1.39",
        {"name": f"dev-{node.child}", "uuid": node.child, "parent_provider_uuid": node.root},
    )


@pytest.mark.parametrize("row", sorted(ROWS))
def test_another_writers_change_is_shown_by_the_view_and_put_back_by_the_agent(
    node: Node, row: str
) -> None:
    described = node.holds()
    ROWS[row].write(node)
    changed = node.holds()
    assert changed != described  # the write changed what Placement holds

    view, report = node.past_the_window()

    assert ROWS[row].shows(node, view), f"the view missed {row!r}"
    assert report.requests > 0
    assert node.holds() == described, f"the agent did not put its description back ({row!r})"


def test_an_allocation_moves_the_generation_and_changes_no_field(node: Node) -> None:
    """Allocations move every provider they touch (``PUT``/``POST``/``DELETE /allocations``):
    the proofs read the moved provider's fields again and find them as described."""
    before = node.generation(node.root)
    consumer = new_id()
    claim(node.other, consumer, {node.root: {"VCPU": 1}})
    node.other.release(consumer)
    assert node.generation(node.root) == before + 2

    view, report = node.past_the_window()

    assert _show(view, node.root).inventories["VCPU"].total == 8
    assert report.written == ()


@pytest.mark.parametrize(
    ("method", "path", "version", "body"),
    [
        ("POST", "/resource_classes", "1.2", {"name": "CUSTOM_T53_NEW_POST"}),
        ("PUT", "/resource_classes/CUSTOM_T53_NEW_PUT", "1.7", None),
        ("PUT", "/traits/CUSTOM_T53_NEW_TRAIT", "1.6", None),
    ],
    ids=["POST resource_classes", "PUT resource_classes/{name} (1.7+)", "PUT traits/{name}"],
)
def test_creating_a_class_or_a_trait_changes_no_provider(
    node: Node, method: str, path: str, version: str, body: Any
) -> None:
    described = node.holds()
    try:
        node.raw(method, path, version, body)
    except PlacementError as exc:  # already there from an earlier run of this session
        assert exc.status == 409
    assert node.holds() == described
    view, report = node.past_the_window()
    assert report.written == ()
    assert set(_show(view, node.child).inventories) == {node.dev}


@pytest.mark.parametrize(
    ("path", "version"),
    [("/resource_classes/{dev}", "1.2"), ("/traits/CUSTOM_T53", "1.6")],
    ids=["DELETE resource_classes/{name}", "DELETE traits/{name}"],
)
def test_deleting_a_class_or_a_trait_in_use_is_refused(node: Node, path: str, version: str) -> None:
    described = node.holds()
    with pytest.raises(PlacementError) as refused:
        node.raw("DELETE", path.format(dev=node.dev), version)
    assert refused.value.status == 409
    assert node.holds() == described
