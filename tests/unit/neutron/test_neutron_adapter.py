"""The drop-in's calls on requests-mock: versions on the wire, uuid.UUID arguments, its table.

The fake Placement (``reportclient.fixture``) is mounted on requests-mock and
every request is read back from it: the microversion it was sent at and its
body. neutron-lib is not installed here: a failure raises the library's typed
error (tests/neutron holds the table to neutron-lib's own class).
"""

from __future__ import annotations

import copy
import pathlib
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests_mock
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_config import fixture as cfg_fixture

import reportclient
from reportclient.fixture import FakePlacement
from reportclient.neutron import PlacementAPIClient
from reportclient.neutron._errors import table_rst
from tests.support.neutron import never_sleeps

DOCS = pathlib.Path(__file__).resolve().parents[3] / "doc" / "source"
CN = uuid.uuid5(uuid.NAMESPACE_DNS, "compute-node")
AGENT = uuid.uuid5(uuid.NAMESPACE_DNS, "agent")
BRIDGE = uuid.uuid5(uuid.NAMESPACE_DNS, "bridge")
SEGMENT = uuid.uuid5(uuid.NAMESPACE_DNS, "segment")
VM = uuid.uuid5(uuid.NAMESPACE_DNS, "instance")
AGG = uuid.uuid5(uuid.NAMESPACE_DNS, "aggregate")
BW = "NET_BW_EGR_KILOBIT_PER_SEC"
INV = {"total": 1000, "reserved": 0, "min_unit": 1, "max_unit": 1000, "step_size": 1}
INV = INV | {"allocation_ratio": 1.0}


@pytest.fixture
def fake() -> Iterator[FakePlacement]:
    placement = FakePlacement()
    placement.create_provider("compute-node", uuid=str(CN), inventory={"VCPU": 8})
    with requests_mock.Mocker() as mocker:
        placement.mount(mocker)
        yield placement


def drop_in(conf: cfg_fixture.Config, fake: FakePlacement, version: str) -> PlacementAPIClient:
    session = ks_session.Session(auth=token_endpoint.Token(fake.url, "admin"))
    return PlacementAPIClient(conf.conf, version, session=session, retry=never_sleeps())


def as_text(value: Any) -> Any:
    """``value`` with every uuid.UUID spelled as text, as a caller passing strings would."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {as_text(k): as_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(as_text(v) for v in value)
    return value


def claim_instance(fake: FakePlacement) -> None:
    fake.create_provider("device", uuid=str(BRIDGE), inventory={BW: 10000}, parent=str(CN))
    held = {str(CN): {"VCPU": 2}, str(BRIDGE): {BW: 1000}}
    fake.put_allocations(str(VM), held, project_id="p", user_id="u")


#: The report plugin's and the QoS plugin's calls at 1.37, with uuid.UUID where neutron passes one.
REPORT_AND_QOS: list[tuple[str, tuple[Any, ...]]] = [
    ("update_trait", ("CUSTOM_PHYSNET_PHYSNET0",)),
    ("list_resource_providers", (None, None, None, CN)),
    ("ensure_resource_provider", ({"name": "agent", "uuid": AGENT, "parent_provider_uuid": CN},)),
    ("ensure_resource_provider", ({"name": "agent", "uuid": AGENT, "parent_provider_uuid": CN},)),
    ("update_resource_provider_traits", (AGENT, ["CUSTOM_PHYSNET_PHYSNET0"])),
    ("update_resource_provider_inventories", (AGENT, {BW: INV})),
    ("update_resource_provider_inventories", (AGENT, {BW: INV | {"total": 2000}})),
    ("get_resource_provider", (AGENT,)),
    ("list_resource_provider_traits", (AGENT,)),
    ("list_aggregates", (AGENT,)),
    ("list_allocations", (VM,)),
    ("update_qos_allocation", (VM, {BRIDGE: {BW: 500}})),
    ("delete_resource_provider", (AGENT,)),
]  # fmt: skip

#: The segments plugin's calls at 1.1: provider, aggregate, inventory, its growth, removal.
SEGMENTS: list[tuple[str, tuple[Any, ...]]] = [
    ("create_resource_provider", ({"name": "Neutron segment", "uuid": SEGMENT},)),
    ("associate_aggregates", (SEGMENT, [AGG])),
    ("update_resource_provider_inventories", (SEGMENT, {"IPV4_ADDRESS": INV})),
    ("list_aggregates", (SEGMENT,)),
    ("delete_resource_provider", (SEGMENT,)),
]


def run(client: PlacementAPIClient, calls: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
    """Each call's answer (a ``requests.Response`` as its status and text)."""
    answers = []
    for method, args in calls:
        got = getattr(client, method)(*copy.deepcopy(args))
        answers.append((got.status_code, got.text) if hasattr(got, "status_code") else got)
    return answers


