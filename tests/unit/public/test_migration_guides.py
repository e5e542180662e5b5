"""The migration guides' examples run as written, against the fake Placement.

Each guide's literal blocks (the ``::`` paragraphs of doc/source/migrate_*.rst) are executed
in order in one namespace, so a later block may use what an earlier one built, as a reader
would; between two examples the test may arrange the state the next one starts from. The
namespace holds only what the guides take from the caller's service (nova's ``CONF``, an
instance, a port...) as plain stand-ins, and ``client_from_conf`` builds a client on the
fake. What each example says it did is then read back from the fake.
"""

from __future__ import annotations

import pathlib
import re
import textwrap
import types
from typing import Any

import pytest

import reportclient
import reportclient.config
from reportclient.fixture import FakePlacement, make_client
from tests.support.wire import new_uuid

DOCS = pathlib.Path(__file__).resolve().parents[3] / "doc" / "source"
PROJECT, USER = "p-guide", "u-guide"


def code_blocks(page: pathlib.Path) -> list[tuple[int, str]]:
    """Every ``::`` literal block of ``page``, dedented, with its first line's number."""
    lines = page.read_text().splitlines()
    blocks: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and not line.lstrip().startswith(".."):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            start, body = j, []
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith((" ", "\t"))):
                body.append(lines[j])
                j += 1
            if body:
                blocks.append((start + 1, textwrap.dedent("\n".join(body)).strip() + "\n"))
            i = j
        else:
            i += 1
    return blocks


def run_block(page: str, block: tuple[int, str], namespace: dict[str, Any]) -> None:
    """Execute one block in ``namespace``; a traceback names the page and the line."""
    line, code = block
    exec(compile(code, f"doc/source/{page}:{line}", "exec"), namespace)


@pytest.fixture
def fake() -> FakePlacement:
    return FakePlacement()


