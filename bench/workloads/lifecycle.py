"""Workload 7: an instance's life as nova drives it, with nova's client and with reportclient.

Each client variant runs its own small cloud on its own two hosts (compute-node providers A
and B with VCPU, MEMORY_MB and DISK_GB): one scheduler, one conductor and one compute service
per host, each service holding its own client, as nova's services do. That matters for
reportclient: its cache is per process, so what the scheduler claimed, a compute service
has never seen. The variants are reportclient with its default ``cache_ttl=0``, reportclient
with ``cache_ttl=60``, and nova 34's ``SchedulerReportClient``. ``n`` instances live one after
another, the variants interleaved instance by instance; every step's requests are counted by
the server (as in the other workloads) and its wall time taken; after each step the
instance's allocations (after the migration, the migration's too) are checked with a raw
GET, outside the count. No new instance starts once any variant has spent ``budget``
seconds (the table says how many lived).

The flavor is ``{VCPU: 2, MEMORY_MB: 2048, DISK_GB: 20}``. nova's scheduler claims with an
``allocation_request`` from ``GET /allocation_candidates`` at 1.36 (taken once from the server,
``mappings`` included) and ``allocation_request_version=1.36``, ``consumer_generation=None``,
as ``nova.scheduler.utils.claim_resources`` calls it.

The steps and the calls each variant makes (nova's from nova 34: conductor/tasks/migrate.py,
scheduler/utils.py, compute/manager.py, compute/resource_tracker.py):

1. boot on A.
   nova: scheduler ``claim_resources(instance, alloc_req A)``.
   reportclient: scheduler ``claim(instance, {A: flavor})``.
2. cold migrate A -> B and confirm: nova's migration-based move. The instance's allocation
   moves to a migration consumer, the scheduler claims B for the instance, and confirming
   deletes the migration's allocation on the source.
   nova: conductor ``get_allocs_for_consumer(instance)`` and ``move_allocations(instance ->
   migration)`` (GET, GET, ``POST /allocations``: both consumers in one atomic write),
   scheduler ``claim_resources(instance, alloc_req B)``, compute A on confirm
   ``delete_allocation_for_instance(migration, consumer_type='migration', force=False)``.
   reportclient has no ``POST /allocations`` move yet; its closest equivalent is two writes:
   conductor ``get_allocations(instance)``, ``claim(migration, what the instance holds,
   consumer_type='MIGRATION')``, ``release(instance)`` (claim first, so the source stays held
   throughout: for a moment it is held twice, which nova's atomic POST never does, and on a
   full host that claim could be refused where the POST would not), scheduler
   ``claim(instance, {B: flavor})``, compute A ``release(migration)``.
3. evacuate B -> A: the same-consumer move, a doubled-up claim on the instance, then the
   source dropped (nova does this only for evacuation; its resize and migrate use step 2).
   nova: scheduler ``claim_resources(instance, alloc_req A)`` (finds B, writes B + A), then
   compute B ``remove_provider_tree_from_instance_allocation(instance, B)`` (GET, GET of the
   provider tree, PUT), as the source compute does when it comes back.
   reportclient: scheduler ``update_allocations(instance, add_allocations({A: flavor}))``,
   compute B ``update_allocations(instance, remove_providers([B]))``.
4. shelve-offload (on A).
   nova: compute A ``delete_allocation_for_instance(instance, force=True)``: one ``DELETE
   /allocations`` without a generation, which removes whatever is there.
   reportclient: compute A ``force_release(instance)``: the same unguarded DELETE, since that
   is what nova means here (the guarded ``release`` costs GET + PUT, one request more).
5. unshelve on A, by the scheduler that booted it: the shelve race's setup (its last view
   of the instance predates the offload).
   nova: scheduler ``claim_resources(instance, alloc_req A)``.
   reportclient: scheduler ``claim(instance, {A: flavor})``.
6. delete (on A).
   nova: compute A ``delete_allocation_for_instance(instance, force=True)`` (nova's choice
   with the default ``reclaim_instance_interval=0``; with deferred delete it passes
   ``force=False``: GET + PUT).
   reportclient: compute A ``force_release(instance)``, as for shelve-offload.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from bench.drivers.allocations import RC_TTL_NAME, TTL
from bench.support.common import MICROVERSION, PROJECT, USER, WireCounter, latency_ms, make_adapter
from reportclient import PlacementClient, add_allocations, remove_providers
from reportclient.testing import PlacementAdmin, RequestRecord

FLAVOR = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
HOST_INVENTORY = {rc: {"total": 100_000_000, "max_unit": 100_000} for rc in FLAVOR}
#: nova's scheduler asks for allocation candidates (and claims) at this version.
NOVA_CLAIM_VERSION = "1.36"

RC = "reportclient"
NOVA = "nova"
VARIANTS = (RC, RC_TTL_NAME, NOVA)

#: (step, where the instance's allocations are afterwards: host letters; None = no consumer)
STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("boot on A", ("A",)),
    ("cold migrate A->B + confirm", ("B",)),
    ("evacuate B->A (same consumer)", ("A",)),
    ("shelve-offload", ()),
    ("unshelve on A", ("A",)),
    ("delete", ()),
)

#: What each variant calls per step, for the printed mapping (service: call).
MAPPING: dict[str, dict[str, str]] = {
    "boot on A": {
        RC: "sched claim(inst, A)",
        NOVA: "sched claim_resources(inst, A)",
    },
    "cold migrate A->B + confirm": {
        RC: "cond get_allocations(inst), claim(mig, held), release(inst); "
        "sched claim(inst, B); compute-A release(mig)",
        NOVA: "cond get_allocs_for_consumer(inst), move_allocations(inst->mig); "
        "sched claim_resources(inst, B); compute-A delete_allocation_for_instance(mig)",
    },
    "evacuate B->A (same consumer)": {
        RC: "sched update_allocations(inst, add_allocations(A)); "
        "compute-B update_allocations(inst, remove_providers([B]))",
        NOVA: "sched claim_resources(inst, A) [doubled-up]; "
        "compute-B remove_provider_tree_from_instance_allocation(inst, B)",
    },
    "shelve-offload": {
        RC: "compute-A force_release(inst) [release(inst): GET + PUT]",
        NOVA: "compute-A delete_allocation_for_instance(inst, force=True)",
    },
    "unshelve on A": {
        RC: "sched claim(inst, A)",
        NOVA: "sched claim_resources(inst, A)",
    },
    "delete": {
        RC: "compute-A force_release(inst) [release(inst): GET + PUT]",
        NOVA: "compute-A delete_allocation_for_instance(inst, force=True)",
    },
}


class LifecycleStepFailed(RuntimeError):
    """A nova call reported failure by its return value (nova does not always raise)."""


def _check(ok: object, call: str) -> None:
    if ok is not True:
        raise LifecycleStepFailed(f"{call} returned {ok!r}")


class _ReportclientCloud:
    """One PlacementClient per service, all with the same ``cache_ttl``."""

    def __init__(self, name: str, url: str, token: str, ttl: float, hosts: dict[str, str]):
        def client() -> PlacementClient:
            return PlacementClient(
                make_adapter(url, token), microversion=MICROVERSION, cache_ttl=ttl
            )

        self.name = name
        self.hosts = hosts
        self.scheduler = client()
        self.conductor = client()
        self.compute = {"A": client(), "B": client()}

    def _flavor_on(self, host: str) -> dict[str, dict[str, int]]:
        return {self.hosts[host]: dict(FLAVOR)}

    def _claim(self, inst: str, host: str) -> None:
        self.scheduler.claim(inst, self._flavor_on(host), project_id=PROJECT, user_id=USER)

    def boot(self, inst: str, mig: str) -> None:
        self._claim(inst, "A")

    def cold_migrate(self, inst: str, mig: str) -> None:
        held = self.conductor.get_allocations(inst)
        if self.hosts["A"] not in held.allocations:
            raise LifecycleStepFailed(f"instance holds {held.allocations}, nothing on A")
        self.conductor.claim(
            mig,
            held.allocations,
            project_id=held.project_id or PROJECT,
            user_id=held.user_id or USER,
            consumer_type="MIGRATION",
        )
        self.conductor.release(inst)
        self._claim(inst, "B")
        self.compute["A"].release(mig)  # confirm, on the source

    def evacuate(self, inst: str, mig: str) -> None:
        self.scheduler.update_allocations(
            inst, add_allocations(self._flavor_on("A")), project_id=PROJECT, user_id=USER
        )
        self.compute["B"].update_allocations(
            inst, remove_providers([self.hosts["B"]]), project_id=PROJECT, user_id=USER
        )

    def shelve_offload(self, inst: str, mig: str) -> None:
        self.compute["A"].force_release(inst)

    def unshelve(self, inst: str, mig: str) -> None:
        self._claim(inst, "A")

    def delete(self, inst: str, mig: str) -> None:
        self.compute["A"].force_release(inst)


class _NovaCloud:
    """One nova ``SchedulerReportClient`` per service, each over its own counting Adapter."""

    name = NOVA

    def __init__(
        self,
        report: Any,
        url: str,
        token: str,
        hosts: dict[str, str],
        alloc_reqs: dict[str, dict[str, Any]],
    ):
        def client() -> Any:
            # raise_exc=False, as nova builds its Placement adapter.
            return report.SchedulerReportClient(adapter=make_adapter(url, token, raise_exc=False))

        self.hosts = hosts
        self.alloc_reqs = alloc_reqs
        self.scheduler = client()
        self.conductor = client()
        self.compute = {"A": client(), "B": client()}
        # The calls used here only read context.global_id.
        self.ctx = SimpleNamespace(global_id=None)

    def _claim(self, inst: str, host: str) -> None:
        # nova.scheduler.utils.claim_resources: consumer_generation=None, always.
        ok = self.scheduler.claim_resources(
            self.ctx,
            inst,
            self.alloc_reqs[host],
            PROJECT,
            USER,
            allocation_request_version=NOVA_CLAIM_VERSION,
            consumer_generation=None,
        )
        _check(ok, "claim_resources")

    def boot(self, inst: str, mig: str) -> None:
        self._claim(inst, "A")

    def cold_migrate(self, inst: str, mig: str) -> None:
        # conductor: nova.conductor.tasks.migrate.replace_allocation_with_migration
        orig = self.conductor.get_allocs_for_consumer(self.ctx, inst)["allocations"]
        if not orig.get(self.hosts["A"], {}).get("resources"):
            raise LifecycleStepFailed(f"instance holds {orig}, nothing on A")
        _check(self.conductor.move_allocations(self.ctx, inst, mig), "move_allocations")
        # scheduler: select_destinations -> utils.claim_resources for the instance on B
        self._claim(inst, "B")
        # source compute, confirm_resize -> _delete_allocation_after_move
        ok = self.compute["A"].delete_allocation_for_instance(
            self.ctx, mig, consumer_type="migration", force=False
        )
        _check(ok, "delete_allocation_for_instance(migration)")

    def evacuate(self, inst: str, mig: str) -> None:
        self._claim(inst, "A")  # finds the allocation on B: the doubled-up claim
        ok = self.compute["B"].remove_provider_tree_from_instance_allocation(
            self.ctx, inst, self.hosts["B"]
        )
        _check(ok, "remove_provider_tree_from_instance_allocation")

    def shelve_offload(self, inst: str, mig: str) -> None:
        # ResourceTracker.delete_allocation_for_shelve_offloaded_instance
        ok = self.compute["A"].delete_allocation_for_instance(self.ctx, inst, force=True)
        _check(ok, "delete_allocation_for_instance(force=True)")

    def unshelve(self, inst: str, mig: str) -> None:
        self._claim(inst, "A")

    def delete(self, inst: str, mig: str) -> None:
        # ComputeManager._complete_deletion with reclaim_instance_interval=0
        ok = self.compute["A"].delete_allocation_for_instance(self.ctx, inst, force=True)
        _check(ok, "delete_allocation_for_instance(force=True)")


def _step_calls(cloud: Any) -> list[Callable[[str, str], None]]:
    return [
        cloud.boot,
        cloud.cold_migrate,
        cloud.evacuate,
        cloud.shelve_offload,
        cloud.unshelve,
        cloud.delete,
    ]


@dataclass
class _StepTally:
    seconds: list[float] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)
    sequences: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    state_ok: int = 0

    def summary(self) -> dict[str, Any]:
        ops = len(self.requests)
        sequence, seen = self.sequences.most_common(1)[0] if self.sequences else ("", 0)
        return {
            "ops": ops + sum(self.errors.values()),
            "ok": ops,
            "errors": dict(self.errors),
            "state_ok": self.state_ok,
            "requests_per_op": sum(self.requests) / ops if ops else float("nan"),
            "requests_min": min(self.requests, default=0),
            "requests_max": max(self.requests, default=0),
            "sequence": sequence,
            "sequence_share": seen / ops if ops else 0.0,
            "sequences": dict(self.sequences),
            **latency_ms(self.seconds),
        }


def _token(record: RequestRecord) -> str:
    """``PUT``, ``PUT:409``; ``GET(rp)`` for a request outside /allocations."""
    name = str(record.method)
    if not record.path.startswith("/allocations"):
        name += "(rp)"
    if not 200 <= record.status < 300:
        name += f":{record.status}"
    return name


def _allocation_request(admin: PlacementAdmin, host_rp: str) -> dict[str, Any]:
    """One allocation request for the flavor on ``host_rp``, as nova's scheduler gets it."""
    resources = ",".join(f"{rc}:{amount}" for rc, amount in FLAVOR.items())
    resp = admin.request(
        "GET",
        f"/allocation_candidates?resources={resources}&in_tree={host_rp}",
        microversion=NOVA_CLAIM_VERSION,
    )
    if resp.status_code != 200:
        raise RuntimeError(f"GET /allocation_candidates: {resp.status_code} {resp.text[:200]}")
    requests = resp.json()["allocation_requests"]
    if len(requests) != 1:
        raise RuntimeError(f"expected one allocation request on {host_rp}, got {requests}")
    found: dict[str, Any] = requests[0]
    return found


