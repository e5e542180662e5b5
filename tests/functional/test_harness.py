"""Tests of the real-Placement test harness itself (reportclient.testing)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from reportclient.testing import (
    EmbeddedPlacement,
    PlacementAdmin,
    PlacementAdminError,
    PlacementServer,
    PlacementStartError,
)
from tests.functional._helpers import Real

pytestmark = pytest.mark.functional

_REPO_ROOT = Path(__file__).resolve().parents[2]


def _new_id() -> str:
    return str(uuid.uuid4())


def _allocation_body(
    rp: str, vcpu: int = 2, memory_mb: int = 512, generation: int | None = None
) -> dict[str, object]:
    resources = {"VCPU": vcpu, "MEMORY_MB": memory_mb} if memory_mb else {"VCPU": vcpu}
    return {
        "allocations": {rp: {"resources": resources}},
        "consumer_generation": generation,
        "consumer_type": "INSTANCE",
        "project_id": _new_id(),
        "user_id": _new_id(),
    }


def _port_accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


# -- EmbeddedPlacement --------------------------------------------------------------------------


def test_root_announces_max_microversion(real_placement: EmbeddedPlacement) -> None:
    body = requests.get(real_placement.url + "/", timeout=10).json()
    version = body["versions"][0]
    assert version["max_version"] == "1.39"
    assert version["min_version"] == "1.0"
    assert real_placement.max_microversion == "1.39"
    assert real_placement.token == "admin"
    assert real_placement.url.startswith("http://127.0.0.1:")
    assert not real_placement.url.endswith("/")


def test_standard_classes_and_traits_synced_before_serving(
    placement_admin: PlacementAdmin,
) -> None:
    classes = placement_admin.request("GET", "/resource_classes").json()["resource_classes"]
    assert {"VCPU", "MEMORY_MB", "DISK_GB"} <= {c["name"] for c in classes}
    traits = placement_admin.request("GET", "/traits?name=startswith:COMPUTE_").json()["traits"]
    assert "COMPUTE_NODE" in traits


def test_compute_node_fixture_inventory(placement_admin: PlacementAdmin, compute_node: str) -> None:
    inventory = placement_admin.inventory(compute_node)
    assert inventory["VCPU"]["total"] == 8
    assert inventory["VCPU"]["max_unit"] == 8
    assert inventory["MEMORY_MB"]["total"] == 4096
    assert inventory["MEMORY_MB"]["max_unit"] == 4096
    assert inventory["DISK_GB"]["total"] == 100
    assert placement_admin.usages(compute_node) == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}


def test_inventory_shorthand_and_child_provider(placement_admin: PlacementAdmin) -> None:
    parent = placement_admin.create_provider(inventory={"VCPU": 4})
    child = placement_admin.create_provider(parent=parent, inventory={"SRIOV_NET_VF": 2})
    assert placement_admin.inventory(parent)["VCPU"]["total"] == 4
    assert placement_admin.inventory(child)["SRIOV_NET_VF"]["total"] == 2
    assert placement_admin.provider(child)["parent_provider_uuid"] == parent


def test_new_consumer_put_at_1_39(placement_admin: PlacementAdmin, compute_node: str) -> None:
    consumer = _new_id()
    assert placement_admin.get_allocations(consumer) == {"allocations": {}}

    response = placement_admin.put_allocations(consumer, _allocation_body(compute_node))
    assert response.status_code == 204, response.text

    body = placement_admin.get_allocations(consumer)
    assert body["consumer_generation"] == 1
    assert body["consumer_type"] == "INSTANCE"
    assert body["allocations"][compute_node]["resources"] == {"VCPU": 2, "MEMORY_MB": 512}
    assert placement_admin.usages(compute_node)["VCPU"] == 2
    assert placement_admin.provider_allocations(compute_node)[consumer]["resources"]["VCPU"] == 2

    # A second null-generation write is a conflict: the consumer exists now.
    stale = placement_admin.put_allocations(consumer, _allocation_body(compute_node))
    assert stale.status_code == 409
    assert stale.json()["errors"][0]["code"] == "placement.concurrent_update"

    assert placement_admin.delete_allocations(consumer).status_code == 204
    assert placement_admin.delete_allocations(consumer).status_code == 404


def test_requests_seen_counts_exactly(real: Real) -> None:
    consumer = _new_id()
    real.placement.clear_requests_seen()

    real.admin.put_allocations(consumer, _allocation_body(real.node))
    real.admin.get_allocations(consumer)
    real.admin.request("GET", "/nowhere")

    seen = real.placement.requests_seen
    assert [(r.method, r.path, r.status) for r in seen] == [
        ("PUT", f"/allocations/{consumer}", 204),
        ("GET", f"/allocations/{consumer}", 200),
        ("GET", "/nowhere", 404),
    ]
    assert all(r.microversion == "1.39" for r in seen)
    assert all(r.response_request_id and r.response_request_id.startswith("req-") for r in seen)
    assert real.placement.wire_count() == 3
    assert real.placement.wire_count("get", "/allocations/") == 1

    real.placement.clear_requests_seen()
    assert real.placement.requests_seen == []
    assert real.placement.log_lines == []


def test_global_request_id_reaches_placement(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    global_id = f"req-{_new_id()}"
    real_placement.clear_requests_seen()

    placement_admin.request(
        "GET", "/resource_providers", headers={"X-Openstack-Request-Id": global_id}
    )
    placement_admin.request(
        "GET", "/resource_providers", headers={"X-Openstack-Request-Id": "junk"}
    )

    accepted, rejected = real_placement.requests_seen
    assert accepted.sent_request_id == global_id
    assert accepted.global_request_id == global_id
    assert accepted.response_request_id != global_id  # Placement's local id is its own
    assert rejected.sent_request_id == "junk"
    assert rejected.global_request_id is None  # only req-<uuid> is accepted

    # Placement's own request log line carries the global id in its logging context.
    request_lines = [
        line for line in real_placement.log_lines if line.logger == "placement.requestlog"
    ]
    assert len(request_lines) == 2
    assert request_lines[0].global_request_id == global_id
    assert request_lines[0].request_id == accepted.response_request_id
    assert '"GET /resource_providers" status: 200' in request_lines[0].message
    assert request_lines[1].global_request_id is None


def test_concurrent_writes_are_serialised(
    real_placement: EmbeddedPlacement, placement_admin: PlacementAdmin
) -> None:
    # One serving thread means SQLite never sees two writers: no "database is locked" 500s.
    rp = placement_admin.create_provider(inventory={"VCPU": {"total": 64, "max_unit": 64}})
    headers = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}

    def claim(_: int) -> int:
        body = _allocation_body(rp, vcpu=1, memory_mb=0)
        url = f"{real_placement.url}/allocations/{_new_id()}"
        return requests.put(url, json=body, headers=headers, timeout=30).status_code

    with ThreadPoolExecutor(max_workers=32) as pool:
        statuses = list(pool.map(claim, range(64)))
    assert statuses == [204] * 64
    assert placement_admin.usages(rp)["VCPU"] == 64


def test_admin_error_carries_response_body(placement_admin: PlacementAdmin) -> None:
    with pytest.raises(PlacementAdminError) as info:
        placement_admin.set_inventory(_new_id(), {"VCPU": 1})
    assert "404" in str(info.value)
    assert "No resource provider with uuid" in str(info.value)


def test_second_embedded_instance_is_refused(real_placement: EmbeddedPlacement) -> None:
    with pytest.raises(RuntimeError, match="another EmbeddedPlacement"):
        EmbeddedPlacement().start()
    # The refused start must not have disturbed the running one.
    assert requests.get(real_placement.url + "/", timeout=10).status_code == 200


_STOP_SCRIPT = textwrap.dedent(
    """
    import json, socket, threading
    from reportclient.testing import EmbeddedPlacement

    def accepts(port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return True
        except OSError:
            return False

    result = {}
    placement = EmbeddedPlacement().start()
    port, thread = placement.port, placement.thread
    result["startup_seconds"] = placement.startup_seconds
    result["accepts_before"] = accepts(port)
    result["alive_before"] = thread.is_alive()
    placement.stop()
    placement.stop()  # idempotent
    result["accepts_after"] = accepts(port)
    result["alive_after"] = thread.is_alive() or thread in threading.enumerate()

    # The context manager also stops the server when the body raises.
    try:
        with EmbeddedPlacement() as failing:
            port2, thread2 = failing.port, failing.thread
            raise ValueError("test failed")
    except ValueError:
        pass
    result["accepts_after_failure"] = accepts(port2)
    result["alive_after_failure"] = thread2.is_alive()
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    result["threads_left"] = [t.name for t in others]
    print(json.dumps(result))
    """
)


def test_embedded_stop_releases_port_and_thread() -> None:
    # Run in a fresh interpreter: Placement's DB layer is process-global, so a second embedded
    # instance cannot run next to the session-scoped ``real_placement``.
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(_REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [sys.executable, "-c", _STOP_SCRIPT], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"embedded startup (fresh interpreter): {result['startup_seconds']:.2f}s")
    assert result["accepts_before"] and result["alive_before"]
    assert not result["accepts_after"]
    assert not result["alive_after"]
    assert not result["accepts_after_failure"]
    assert not result["alive_after_failure"]
    assert result["threads_left"] == []


# -- PlacementServer ------------------------------------------------------------------------------


def test_process_keeps_data_across_restart(placement_process: PlacementServer) -> None:
    print(f"process startup: {placement_process.startup_seconds:.2f}s")
    assert placement_process.max_microversion == "1.39"
    admin = PlacementAdmin(placement_process.url, placement_process.token)
    rp = admin.create_provider(inventory={"VCPU": {"total": 8, "max_unit": 8}})
    consumer = _new_id()
    assert (
        admin.put_allocations(consumer, _allocation_body(rp, vcpu=3, memory_mb=0)).status_code
        == 204
    )
    port, pid = placement_process.port, placement_process.pid

    placement_process.restart()

    assert placement_process.port == port
    assert placement_process.pid != pid
    assert admin.usages(rp)["VCPU"] == 3
    assert admin.get_allocations(consumer)["consumer_generation"] == 1
    assert placement_process.db_path.exists()
    assert '"PUT /allocations/' in placement_process.read_log()


def test_process_kill_then_connection_error_then_recover(
    placement_process: PlacementServer,
) -> None:
    admin = PlacementAdmin(placement_process.url, placement_process.token)
    rp = admin.create_provider(inventory={"VCPU": 8})

    placement_process.kill()

    assert not placement_process.running
    with pytest.raises(requests.ConnectionError):
        requests.get(placement_process.url + "/", timeout=5)

    placement_process.restart()
    assert admin.inventory(rp)["VCPU"]["total"] == 8


def test_process_records_requests(placement_process: PlacementServer) -> None:
    placement_process.clear_requests_seen()
    admin = PlacementAdmin(placement_process.url, placement_process.token)
    global_id = f"req-{_new_id()}"
    admin.request("GET", "/resource_providers", headers={"X-Openstack-Request-Id": global_id})
    (record,) = placement_process.requests_seen
    assert (record.method, record.path, record.status) == ("GET", "/resource_providers", 200)
    assert record.global_request_id == global_id
    assert global_id in placement_process.read_log()


def test_process_stop_cleans_up() -> None:
    server = PlacementServer().start()
    tmpdir, port = server.db_path.parent, server.port
    server.stop()
    server.stop()  # idempotent
    assert not tmpdir.exists()
    assert not server.running
    assert not _port_accepts(port)
    assert "serving Placement" in server.read_log()


def test_process_start_failure_reports_log() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        server = PlacementServer(port=busy.getsockname()[1])
        with pytest.raises(PlacementStartError, match="Address already in use"):
            server.start()
    assert not server.running
