"""neutron's own placement callers, driven unmodified on one client kind (tests/neutron/run.py).

Each scenario takes the client kind and a fresh Placement, runs neutron's
code in phases and returns what every phase sent, what neutron concluded
(the exceptions it let out, its log lines, the agent's ``resources_synced``,
the port's binding profile) and what Placement held at the end.
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import tenacity

from tests.neutron.world import Admin, Collect, Logs, Wire, client, fixed

#: The drop-in's retry policy: None is the production default.
Retry = tenacity.Retrying | None

HOST = "host1"
CN = fixed("compute-node-host1")
PROJECT, USER = "proj", "user"


@dataclass
class Outcome:
    """One scenario on one client."""

    requests: dict[str, int] = field(default_factory=dict)
    #: The ``OpenStack-API-Version`` values each phase's requests went out with.
    versions: dict[str, set[str]] = field(default_factory=dict)
    conclusions: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)


def _phase(out: Outcome, name: str, wire: Wire, logs: Logs, run: Callable[[], Any]) -> None:
    wire.sent.clear()
    wire.versions.clear()
    logs.lines.clear()
    try:
        result = run()
        raised = None
    except Exception as exc:  # what neutron lets out is a conclusion
        result, raised = None, type(exc).__name__
    out.requests[name] = len(wire.sent)
    out.versions[name] = set(wire.versions)
    out.conclusions[name] = {"raised": raised, "logs": list(logs.lines), "result": result}


def _with_logs(body: Callable[[Logs], Outcome]) -> Outcome:
    logs = Logs()
    root = logging.getLogger("neutron")
    root.addHandler(logs)
    root.setLevel(logging.DEBUG)
    try:
        return body(logs)
    finally:
        root.removeHandler(logs)


# -- the placement report plugin -------------------------------------------------------------
def _agent(bandwidth: int, start: bool = True) -> dict[str, Any]:
    conf = {
        "bridge_mappings": {"physnet0": "br-eth0", "physnet1": "br-eth1"},
        "resource_provider_bandwidths": {
            "br-eth0": {"egress": bandwidth, "ingress": bandwidth},
            "br-eth1": {"egress": 2000, "ingress": 2000},
        },
        "resource_provider_inventory_defaults": {
            "allocation_ratio": 1.0,
            "min_unit": 1,
            "step_size": 1,
            "reserved": 0,
        },
        "resource_provider_packet_processing_without_direction": {HOST: {"any": 500}},
        "resource_provider_packet_processing_inventory_defaults": {
            "allocation_ratio": 1.0,
            "min_unit": 1,
            "step_size": 1,
            "reserved": 0,
        },
        "resource_provider_hypervisors": {"br-eth0": HOST, "br-eth1": HOST},
    }
    agent = {"agent_type": "Open vSwitch agent", "host": HOST, "configurations": conf}
    if start:
        agent["start_flag"] = True
    return agent


class _AgentDb(dict):  # type: ignore[type-arg]
    """The agent's row as the plugin reads and updates it."""

    def __init__(self) -> None:
        super().__init__(resources_synced=None)

    @property
    def resources_synced(self) -> Any:
        return self["resources_synced"]

    @resources_synced.setter
    def resources_synced(self, value: Any) -> None:
        self["resources_synced"] = value

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().update(*args, **kwargs)


def report_plugin(kind: str, admin: Admin, wire: Wire, retry: Retry = None) -> Outcome:
    """The report plugin's sync of an OVS agent: first, unchanged again, one bandwidth changed."""
    from neutron.plugins.ml2.drivers.openvswitch.mech_driver import mech_openvswitch
    from neutron.services.placement_report import plugin as report
    from neutron_lib.callbacks import events, resources

    admin.provider(HOST, CN, VCPU=8)
    agent_db = _AgentDb()
    driver = mock.Mock(obj=mech_openvswitch.OpenvswitchMechanismDriver())
    core = mock.Mock(mechanism_manager=mock.Mock(ordered_mech_drivers=[driver]))
    core._get_agent_by_type_and_host.return_value = agent_db
    plugin = report.PlacementReportPlugin.__new__(report.PlacementReportPlugin)
    plugin._core_plugin = core
    plugin._placement_client = client(kind, wire, retry=retry)
    plugin._agents = report.PlacementReporterAgents(core)
    plugin._batch_notifier = batch = Collect()

    def sync(agent: dict[str, Any]) -> Any:
        payload = events.DBEventPayload(
            mock.Mock(), metadata={"status": "alive"}, desired_state=agent
        )
        plugin.handle_placement_config(resources.AGENT, events.AFTER_UPDATE, None, payload)
        plugin._execute_deferred(batch.take())
        return agent_db.resources_synced

    def body(logs: Logs) -> Outcome:
        out = Outcome()
        _phase(out, "first sync", wire, logs, lambda: sync(_agent(1000)))
        _phase(out, "re-sync, unchanged", wire, logs, lambda: sync(_agent(1000)))
        _phase(out, "re-sync, a bandwidth changed", wire, logs, lambda: sync(_agent(1500)))
        return out

    return _with_logs(body)


