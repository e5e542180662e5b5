"""What ``python -m bench surface`` drives: reportclient's PlacementClient and nova's client.

reportclient: ``move_allocations(instance, migration, target_consumer_type="MIGRATION")``,
``get_allocation_candidates(resources=, required=, limit=)`` and
``providers.reconcile([root spec, child spec])``, each on one client over a counting
keystoneauth1 Adapter with the microversion pinned (``bench.support.common.MICROVERSION``).

nova: every driver is nova 34's report client over a counting keystoneauth1 Adapter
(``SchedulerReportClient(adapter=...)``: no nova config, no Keystone), with a context that
only has ``global_id``, which is all these methods read.

* move: ``move_allocations(context, source, target)``, as nova's conductor calls it when it
  hands an instance's allocations to its migration record (GET, GET, POST).
* candidates: ``get_allocation_candidates(context, resource_request)`` with a
  ``ResourceRequest`` built the way nova's scheduler builds it,
  ``ResourceRequest.from_request_spec`` over a ``RequestSpec`` holding a ``Flavor`` (the
  trait as a ``trait:...=required`` extra spec); nova sends ``limit`` from
  ``[scheduler]max_placement_results`` (default 1000).
* sync: what nova's resource tracker does every periodic (``_update_to_placement``):
  ``get_provider_tree_and_ensure_root`` (which primes or refreshes its provider cache), the
  virt driver's edit of the returned copy, then ``update_from_provider_tree``. ``cold=True``
  builds a new client for every sync: what nova does after a restart and, for an existing
  tree, every ``[compute]resource_provider_association_refresh`` seconds (300 by default),
  when it re-reads the whole tree.
"""

from __future__ import annotations

import dataclasses
import importlib
import uuid
import warnings
from types import SimpleNamespace
from typing import Any

from bench.support.common import MICROVERSION, full_inventory, make_adapter
from reportclient import PlacementClient, ProviderSpec

TRAIT = "HW_CPU_X86_AVX2"
CUSTOM_TRAIT = "CUSTOM_BENCH_FAST"
CUSTOM_RC = "CUSTOM_BENCH_GPU"
QUERY = {"VCPU": 1, "MEMORY_MB": 512}
#: nova sends [scheduler]max_placement_results (default 1000); reportclient is asked the same.
LIMIT = 1000


@dataclasses.dataclass(frozen=True)
class Tree:
    """One compute node's provider tree, as both clients are asked to make it."""

    root: str
    child: str
    aggregate: str
    vcpu: int = 16
    traits: tuple[str, ...] = (TRAIT, CUSTOM_TRAIT)

    @classmethod
    def new(cls) -> Tree:
        """A tree with new uuids."""
        return cls(str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()))

    @property
    def root_name(self) -> str:
        return f"cn-{self.root}"

    @property
    def child_name(self) -> str:
        return f"cn-{self.root}-gpu"

    def root_inventory(self) -> dict[str, dict[str, Any]]:
        return {"VCPU": full_inventory(self.vcpu), "MEMORY_MB": full_inventory(8192)}

    def child_inventory(self) -> dict[str, dict[str, Any]]:
        return {CUSTOM_RC: full_inventory(4)}


def _at_least(microversion: str, minor: int) -> bool:
    major, _, rest = microversion.partition(".")
    return (int(major), int(rest)) >= (1, minor)


class RcSurfaceDriver:
    """reportclient's PlacementClient over a counting Adapter, microversion pinned."""

    def __init__(
        self, url: str, token: str, *, cache_ttl: float = 0.0, microversion: str = MICROVERSION
    ) -> None:
        """One client with its own keystoneauth1 Session.

        ``microversion`` other than the benchmarks' pin is a control row: it shows how much
        of a time difference is Placement's work at the newer version (nova moves at 1.28).
        """
        self.name = "reportclient" if cache_ttl == 0 else f"reportclient (ttl {cache_ttl:g})"
        if microversion != MICROVERSION:
            self.name += f" @{microversion}"
        self.wire = make_adapter(url, token)
        self.client = PlacementClient(self.wire, microversion=microversion, cache_ttl=cache_ttl)
        # A consumer type needs 1.38; below it, the migration record gets none (as nova's).
        self._type = "MIGRATION" if _at_least(microversion, 38) else None
        self._query: dict[str, Any] = {}

    def query(self, resources: dict[str, int], trait: str) -> None:
        """Remember the query's keywords (not measured)."""
        self._query = {"resources": resources, "required": [trait], "limit": LIMIT}

    def move(self, source: str, target: str) -> None:
        """``move_allocations``: the instance's allocations to its new migration record."""
        self.client.move_allocations(source, target, target_consumer_type=self._type)

    def candidates(self) -> int:
        """``get_allocation_candidates``; the number of allocation requests returned."""
        return len(self.client.get_allocation_candidates(**self._query).allocation_requests)

    def prepare_sync(self) -> None:
        """Nothing: the same client reconciles every time."""

    def sync(self, tree: Tree) -> None:
        """``providers.reconcile``: the child manages only its inventory (all nova sets)."""
        self.client.providers.reconcile(
            [
                ProviderSpec(
                    tree.root,
                    tree.root_name,
                    inventories=tree.root_inventory(),
                    traits=tree.traits,
                    aggregates={tree.aggregate},
                ),
                ProviderSpec(
                    tree.child,
                    tree.child_name,
                    parent=tree.root,
                    inventories=tree.child_inventory(),
                ),
            ]
        )


