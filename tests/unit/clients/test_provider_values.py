"""Provider values: ratios compared as Placement stores them, and callbacks returning garbage.

The MariaDB pairs below (ratio sent, ratio read back) were observed on
MariaDB 10.11 through pymysql and SQLAlchemy, the stack Placement reads its
``FLOAT`` column with: the server answers with 6 significant digits of the
single-precision value it stored.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

import reportclient
from reportclient import Inventory, ProviderSpec, Reshape, ReshapeState
from reportclient._clients.providers import ProviderClient
from reportclient._model.providers import ProviderInventories, inventories_from, stored_ratio
from reportclient.fixture import FakePlacement, RequestRecord, make_client
from tests.support.wire import new_uuid

#: (what a client sent, what Placement on MariaDB answered with afterwards).
MARIADB_READS_BACK = [
    (16 / 3, 5.33333),
    (1.5, 1.5),
    (0.1, 0.1),
    (1.000001, 1.0),
    (123456.7, 123457.0),
    (1e-7, 1e-7),
]

#: The float32 value of 16/3, as a MySQL binary-protocol (prepared statement) read returns it.
SIXTEEN_THIRDS_F32 = 5.333333492279053

WRITES = {"PUT", "POST", "PATCH", "DELETE"}

# Placement's reshaper policy wants the service role (see test_reshaper.py).
SERVICE = {"X-Roles": "admin,service"}


@pytest.fixture
def providers(fake: FakePlacement) -> ProviderClient:
    policy = reportclient.default_retry(sleep=lambda _s: None, rand=lambda: 0.5)
    return make_client(
        fake, microversion="1.39", retry=policy, additional_headers=SERVICE
    ).providers


def writes(fake: FakePlacement) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in fake.requests if r.method in WRITES]


# -- ratios compared as stored ----------------------------------------------------


@pytest.mark.parametrize(("sent", "read"), MARIADB_READS_BACK)
def test_a_ratio_equals_what_mariadb_reads_back_for_it(sent: float, read: float) -> None:
    assert stored_ratio(sent) == stored_ratio(read)
    assert Inventory(8, allocation_ratio=sent) == Inventory(8, allocation_ratio=read)


@pytest.mark.parametrize("read", [5.33333, 5.333330154418945, SIXTEEN_THIRDS_F32, 16 / 3])
def test_sixteen_thirds_equals_every_backends_answer(read: float) -> None:
    # MariaDB text protocol, its float32 rounding, MySQL binary protocol, PostgreSQL/SQLite.
    assert Inventory(8, allocation_ratio=16 / 3) == Inventory(8, allocation_ratio=read)


@pytest.mark.parametrize(("a", "b"), [(1.0, 1.5), (16 / 3, 5.3333), (1.0, 1.00001), (2.0, -2.0)])
def test_ratios_that_differ_within_six_digits_differ(a: float, b: float) -> None:
    assert Inventory(8, allocation_ratio=a) != Inventory(8, allocation_ratio=b)


def test_inventories_equal_by_ratio_hash_alike() -> None:
    assert hash(Inventory(8, allocation_ratio=16 / 3)) == hash(
        Inventory(8, allocation_ratio=5.33333)
    )
    assert len({Inventory(8, allocation_ratio=16 / 3), Inventory(8, allocation_ratio=5.33333)}) == 1


def test_other_fields_still_count_in_equality() -> None:
    assert Inventory(8, allocation_ratio=16 / 3) != Inventory(9, allocation_ratio=5.33333)
    assert Inventory(8, reserved=1) != Inventory(8)


def test_inventory_from_json_equals_the_ratio_it_was_written_with() -> None:
    read = Inventory.from_json(json.loads('{"total": 8, "allocation_ratio": 5.33333}'))

    assert Inventory.of({"total": 8, "allocation_ratio": 16 / 3}) == read
    assert Inventory.of(read) == Inventory(8, allocation_ratio=16 / 3)


def test_the_ratio_sent_is_the_one_asked_for() -> None:
    assert Inventory(8, allocation_ratio=16 / 3).to_json()["allocation_ratio"] == 16 / 3


def test_provider_inventories_read_from_mariadb_hold_the_ratio_written() -> None:
    read = ProviderInventories.from_json(
        new_uuid(),
        {
            "resource_provider_generation": 3,
            "inventories": {"VCPU": {"total": 8, "allocation_ratio": 5.33333}},
        },
    )

    assert read.holds({"VCPU": Inventory(8, allocation_ratio=16 / 3)})
    assert not read.holds({"VCPU": Inventory(8, allocation_ratio=1.5)})


@pytest.mark.parametrize("ratio", [math.nan, math.inf, -math.inf, 1e39, -1e39])
def test_a_ratio_placement_cannot_store_is_refused(ratio: float) -> None:
    with pytest.raises(reportclient.InvalidInput, match="allocation_ratio"):
        Inventory(8, allocation_ratio=ratio)
    with pytest.raises(reportclient.InvalidInput, match="allocation_ratio"):
        Inventory.from_json({"total": 8, "allocation_ratio": ratio})


def reconcile_ratio_16_3(providers: ProviderClient, fake: FakePlacement, held: float) -> Any:
    """Reconcile a VCPU ratio of 16/3 over a provider holding ``held``; (provider, report)."""
    rp = fake.create_provider("cn1", inventory={"VCPU": {"total": 8, "allocation_ratio": held}})
    fake.reset_requests()
    spec = ProviderSpec(rp, "cn1", inventories={"VCPU": {"total": 8, "allocation_ratio": 16 / 3}})
    return rp, providers.reconcile([spec])


def test_reconcile_writes_nothing_when_mariadb_holds_the_ratio_rounded(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    # What an earlier reconcile of 16/3 left behind on MariaDB.
    _rp, report = reconcile_ratio_16_3(providers, fake, 5.33333)

    assert report.written == ()
    assert writes(fake) == []


def test_reconcile_still_writes_a_ratio_that_differs(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    rp, report = reconcile_ratio_16_3(providers, fake, 1.0)

    assert report.written == ((rp, "inventories"),)
    assert fake.inventory(rp)["VCPU"].allocation_ratio == 16 / 3


def lost_write_read_back_as_mariadb(fake: FakePlacement, rp: str) -> None:
    """The next write's answer is lost; the re-read shows what MariaDB shows after it landed.

    The write itself is held back (never applied); another writer puts the
    rounded ratio in its place, at the one generation after it. The client
    sees what it would if its own write had landed on MariaDB.
    """
    fake.delay_next_write()

    def hook(_fake: FakePlacement, record: RequestRecord) -> None:
        if record.fault == "delayed":
            fake.set_inventory(rp, {"VCPU": {"total": 8, "allocation_ratio": 5.33333}})

    fake.between_requests(hook)


def set_ratio(current: dict[str, Inventory]) -> dict[str, Inventory]:
    current["VCPU"] = Inventory(8, allocation_ratio=16 / 3)
    return current


def test_an_idempotent_update_whose_answer_was_lost_is_settled_by_the_rounded_read(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    rp = fake.create_provider(inventory={"VCPU": 8})
    lost_write_read_back_as_mariadb(fake, rp)
    fake.reset_requests()

    result = providers.update_inventories(rp, set_ratio, idempotent=True)

    assert result.inventories == {"VCPU": Inventory(8, allocation_ratio=16 / 3)}
    assert [r.method for r in fake.requests] == ["GET", "PUT", "GET"]


def test_a_lost_update_read_back_rounded_is_not_taken_for_another_writers(
    providers: ProviderClient, fake: FakePlacement
) -> None:
    rp = fake.create_provider(inventory={"VCPU": 8})
    lost_write_read_back_as_mariadb(fake, rp)
    fake.reset_requests()

    # N+1 holding what was asked: it may be ours, so it is never applied again.
    with pytest.raises(reportclient.OutcomeUnknown):
        providers.update_inventories(rp, set_ratio)

    assert [r.method for r in fake.requests] == ["GET", "PUT", "GET"]


# -- callbacks returning garbage --------------------------------------------------

BAD_MUTATE_RESULTS: list[Any] = [
    pytest.param(None, "update_inventories' mutate returned None, expected a mapping", id="none"),
    pytest.param(
        [],
        "update_inventories' mutate returned a list, "
        "expected a mapping of resource class -> inventory",
        id="list",
    ),
    pytest.param(8, "update_inventories' mutate returned an int, expected a mapping", id="int"),
    pytest.param({"VCPU": "x"}, "mutate returned a bad entry for 'VCPU': ", id="str-inventory"),
    pytest.param({"VCPU": None}, "mutate returned a bad entry for 'VCPU': ", id="none-inventory"),
    pytest.param(
        {"VCPU": {"total": "8"}}, "mutate returned a bad entry for 'VCPU': ", id="str-total"
    ),
    pytest.param({"vcpu": 8}, "mutate returned a bad entry for 'vcpu': ", id="bad-class"),
    pytest.param({7: 8}, "mutate returned a bad entry for 7: ", id="int-class"),
]


@pytest.mark.parametrize(("returned", "message"), BAD_MUTATE_RESULTS)
def test_a_mutate_returning_garbage_is_invalid_input_and_writes_nothing(
    providers: ProviderClient, fake: FakePlacement, returned: Any, message: str
) -> None:
    rp = fake.create_provider(inventory={"VCPU": 8})
    fake.reset_requests()

    with pytest.raises(reportclient.InvalidInput, match=re.escape(message)):
        providers.update_inventories(rp, lambda _current: returned)

    assert writes(fake) == []
    assert fake.inventory(rp)["VCPU"].total == 8


def test_inventories_from_takes_every_spelling_of_an_inventory() -> None:
    out = inventories_from({"VCPU": 8, "MEMORY_MB": {"total": 64}, "DISK_GB": Inventory(9)}, "x")

    assert out == {"VCPU": Inventory(8), "MEMORY_MB": Inventory(64), "DISK_GB": Inventory(9)}


def reshape_of(**members: Any) -> Reshape:
    """A Reshape with members its type hints refuse, as an untyped caller can build one."""
    return Reshape(**members)


WHERE = "reshape's compute (inventories of provider {root}) returned"

#: (what compute returns, given the tree's root and consumer; the message expected).
BAD_RESHAPES: list[Any] = [
    pytest.param(
        lambda r, c: None, "reshape's compute returned None, expected a Reshape", id="none"
    ),
    pytest.param(lambda r, c: [], "reshape's compute returned list, expected a Reshape", id="list"),
    pytest.param(
        lambda r, c: {"inventories": {}},
        "reshape's compute returned dict, expected a Reshape",
        id="dict",
    ),
    pytest.param(
        lambda r, c: reshape_of(inventories=None),
        "a Reshape whose inventories is None, expected a mapping",
        id="inventories-none",
    ),
    pytest.param(
        lambda r, c: reshape_of(allocations=[c]),
        "a Reshape whose allocations is list, expected a mapping",
        id="allocations-list",
    ),
    pytest.param(
        lambda r, c: reshape_of(inventories={r: []}),
        WHERE + " a list, expected a mapping of resource class -> inventory",
        id="provider-inventories-list",
    ),
    pytest.param(
        lambda r, c: reshape_of(inventories={r: {"VGPU": "x"}}),
        WHERE + " a bad entry for 'VGPU': ",
        id="inventory-str",
    ),
    pytest.param(
        lambda r, c: reshape_of(allocations={c: "x"}),
        "allocations must be a mapping",
        id="consumer-allocations-str",
    ),
]


@pytest.mark.parametrize(("make", "message"), BAD_RESHAPES)
def test_a_reshape_compute_returning_garbage_is_invalid_input_and_posts_nothing(
    providers: ProviderClient,
    fake: FakePlacement,
    tree: tuple[str, str, str],
    make: Any,
    message: str,
) -> None:
    root, child, consumer = tree

    def compute(_state: ReshapeState) -> Reshape:
        returned: Reshape = make(root, consumer)
        return returned

    with pytest.raises(reportclient.InvalidInput, match=re.escape(message.format(root=root))):
        providers.reshape([root, child], [consumer], compute)

    assert writes(fake) == []
    assert set(fake.inventory(root)) == {"VCPU", "VGPU"}