# -- the OVN extension's device removal ---------------------------------------------------------
def ovn_removal(kind: str, admin: Admin, wire: Wire, retry: Retry = None) -> Outcome:
    """The OVN extension's batch for a chassis: two bridges, then one removed (rp_deleted)."""
    from neutron.agent.common import placement_report
    from neutron.common.ovn import constants as ovn_const
    from neutron.plugins.ml2.drivers.ovn.mech_driver.ovsdb.extensions import (
        placement as ovn_placement,
    )

    admin.provider(HOST, CN, VCPU=8)
    placement = client(kind, wire, retry=retry)
    hypervisors = {d: {"name": HOST, "uuid": CN} for d in ("br-eth0", "br-eth1")}
    defaults = {"allocation_ratio": 1.0, "min_unit": 1, "step_size": 1, "reserved": 0}

    def state(bridges: dict[str, Any], deleted: set[str]) -> Any:
        return placement_report.PlacementState(
            rp_bandwidths=bridges,
            rp_inventory_defaults=defaults,
            rp_pkt_processing={},
            rp_pkt_processing_inventory_defaults=None,
            driver_uuid_namespace=uuid.UUID(fixed("ovn-namespace")),
            agent_type=ovn_const.OVN_CONTROLLER_AGENT,
            hypervisor_rps=hypervisors,
            device_mappings={"physnet0": ["br-eth0"], "physnet1": ["br-eth1"]},
            supported_vnic_types=["normal", "direct"],
            client=placement,
            rp_deleted=deleted,
        )

    both = {"br-eth0": {"egress": 1000}, "br-eth1": {"egress": 2000}}

    def body(logs: Logs) -> Outcome:
        out = Outcome()
        _phase(
            out,
            "chassis with two bridges",
            wire,
            logs,
            lambda: ovn_placement._send_deferred_batch(state(both, set())),
        )
        _phase(
            out,
            "br-eth1 removed",
            wire,
            logs,
            lambda: ovn_placement._send_deferred_batch(
                state({"br-eth0": both["br-eth0"]}, {"br-eth1"})
            ),
        )
        return out

    return _with_logs(body)


# -- the segments plugin at 1.1 --------------------------------------------------------------
class _Nova:
    """novaclient's aggregates, as the segment notifier uses them (nova is not under test)."""

    def __init__(self) -> None:
        self.made: dict[int, Any] = {}
        self.aggregates = self

    def create(self, name: str, zone: Any) -> Any:
        agg = mock.Mock(id=len(self.made) + 1, uuid=fixed(f"agg-{name}"), hosts=[])
        self.made[agg.id] = agg
        return agg

    def add_host(self, agg_id: int, host: str) -> None:
        self.made[agg_id].hosts.append(host)

    def remove_host(self, agg_id: int, host: str) -> None:
        self.made[agg_id].hosts.remove(host)

    def list(self) -> list[Any]:
        return list(self.made.values())

    def get_details(self, agg_id: int) -> Any:
        return self.made[agg_id]

    def delete(self, agg_id: int) -> None:
        self.made.pop(agg_id)


SEGMENT = fixed("segment-1")


def _subnet(start: str, end: str) -> dict[str, Any]:
    return {
        "id": fixed(f"subnet-{start}"),
        "segment_id": SEGMENT,
        "ip_version": 4,
        "allocation_pools": [{"start": start, "end": end}],
        "gateway_ip": None,
        "enable_dhcp": False,
    }


def _notifier(kind: str, wire: Wire, nova: _Nova, retry: Retry) -> Any:
    from neutron.services.segments import plugin as segments

    notifier = segments.NovaSegmentNotifier.__new__(segments.NovaSegmentNotifier)
    notifier.p_client = client(kind, wire, "placement 1.1", retry)
    notifier.n_client = nova
    notifier.batch_notifier = Collect()
    return notifier