@pytest.fixture
def from_conf(fake: FakePlacement, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """``client_from_conf(conf)`` builds a client on the fake; records the conf it was given."""
    seen: list[object] = []

    def build(conf: object, **kwargs: Any) -> reportclient.PlacementClient:
        seen.append(conf)
        return make_client(fake, microversion="1.39", **kwargs)

    monkeypatch.setattr(reportclient.config, "client_from_conf", build)
    return seen


def test_every_guide_has_runnable_examples() -> None:
    for name in ("migrate_nova.rst", "migrate_neutron.rst"):
        blocks = code_blocks(DOCS / name)
        assert len(blocks) >= 2, name
        for line, code in blocks:
            compile(code, f"{name}:{line}", "exec")  # a SyntaxError names the line


def test_the_nova_guide_resizes_and_shrinks_as_it_says(
    fake: FakePlacement, from_conf: list[object]
) -> None:
    source = fake.create_provider(inventory={"VCPU": 2, "MEMORY_MB": 2048})
    target = fake.create_provider(inventory={"VCPU": 8, "MEMORY_MB": 8192})
    pf_rp = fake.create_provider(inventory={"NET_BW_EGR_KILOBIT_PER_SEC": 10000})
    instance = types.SimpleNamespace(uuid=new_uuid(), project_id=PROJECT, user_id=USER)
    held = {source: {"VCPU": 2, "MEMORY_MB": 2048}}
    fake.put_allocations(instance.uuid, held, project_id=PROJECT, user_id=USER)
    namespace: dict[str, Any] = {
        "CONF": object(),
        "flavor": types.SimpleNamespace(vcpus=4, memory_mb=4096),
        "instance": instance,
        "migration": types.SimpleNamespace(uuid=new_uuid()),
        "context": types.SimpleNamespace(global_id="req-" + new_uuid()),
        "pf_rp": pf_rp,
    }
    resize, shrink = code_blocks(DOCS / "migrate_nova.rst")

    run_block("migrate_nova.rst", resize, namespace)

    assert from_conf == [namespace["CONF"]]
    # The migration record holds what the instance held; the instance the destination.
    migration = namespace["migration"].uuid
    assert fake.allocations(migration) == held
    assert (fake.consumer(migration) or {}).get("consumer_type") == "MIGRATION"
    destination = {target: {"VCPU": 4, "MEMORY_MB": 4096}}
    assert fake.allocations(instance.uuid) == destination

    # The shrink example: a port's bandwidth, 1000 of it given back.
    bandwidth = {pf_rp: {"NET_BW_EGR_KILOBIT_PER_SEC": 3000}}
    fake.put_allocations(instance.uuid, destination | bandwidth, project_id=PROJECT, user_id=USER)
    run_block("migrate_nova.rst", shrink, namespace)

    assert fake.allocations(instance.uuid) == destination | {
        pf_rp: {"NET_BW_EGR_KILOBIT_PER_SEC": 2000}
    }


def neutron_namespace(fake: FakePlacement) -> tuple[dict[str, Any], str]:
    pf_rp = fake.create_provider(
        inventory={"NET_BW_EGR_KILOBIT_PER_SEC": 10000, "NET_BW_IGR_KILOBIT_PER_SEC": 10000}
    )
    other_rp = fake.create_provider(inventory={"VCPU": 4})
    port = types.SimpleNamespace(device_id=new_uuid(), project_id=PROJECT)
    fake.put_allocations(
        port.device_id,
        {
            pf_rp: {"NET_BW_EGR_KILOBIT_PER_SEC": 3000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000},
            other_rp: {"VCPU": 1},
        },
        project_id=PROJECT,
        user_id=USER,
    )
    consumer = new_uuid()
    fake.put_allocations(consumer, {other_rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)
    namespace: dict[str, Any] = {
        "client": make_client(fake, microversion="1.39"),
        "pf_rp": pf_rp,
        "port": port,
        "instance_user_id": USER,
        "consumer": consumer,
        "new_allocations": {other_rp: {"VCPU": 2}},
    }
    return namespace, other_rp


def test_the_neutron_guide_updates_bandwidth_and_swaps_as_it_says(fake: FakePlacement) -> None:
    namespace, other_rp = neutron_namespace(fake)

    for block in code_blocks(DOCS / "migrate_neutron.rst"):
        run_block("migrate_neutron.rst", block, namespace)

    pf_rp, port = namespace["pf_rp"], namespace["port"]
    assert fake.allocations(port.device_id) == {
        pf_rp: {"NET_BW_EGR_KILOBIT_PER_SEC": 2000, "NET_BW_IGR_KILOBIT_PER_SEC": 1500},
        other_rp: {"VCPU": 1},
    }
    assert fake.allocations(namespace["consumer"]) == {other_rp: {"VCPU": 2}}


def test_the_neutron_guides_update_refuses_a_provider_the_port_does_not_use(
    fake: FakePlacement,
) -> None:
    """The guide's check keeps neutron-lib's PlacementAllocationRpNotExists refusal."""
    namespace, _ = neutron_namespace(fake)
    first_block = code_blocks(DOCS / "migrate_neutron.rst")[0][1]
    definitions = first_block.split("\ntry:\n", 1)[0]
    exec(compile(definitions, "migrate_neutron.rst", "exec"), namespace)
    port = namespace["port"]
    before = fake.allocations(port.device_id)
    elsewhere = fake.create_provider(inventory={"NET_BW_EGR_KILOBIT_PER_SEC": 10000})
    fake.reset_requests()

    with pytest.raises(LookupError, match=re.escape(elsewhere)):
        namespace["client"].update_allocations(
            port.device_id,
            namespace["qos_update"]({elsewhere: {"NET_BW_EGR_KILOBIT_PER_SEC": 100}}),
            project_id=PROJECT,
            user_id=USER,
        )

    assert fake.allocations(port.device_id) == before
    assert [r.method for r in fake.requests] == ["GET"]


def test_add_allocations_alone_adds_the_provider_neutron_lib_would_refuse(
    fake: FakePlacement,
) -> None:
    """What the neutron guide says ``add_allocations`` does with a provider not yet held."""
    namespace, _ = neutron_namespace(fake)
    port = namespace["port"]
    elsewhere = fake.create_provider(inventory={"NET_BW_EGR_KILOBIT_PER_SEC": 10000})

    namespace["client"].update_allocations(
        port.device_id,
        reportclient.add_allocations({elsewhere: {"NET_BW_EGR_KILOBIT_PER_SEC": 100}}),
        project_id=PROJECT,
        user_id=USER,
    )

    assert fake.allocations(port.device_id)[elsewhere] == {"NET_BW_EGR_KILOBIT_PER_SEC": 100}


@pytest.mark.parametrize(
    ("page", "calls"),
    [
        ("migrate_nova.rst",
         ["get_provider_allocations", "get_tree_allocations", "delete_provider"]),
        (
            "migrate_neutron.rst",
            ["list_traits", "get_trait", "delete_trait", "list_resource_classes",
             "get_resource_class", "delete_resource_class"],
        ),
    ],
)  # fmt: skip
def test_the_guides_map_to_the_typed_calls_that_exist(page: str, calls: list[str]) -> None:
    text = (DOCS / page).read_text()
    for call in calls:
        assert f"providers.{call}(" in text, call
        assert callable(getattr(reportclient.ProviderClient, call)), call
    assert "Not typed" not in text
    assert "cascade`` (release every instance on the node first) is not" not in text
