"""What a raw write concerns, and that no module outside the gateway spells a Placement path."""

from __future__ import annotations

import ast
import pathlib

import pytest

import reportclient
from reportclient._gateway.routes import Concerns, concerns

C = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
D = "1a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
RP = "3f1b8a52-5c3e-4f3a-9d1c-1a2b3c4d5e6f"
ALL = Concerns(everything=True)
NONE = Concerns()

ROWS = [
    ("a read changes nothing", "GET", f"/allocations/{C}", None, NONE),
    ("a consumer's PUT", "PUT", f"/allocations/{C}", {}, Concerns(consumers=frozenset({C}))),
    ("upper case is the same consumer", "DELETE", f"/allocations/{C.upper()}", None,
     Concerns(consumers=frozenset({C}))),
    ("a POST names its consumers", "POST", "/allocations", {C: {}, D: {}},
     Concerns(consumers=frozenset({C, D}))),
    ("a POST whose body cannot be read", "POST", "/allocations", ["x"], ALL),
    ("a provider's field", "PUT", f"/resource_providers/{RP}/inventories/VCPU", {},
     Concerns(providers=frozenset({RP}))),
    ("a provider's DELETE", "DELETE", f"/resource_providers/{RP}", None,
     Concerns(providers=frozenset({RP}))),
    ("a create by uuid re-creates it", "POST", "/resource_providers", {"uuid": RP, "name": "x"},
     Concerns(providers=frozenset({RP}))),
    ("a create without a uuid", "POST", "/resource_providers", {"name": "x"}, NONE),
    ("a reshape", "POST", "/reshaper", {"inventories": {RP: {}}, "allocations": {C: {}}},
     Concerns(consumers=frozenset({C}), providers=frozenset({RP}))),
    ("creating a trait changes no provider", "PUT", "/traits/CUSTOM_X", None, NONE),
    ("creating a class (1.7+): no provider", "PUT", "/resource_classes/CUSTOM_X", None, NONE),
    ("POST /resource_classes creates one", "POST", "/resource_classes", {"name": "CUSTOM_X"}, NONE),
    (
        "a class renamed (1.2-1.6): both names",
        "PUT",
        "/resource_classes/CUSTOM_X",
        {"name": "CUSTOM_Y"},
        Concerns(classes=frozenset({"CUSTOM_X", "CUSTOM_Y"})),
    ),
    (
        "a rename with an unreadable body: the old name",
        "PUT",
        "/resource_classes/CUSTOM_X",
        ["CUSTOM_Y"],
        Concerns(classes=frozenset({"CUSTOM_X"})),
    ),
    (
        "a class deleted",
        "DELETE",
        "/resource_classes/CUSTOM_X",
        None,
        Concerns(classes=frozenset({"CUSTOM_X"})),
    ),
    ("a trait deleted", "DELETE", "/traits/CUSTOM_X", None,
     Concerns(traits=frozenset({"CUSTOM_X"}))),
    ("an escaped path forgets everything", "DELETE", f"/resource_providers/{RP}%3Fa=b", None,
     ALL),
    ("an unknown route forgets everything", "PUT", "/somewhere/else", None, ALL),
    ("a provider's unknown sub-route", "PUT", f"/resource_providers/{RP}/other", None, ALL),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "body", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_what_a_raw_request_concerns(method, path, body, expected):
    assert concerns(method, path, body) == expected


_ROUTES = (
    "/allocations",
    "/resource_providers",
    "/reshaper",
    "/traits",
    "/resource_classes",
    "/usages",
    "/allocation_candidates",
)


def _path_literals(source: str) -> list[str]:
    """String constants (f-string parts included) that start like a Placement route."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.startswith(_ROUTES):
                found.append(node.value)
    return found


def test_no_module_outside_the_gateway_builds_a_placement_path():
    """A route spelled elsewhere would be reached without the caches hearing of it.

    Docstrings name routes (``GET /allocations``) and are not paths: only a
    constant that starts with the route does.
    """
    package = pathlib.Path(reportclient.__file__).parent
    offenders = {}
    for module in package.rglob("*.py"):
        relative = module.relative_to(package).as_posix()
        if relative.startswith(("_gateway/", "fixture/", "testing/")):
            continue  # the gateway itself; the fake and the harness are servers
        literals = _path_literals(module.read_text())
        if literals:
            offenders[relative] = literals
    assert offenders == {}