def test_every_report_plugin_and_qos_request_goes_at_neutrons_1_37(
    conf: cfg_fixture.Config, fake: FakePlacement
) -> None:
    claim_instance(fake)
    fake.reset_requests()

    run(drop_in(conf, fake, "placement 1.37"), REPORT_AND_QOS)

    assert {r.microversion for r in fake.requests} == {"1.37"}
    assert fake.allocations(str(VM))[str(BRIDGE)] == {BW: 1500}


def test_every_request_of_a_qos_change_raced_by_nova_goes_at_1_37(
    conf: cfg_fixture.Config, fake: FakePlacement
) -> None:
    claim_instance(fake)
    fake.conflict_next_writes(str(VM), 3)
    fake.reset_requests()
    sleeps: list[float] = []
    session = ks_session.Session(auth=token_endpoint.Token(fake.url, "admin"))
    client = PlacementAPIClient(conf.conf, session=session, retry=never_sleeps(sleeps))

    client.update_qos_allocation(VM, {BRIDGE: {BW: 500}})

    assert [(r.method, r.microversion) for r in fake.requests] == [
        ("GET", "1.37"),
        ("PUT", "1.37"),
    ] * 4
    assert len(sleeps) == 3  # a backoff per conflict, recorded, never slept
    assert fake.allocations(str(VM))[str(BRIDGE)] == {BW: 1500}


def test_every_segments_request_goes_at_1_1_with_its_shapes(
    conf: cfg_fixture.Config, fake: FakePlacement
) -> None:
    client = drop_in(conf, fake, "placement 1.1")

    created, aggregates, _inventories = run(client, SEGMENTS[:3])
    read = client.get_inventory(SEGMENT, "IPV4_ADDRESS")  # the plugin's growth of its pool
    read["total"] += 5
    client.update_resource_provider_inventory(SEGMENT, read, "IPV4_ADDRESS")
    grown = fake.inventory(str(SEGMENT))["IPV4_ADDRESS"].total
    run(client, SEGMENTS[3:])

    assert created is None  # below 1.20 Placement answers a create with no body
    assert aggregates == {"aggregates": [str(AGG)]}  # 1.1: no generation in the answer
    assert grown == 1005
    assert {r.microversion for r in fake.requests} == {"1.1"}


@pytest.mark.parametrize(
    ("version", "calls", "arrange"),
    [("placement 1.37", REPORT_AND_QOS, claim_instance), ("placement 1.1", SEGMENTS, None)],
    ids=["report and QoS", "segments"],
)
def test_uuid_objects_send_what_their_text_sends(
    conf: cfg_fixture.Config,
    version: str,
    calls: list[tuple[str, tuple[Any, ...]]],
    arrange: Callable[[FakePlacement], None] | None,
) -> None:
    sent = []
    for spelled in (calls, as_text(calls)):
        placement = FakePlacement()
        placement.create_provider("compute-node", uuid=str(CN), inventory={"VCPU": 8})
        if arrange is not None:
            arrange(placement)
        placement.reset_requests()
        with requests_mock.Mocker() as mocker:
            placement.mount(mocker)
            answers = run(drop_in(conf, placement, version), spelled)
        sent.append(([(r.method, r.path, r.json) for r in placement.requests], answers))

    assert sent[0] == sent[1]
    assert any(isinstance(arg, uuid.UUID) for _m, args in calls for arg in args)


def test_importing_the_adapter_imports_nothing_of_neutron() -> None:
    code = (
        "import sys, reportclient.neutron; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'neutron', 'neutron_lib'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_without_neutron_lib_a_failure_is_the_librarys_typed_error(
    conf: cfg_fixture.Config, fake: FakePlacement, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "neutron_lib.exceptions.placement", None)  # not importable
    client = drop_in(conf, fake, "placement 1.37")

    with pytest.raises(reportclient.PlacementError) as caught:
        client.get_resource_provider(uuid.uuid4())

    assert caught.value.status == 404


def test_the_docs_error_table_is_the_codes() -> None:
    assert (DOCS / "neutron_errors.inc").read_text() == "\n".join(table_rst()) + "\n"
