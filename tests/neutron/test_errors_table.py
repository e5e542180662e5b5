"""The adapter's error table against neutron-lib's own class, failure by failure.

Every public method of neutron-lib 5.0.1's ``PlacementAPIClient`` is called
on both classes with the same arguments while requests-mock answers every
request the same way: each request failing one way (a 404 naming a
provider, a 404 naming an inventory, any other 404, a 400, a 409 generation
conflict, any other 409, a 500, a refused connection), or the reads
answered and only the writes failing. What each class lets out (the
exception's type, and its message for neutron-lib's own types) must be the
same: the table in ``reportclient/neutron/_errors.py`` was read off
neutron-lib's code, and this holds it to neutron-lib's behaviour. The
differences the adapter makes on purpose are listed in :data:`DIFFERENT`
and checked to be what doc/source/neutron_adapter.rst says.
"""

from __future__ import annotations

import copy
import inspect
import json
import pathlib
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
import requests_mock
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from neutron_lib.placement import client as nl_client
from oslo_config import cfg

import reportclient.neutron
from reportclient import default_retry
from reportclient.neutron._errors import TABLE, WRAPPED
from tests.neutron.world import configure

configure()

URL = "http://placement.errors.test"
RP, CONSUMER, AGG = (str(uuid.uuid5(uuid.NAMESPACE_DNS, n)) for n in ("rp", "vm", "agg"))
INV = {"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 8, "step_size": 1}
INV = INV | {"allocation_ratio": 1.0}
BW = "NET_BW_EGR_KILOBIT_PER_SEC"

#: One call per behaviour of each method: (name, method, args).
CALLS: list[tuple[str, str, tuple[Any, ...]]] = [
    ("create_resource_provider", "create_resource_provider", ({"name": "n", "uuid": RP},)),
    ("update_resource_provider", "update_resource_provider", ({"name": "n2", "uuid": RP},)),
    ("ensure_resource_provider", "ensure_resource_provider", ({"name": "n2", "uuid": RP},)),
    ("delete_resource_provider", "delete_resource_provider", (RP,)),
    ("get_resource_provider", "get_resource_provider", (RP,)),
    ("list_resource_providers", "list_resource_providers", ("n", None, None, RP)),
    ("inventories", "update_resource_provider_inventories", (RP, {"VCPU": INV})),
    ("inventories at 1", "update_resource_provider_inventories", (RP, {"VCPU": INV}, 1)),
    ("delete inventories", "delete_resource_provider_inventories", (RP,)),
    ("delete inventory", "delete_resource_provider_inventory", (RP, "VCPU")),
    ("get_inventory", "get_inventory", (RP, "VCPU")),
    ("inventory", "update_resource_provider_inventory", (RP, INV, "VCPU")),
    (
        "inventory read at 1",
        "update_resource_provider_inventory",
        (RP, INV | {"resource_provider_generation": 1}, "VCPU"),
    ),
    ("associate_aggregates", "associate_aggregates", (RP, {"aggregates": [AGG]})),
    ("list_aggregates", "list_aggregates", (RP,)),
    ("list_traits", "list_traits", ()),
    ("get_trait", "get_trait", ("CUSTOM_A",)),
    ("update_trait", "update_trait", ("CUSTOM_A",)),
    ("delete_trait", "delete_trait", ("CUSTOM_A",)),
    ("traits", "update_resource_provider_traits", (RP, ["CUSTOM_A"])),
    ("traits at 1", "update_resource_provider_traits", (RP, ["CUSTOM_A"], 1)),
    ("list rp traits", "list_resource_provider_traits", (RP,)),
    ("delete rp traits", "delete_resource_provider_traits", (RP,)),
    ("list_resource_classes", "list_resource_classes", ()),
    ("get_resource_class", "get_resource_class", ("CUSTOM_X",)),
    ("create_resource_class", "create_resource_class", ("CUSTOM_X",)),
    ("update_resource_class", "update_resource_class", ("CUSTOM_X",)),
    ("delete_resource_class", "delete_resource_class", ("CUSTOM_X",)),
    ("list_allocations", "list_allocations", (CONSUMER,)),
    (
        "update_allocation",
        "update_allocation",
        (CONSUMER, {"allocations": {RP: {"resources": {BW: 1}}}, "consumer_generation": 1}),
    ),
    ("update_qos_allocation", "update_qos_allocation", (CONSUMER, {RP: {BW: 500}})),
]

#: The segments plugin's calls, at its 1.1.
SEGMENTS = {
    "create_resource_provider",
    "associate_aggregates",
    "inventories",
    "get_inventory",
    "inventory",
    "inventory read at 1",
    "list_aggregates",
    "delete_resource_provider",
}


def _error(status: int, code: str | None, detail: str) -> dict[str, Any]:
    error: dict[str, Any] = {"status": status, "title": "t", "detail": detail}
    return {"errors": [error | ({"code": code} if code else {})]}


def _conflict_detail(path: str) -> str:
    if path.startswith("/allocations"):
        return "consumer generation conflict - expected 2 but got 1"
    return "resource provider generation conflict"


#: Each failure: (status, Placement's code, the detail for a request's path) or None (refused).
FAILURES: dict[str, tuple[int, str | None, Callable[[str], str]] | None] = {
    "404 provider": (404, None, lambda p: f"No resource provider with uuid {RP} found"),
    "404 inventory": (404, None, lambda p: "No inventory of class VCPU found"),
    "404 other": (404, None, lambda p: "The resource could not be found."),
    "400": (400, None, lambda p: "JSON does not validate"),
    "409 generation": (409, "placement.concurrent_update", _conflict_detail),
    "409 other": (409, "placement.undefined_code", lambda p: "Conflict: name or capacity"),
    "500": (500, None, lambda p: "Internal error"),
    "refused": None,
}


def _read(path: str) -> Any:
    """What Placement answers the reads both classes make, for a provider and a consumer."""
    doc = {"uuid": RP, "name": "n", "generation": 1, "links": []}
    doc |= {"parent_provider_uuid": None, "root_provider_uuid": RP}
    where = path.split("?")[0]
    if where == "/resource_providers":
        return {"resource_providers": [doc]}
    if where == f"/resource_providers/{RP}":
        return doc
    for field, empty in (("inventories", {}), ("traits", []), ("aggregates", [])):
        if where == f"/resource_providers/{RP}/{field}":
            return {field: empty, "resource_provider_generation": 1}
    if where == f"/resource_providers/{RP}/inventories/VCPU":
        return INV | {"resource_provider_generation": 1}
    if where.startswith(f"/allocations/{CONSUMER}"):
        held = {RP: {"resources": {BW: 1000}, "generation": 1}}
        return {"allocations": held, "consumer_generation": 1, "project_id": "p", "user_id": "u"}
    if where.startswith("/allocations/"):
        return {"allocations": {}}  # any other consumer, a malformed uuid included
    return {"traits": [], "resource_classes": []}


def wire_failing(mocker: requests_mock.Mocker, failure: str, writes_only: bool, api: str) -> None:
    """Answer every request of ``mocker`` with ``failure`` (or only the writes)."""
    shape = FAILURES[failure]
    minor = int(api.split(".")[1])

    def answer(request: Any, context: Any) -> str:
        path = request.path_url
        # Placement never answers a read with a 409.
        if request.method == "GET" and (writes_only or (shape and shape[0] == 409)):
            context.status_code = 200
            return json.dumps(_read(path))
        if shape is None:
            raise requests.exceptions.ConnectionError("refused")
        status, code, detail = shape
        context.status_code = status
        context.headers["Content-Type"] = "application/json"
        return json.dumps(_error(status, code if minor >= 23 else None, detail(path)))

    mocker.register_uri(requests_mock.ANY, requests_mock.ANY, text=answer)


def _session() -> ks_session.Session:
    return ks_session.Session(auth=token_endpoint.Token(URL, "admin"))


def clients(api: str) -> dict[str, Any]:
    """neutron-lib's class and the drop-in, each on its own Session to ``URL``, at ``api``."""
    lib = nl_client.PlacementAPIClient(cfg.CONF, openstack_api_version=api)
    lib._client = _session()
    policy = default_retry(base=0.001, cap=0.001, sleep=lambda _s: None)
    ours = reportclient.neutron.PlacementAPIClient(cfg.CONF, api, session=_session(), retry=policy)
    return {"neutron-lib": lib, "reportclient": ours}


def outcome(made: Any, method: str, args: tuple[Any, ...]) -> str:
    """What a call let out: ``returned``, or the exception's type (and neutron-lib's message)."""
    try:
        getattr(made, method)(*copy.deepcopy(args))
    except Exception as exc:
        name = type(exc).__name__
        if type(exc).__module__.startswith("neutron_lib") and name != "PlacementClientError":
            return f"{name}: {exc}"
        status = getattr(exc, "http_status", None)
        return name if status is None else f"{name} {status}"
    return "returned"


_SEGMENT_WRITES = ("inventories", "inventory", "inventory read at 1")

#: The adapter's differences on purpose: (api, call, failure, writes only) ->
#: (what neutron-lib lets out, what the adapter does), each one a row of
#: doc/source/neutron_adapter.rst.
DIFFERENT = {
    # At 1.1 a 409 has no code: neutron-lib's retry reads errors[0]['code'].
    **{
        ("placement 1.1", name, failure, writes_only): ("KeyError", ours)
        for name in _SEGMENT_WRITES
        for failure, ours in (
            ("409 generation", "PlacementResourceProviderGenerationConflict"),
            ("409 other", "PlacementClientError"),
        )
        for writes_only in (False, True)
    },
    # The provider deleted between neutron-lib's read of its generation and
    # its write: neutron-lib names the route, the adapter the provider.
    **{
        (api, name, "404 provider", True): (
            "PlacementResourceNotFound",
            "PlacementResourceProviderNotFound",
        )
        for api in ("placement 1.1", "placement 1.37")
        for name in ("inventory", "inventory read at 1")
    },
    # At the generation the record carries the adapter reads nothing first:
    # a 404 that does not name the provider is the write's, not a read's.
    **{
        (api, "inventory read at 1", failure, False): (
            "PlacementResourceProviderNotFound",
            "PlacementResourceNotFound",
        )
        for api in ("placement 1.1", "placement 1.37")
        for failure in ("404 inventory", "404 other")
    },
}

#: What the messages may differ in: the adapter names a route by its path
#: (the library's errors carry no endpoint), and a conflict its engine gave
#: up on without the generation it last sent.
_COSMETIC = ((re.escape(URL), ""), (r"with generation \w+", "with generation N"))


def same_words(text: str) -> str:
    for pattern, spelled in _COSMETIC:
        text = re.sub(pattern, spelled, text)
    return text


def cases() -> Iterator[Any]:
    for api in ("placement 1.37", "placement 1.1"):
        for name, method, args in CALLS:
            if api == "placement 1.1" and name not in SEGMENTS:
                continue
            for failure in FAILURES:
                for writes_only in (False, True):
                    ident = f"{api[-4:]}-{name}-{failure}-{'writes' if writes_only else 'all'}"
                    yield pytest.param(api, name, method, args, failure, writes_only, id=ident)


@pytest.mark.parametrize(("api", "name", "method", "args", "failure", "writes_only"), cases())
def test_each_failure_lets_out_what_neutron_lib_lets_out(
    api: str, name: str, method: str, args: tuple[Any, ...], failure: str, writes_only: bool
) -> None:
    seen = {}
    for kind, made in clients(api).items():
        with requests_mock.Mocker() as mocker:
            wire_failing(mocker, failure, writes_only, api)
            seen[kind] = outcome(made, method, args)
    theirs, ours = seen["neutron-lib"], seen["reportclient"]
    expected = DIFFERENT.get((api, name, failure, writes_only))
    if expected is None:
        assert same_words(ours) == same_words(theirs)
    else:
        assert (theirs.split(":")[0], ours.split(":")[0]) == expected


#: Input Placement refuses with a 400 (or, a consumer's, reads as holding nothing)
#: and the library refuses before the wire.
MALFORMED: list[tuple[str, tuple[Any, ...]]] = [
    ("update_resource_provider_traits", (RP, ["not a trait"])),
    ("update_resource_provider_inventories", (RP, {"VCPU": INV | {"total": "eight"}})),
    ("update_resource_provider_inventory", (RP, INV | {"total": -1}, "VCPU")),
    ("update_qos_allocation", ("not-a-uuid", {RP: {BW: 500}})),
]


@pytest.mark.parametrize(("method", "args"), MALFORMED, ids=[m for m, _a in MALFORMED])
def test_input_refused_before_the_wire_is_answered_as_placement_answers_it(
    method: str, args: tuple[Any, ...]
) -> None:
    seen = {}
    for kind, made in clients("placement 1.37").items():
        with requests_mock.Mocker() as mocker:
            wire_failing(mocker, "400", True, "placement 1.37")
            seen[kind] = outcome(made, method, args)
            if kind == "reportclient":
                assert all(r.method == "GET" for r in mocker.request_history)
    assert same_words(seen["reportclient"]) == same_words(seen["neutron-lib"])


def test_every_method_of_the_table_is_called_here() -> None:
    called = {method for _name, method, _args in CALLS}
    assert set(TABLE) | WRAPPED | {"update_allocation", "update_qos_allocation"} <= called


def test_every_public_method_of_neutron_libs_class_is_here_with_its_parameters() -> None:
    def public(cls: type) -> dict[str, list[str]]:
        return {
            name: [p for p in inspect.signature(fn).parameters if not p.startswith("_")]
            for name, fn in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")
        }

    theirs = public(nl_client.PlacementAPIClient)
    ours = public(reportclient.neutron.PlacementAPIClient)
    assert {name: ours.get(name) for name in theirs} == theirs
    assert {method for _name, method, _args in CALLS} == set(theirs)


def test_each_difference_kept_on_purpose_is_documented() -> None:
    page = pathlib.Path(__file__).resolve().parents[2] / "doc" / "source" / "neutron_adapter.rst"
    text = re.sub(r"\s+", " ", page.read_text())
    for theirs, ours in set(DIFFERENT.values()):
        assert f"``{ours}`` where neutron-lib raises ``{theirs}``" in text, (theirs, ours)