def _state_ok(
    admin: PlacementAdmin,
    hosts: dict[str, str],
    inst: str,
    where: tuple[str, ...],
    mig: str | None,
) -> bool:
    """The instance holds the flavor on exactly ``where``; ``mig``, if given, holds nothing."""
    held = admin.get_allocations(inst)
    expected = {hosts[h]: FLAVOR for h in where}
    actual = {rp: a["resources"] for rp, a in held.get("allocations", {}).items()}
    if actual != expected:
        return False
    if where and held.get("consumer_generation") is None:
        return False
    return mig is None or not admin.get_allocations(mig).get("allocations")


def _cleanup(admin: PlacementAdmin, *consumers: str) -> None:
    for consumer in consumers:
        admin.delete_allocations(consumer)


def lifecycle(
    url: str,
    token: str,
    nova: Any,
    admin: PlacementAdmin,
    wire: WireCounter,
    n: int,
    budget: float = 60.0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run up to ``n`` instance lifecycles per variant; per step: requests, time, checks."""
    clouds: list[Any] = []
    hosts_of: dict[str, dict[str, str]] = {}
    for name, ttl in ((RC, 0.0), (RC_TTL_NAME, TTL)):
        hosts = {h: admin.create_provider(inventory=HOST_INVENTORY) for h in "AB"}
        hosts_of[name] = hosts
        clouds.append(_ReportclientCloud(name, url, token, ttl, hosts))
    if nova is not None:
        hosts = {h: admin.create_provider(inventory=HOST_INVENTORY) for h in "AB"}
        hosts_of[NOVA] = hosts
        alloc_reqs = {h: _allocation_request(admin, rp) for h, rp in hosts.items()}
        clouds.append(_NovaCloud(nova, url, token, hosts, alloc_reqs))

    tallies = {c.name: [_StepTally() for _ in STEPS] for c in clouds}
    whole: dict[str, _StepTally] = {c.name: _StepTally() for c in clouds}
    elapsed: dict[str, float] = dict.fromkeys(tallies, 0.0)
    lived = 0
    for i in range(n):
        if max(elapsed.values()) >= budget:
            break
        lived += 1
        shift = i % len(clouds)
        for cloud in [*clouds[shift:], *clouds[:shift]]:
            began = time.perf_counter()
            name = cloud.name
            _one_life(cloud, hosts_of[name], tallies[name], whole[name], admin, wire)
            elapsed[name] += time.perf_counter() - began
        if progress is not None and (i + 1) % 10 == 0 and i + 1 < n:
            progress(f"workload 7: {i + 1}/{n} instances per variant")

    out: dict[str, Any] = {
        "n": lived,
        "planned": n,
        "budget_s": budget,
        "flavor": FLAVOR,
        "variants": [c.name for c in clouds],
        "steps": [name for name, _ in STEPS],
        "mapping": MAPPING,
        "results": {
            c.name: {
                "steps": {
                    name: t.summary() for (name, _), t in zip(STEPS, tallies[c.name], strict=True)
                },
                "whole_life": whole[c.name].summary(),
                "wall_s": elapsed[c.name],
            }
            for c in clouds
        },
        "usage_left": {
            c.name: {h: admin.usages(rp) for h, rp in hosts_of[c.name].items()} for c in clouds
        },
    }
    return out


def _one_life(
    cloud: Any,
    hosts: dict[str, str],
    tallies: Sequence[_StepTally],
    whole: _StepTally,
    admin: PlacementAdmin,
    wire: WireCounter,
) -> None:
    inst, mig = str(uuid.uuid4()), str(uuid.uuid4())
    total_seconds = 0.0
    total_requests = 0
    tokens: list[str] = []
    all_ok = True
    for number, ((_, where), call, tally) in enumerate(
        zip(STEPS, _step_calls(cloud), tallies, strict=True)
    ):
        position = wire.mark()
        began = time.perf_counter()
        try:
            call(inst, mig)
        except Exception as exc:  # counted and shown; the rest of this life is skipped
            tally.errors[type(exc).__name__] += 1
            whole.errors[type(exc).__name__] += 1
            _cleanup(admin, inst, mig)
            return
        seconds = time.perf_counter() - began
        seen = wire.since(position)
        tally.seconds.append(seconds)
        tally.requests.append(len(seen))
        step_tokens = [_token(r) for r in seen]
        tally.sequences[" ".join(step_tokens)] += 1
        # The migration consumer is checked once it should be gone (after step 2) and at the end.
        check_mig = mig if number in (1, len(STEPS) - 1) else None
        if _state_ok(admin, hosts, inst, where, check_mig):
            tally.state_ok += 1
        else:
            all_ok = False
        total_seconds += seconds
        total_requests += len(seen)
        tokens += step_tokens
    whole.seconds.append(total_seconds)
    whole.requests.append(total_requests)
    whole.sequences[" ".join(tokens)] += 1
    whole.state_ok += all_ok