# -- nova ----------------------------------------------------------------------------------


class NovaMoveFailed(RuntimeError):
    """``move_allocations`` returned something other than True (it does not always raise)."""


def _nova_modules() -> tuple[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        objects = importlib.import_module("nova.objects")
        scheduler_utils = importlib.import_module("nova.scheduler.utils")

        objects.register_all()
    return objects, scheduler_utils


class NovaSurfaceDriver:
    """nova's report client for a move, a candidates query and a provider-tree sync."""

    def __init__(self, report: Any, url: str, token: str, *, cold: bool = False) -> None:
        """One SchedulerReportClient over a counting Adapter (a new one per sync if cold)."""
        self.name = "nova (cold cache)" if cold else "nova"
        self.report = report
        self.cold = cold
        self.wire = make_adapter(url, token, raise_exc=False)
        self.client = report.SchedulerReportClient(adapter=self.wire)
        self.context = SimpleNamespace(global_id=None)
        self._request: Any = None

    def query(self, resources: dict[str, int], trait: str) -> None:
        """Build the ResourceRequest nova's scheduler would for this flavor (not measured)."""
        objects, scheduler_utils = _nova_modules()
        flavor = objects.Flavor(
            vcpus=resources["VCPU"],
            memory_mb=resources["MEMORY_MB"],
            root_gb=0,
            ephemeral_gb=0,
            swap=0,
            extra_specs={f"trait:{trait}": "required"},
        )
        spec = objects.RequestSpec(flavor=flavor, is_bfv=False)
        self._request = scheduler_utils.ResourceRequest.from_request_spec(spec)

    def move(self, source: str, target: str) -> None:
        """``move_allocations(context, source, target)``."""
        ok = self.client.move_allocations(self.context, source, target)
        if ok is not True:
            raise NovaMoveFailed(f"move_allocations returned {ok!r}")

    def candidates(self) -> int:
        """``get_allocation_candidates``; the number of allocation requests returned."""
        requests, _summaries, _version = self.client.get_allocation_candidates(
            self.context, self._request
        )
        if requests is None:
            raise RuntimeError("get_allocation_candidates failed")
        return len(requests)

    def prepare_sync(self) -> None:
        """For the cold variant, a new client (with an empty cache) before each sync."""
        if self.cold:
            self.client = self.report.SchedulerReportClient(adapter=self.wire)

    def sync(self, tree: Any) -> None:
        """Ensure the root, edit the returned copy as a virt driver does, flush it back."""
        ptree = self.client.get_provider_tree_and_ensure_root(
            self.context, tree.root, name=tree.root_name
        )
        if not ptree.exists(tree.child):
            ptree.new_child(tree.child_name, tree.root, uuid=tree.child)
        ptree.update_inventory(tree.root, tree.root_inventory())
        ptree.update_traits(tree.root, set(tree.traits))
        ptree.update_aggregates(tree.root, {tree.aggregate})
        ptree.update_inventory(tree.child, tree.child_inventory())
        self.client.update_from_provider_tree(self.context, ptree)


def nova_drivers(report: Any, url: str, token: str) -> dict[str, list[NovaSurfaceDriver]]:
    """nova's drivers for each workload of ``bench.surface``."""
    warm = NovaSurfaceDriver(report, url, token)
    return {
        "move": [warm],
        "candidates": [warm],
        "reconcile": [warm, NovaSurfaceDriver(report, url, token, cold=True)],
    }