def segments_plugin(kind: str, admin: Admin, wire: Wire, retry: Retry = None) -> Outcome:
    """Subnet callbacks of two neutron servers on one routed segment, at microversion 1.1.

    A subnet is created (the segment's provider, aggregate and IPV4_ADDRESS
    inventory), its pool grown, then both servers grow the pool at once:
    the second server reads the inventory before the first writes.
    """
    from neutron.objects import network as net_obj
    from neutron_lib.callbacks import events, resources

    nova = _Nova()
    one = _notifier(kind, wire, nova, retry)
    other_wire = Wire(wire.url)
    two = _notifier(kind, other_wire, nova, retry)
    subnet = _subnet("10.0.0.10", "10.0.0.19")

    def send(notifier: Any) -> None:
        notifier._send_notifications(notifier.batch_notifier.take())

    def created() -> None:
        payload = events.DBEventPayload(mock.Mock(), states=(subnet,))
        one._notify_subnet_created(resources.SUBNET, events.AFTER_CREATE, None, payload)
        send(one)

    def grown(notifier: Any, old: dict[str, Any], end: str) -> dict[str, Any]:
        new = copy.deepcopy(old)
        new["allocation_pools"][0]["end"] = end
        payload = events.DBEventPayload(mock.Mock(), states=(old, new))
        notifier._notify_subnet_updated(resources.SUBNET, events.AFTER_UPDATE, None, payload)
        return new

    def race() -> None:
        # Server one's inventory update reads, then server two's whole update
        # runs before one's write (a PUT: one's write, or its provider re-read
        # is not a write): both read the same pool.
        other = _subnet("10.0.1.10", "10.0.1.19")
        grown(one, subnet, "10.0.0.29")
        grown(two, other, "10.0.1.49")
        wire.before_write.append(lambda m, u: send(two))
        send(one)

    mappings = [mock.Mock(host=HOST)]
    with mock.patch.object(net_obj.SegmentHostMapping, "get_objects", return_value=mappings):

        def body(logs: Logs) -> Outcome:
            out = Outcome()
            _phase(out, "subnet created", wire, logs, created)
            _phase(
                out, "pool grown", wire, logs, lambda: (grown(one, subnet, "10.0.0.24"), send(one))
            )
            subnet["allocation_pools"][0]["end"] = "10.0.0.24"
            _phase(out, "two servers grow it at once", wire, logs, race)
            out.requests["two servers grow it at once"] += len(other_wire.sent)
            out.versions["two servers grow it at once"] |= set(other_wire.versions)
            return out

        return _with_logs(body)


# -- the QoS plugin ---------------------------------------------------------------------------
VM = fixed("instance-1")
PORT = fixed("port-1")
DEVICE = fixed("device-rp")


def qos_plugin(kind: str, admin: Admin, wire: Wire, retry: Retry = None) -> Outcome:
    """The QoS plugin's allocation change of a bound port: alone, raced by nova, on a deleted VM."""
    from neutron.objects.qos import rule as rule_object
    from neutron.services.qos import qos_plugin as qos
    from neutron_lib.placement import utils as pl_utils

    admin.provider(HOST, CN, VCPU=64)
    admin.provider(f"{HOST}:agent:br-eth0", DEVICE, CN, NET_BW_EGR_KILOBIT_PER_SEC=100000)
    plugin = qos.QoSPlugin.__new__(qos.QoSPlugin)
    plugin._placement_client = client(kind, wire, retry=retry)

    def rule(kbps: int) -> Any:
        return rule_object.QosMinimumBandwidthRule(
            id=fixed(f"rule-{kbps}"), min_kbps=kbps, direction="egress"
        )

    def claim(vm: str, kbps: int) -> None:
        body = {
            "allocations": {
                CN: {"resources": {"VCPU": 2}},
                DEVICE: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": kbps}},
            },
            "consumer_generation": None,
            "project_id": PROJECT,
            "user_id": USER,
            "consumer_type": "INSTANCE",
        }
        admin.call("PUT", f"/allocations/{vm}", body)

    def change(vm: str, before: int, after: int) -> Any:
        old, new = rule(before), rule(after)
        group = str(pl_utils.resource_request_group_uuid(uuid.UUID(PORT), [old]))
        orig = {"id": PORT, "device_id": vm, "binding:profile": {"allocation": {group: DEVICE}}}
        port = copy.deepcopy(orig)
        plugin._change_placement_allocation({"rules": [old]}, {"rules": [new]}, orig, port)
        return port["binding:profile"]

    vcpus = iter(range(3, 100))

    def nova_resizes(m: str, u: str) -> None:
        admin.write(VM, {CN: {"VCPU": next(vcpus)}})

    def raced() -> Any:
        wire.before_write.extend([nova_resizes] * 10)
        try:
            return change(VM, 2000, 3000)
        finally:
            wire.before_write.clear()

    gone = fixed("instance-2")

    def deleted() -> Any:
        claim(gone, 1000)
        wire.before_write.append(lambda m, u: admin.call("DELETE", f"/allocations/{gone}"))
        try:
            return change(gone, 1000, 1500)
        finally:
            wire.before_write.clear()

    claim(VM, 1000)

    def body(logs: Logs) -> Outcome:
        out = Outcome()
        _phase(out, "bandwidth 1000 -> 2000", wire, logs, lambda: change(VM, 1000, 2000))
        _phase(out, "2000 -> 3000 through 10 nova writes", wire, logs, raced)
        _phase(out, "instance deleted mid-change", wire, logs, deleted)
        return out

    return _with_logs(body)


SCENARIOS: dict[str, Callable[[str, Admin, Wire, Retry], Outcome]] = {
    "report plugin sync": report_plugin,
    "OVN device removal": ovn_removal,
    "segments at 1.1": segments_plugin,
    "QoS allocation change": qos_plugin,
}
