"""The fake's route table and body schemas are Placement's, checked against the installed service.

These need openstack-placement, so they run in the gabbi env beside the YAML
files rather than in the unit tests.
"""

from __future__ import annotations

import inspect
import json
import re
import uuid

import pytest

from reportclient.fixture import _schema
from reportclient.fixture._schemas import bodies
from reportclient.fixture._wire import REAL_ROUTES


def test_route_table_is_placements() -> None:
    handler = pytest.importorskip("placement.handler")
    ours = {template: list(methods) for template, methods in REAL_ROUTES}
    theirs = {template: list(methods) for template, methods in handler.ROUTE_DECLARATIONS.items()}
    assert ours == theirs


def test_route_minimum_microversions_are_placements() -> None:
    handler = pytest.importorskip("placement.handler")
    microversion = pytest.importorskip("placement.microversion")
    ours = dict(REAL_ROUTES)
    for template, methods in handler.ROUTE_DECLARATIONS.items():
        for method, wsgi_app in methods.items():
            # Under check_accept's functools.wraps, version_handler's wrapper
            # keeps the handler's name in its closure.
            func, name = wsgi_app.func, None
            while name is None and func is not None:
                name = inspect.getclosurevars(func).nonlocals.get("qualified_name")
                func = getattr(func, "__wrapped__", None)
            versions = microversion.VERSIONED_METHODS.get(name) if name else None
            lowest = min(v[0] for v in versions) if versions else (1, 0)
            assert ours[template][method] == tuple(lowest), (template, method)


def _placement_schemas() -> dict[str, object]:
    alloc = pytest.importorskip("placement.schemas.allocation")
    inv = pytest.importorskip("placement.schemas.inventory")
    rp = pytest.importorskip("placement.schemas.resource_provider")
    rc = pytest.importorskip("placement.schemas.resource_class")
    trait = pytest.importorskip("placement.schemas.trait")
    agg = pytest.importorskip("placement.schemas.aggregate")
    return {
        "put 1.0": (bodies.allocations_schema((1, 0)), alloc.ALLOCATION_SCHEMA),
        "put 1.8": (bodies.allocations_schema((1, 8)), alloc.ALLOCATION_SCHEMA_V1_8),
        "put 1.12": (bodies.allocations_schema((1, 12)), alloc.ALLOCATION_SCHEMA_V1_12),
        "put 1.28": (bodies.allocations_schema((1, 28)), alloc.ALLOCATION_SCHEMA_V1_28),
        "put 1.34": (bodies.allocations_schema((1, 34)), alloc.ALLOCATION_SCHEMA_V1_34),
        "put 1.38": (bodies.allocations_schema((1, 38)), alloc.ALLOCATION_SCHEMA_V1_38),
        "post 1.13": (bodies.post_allocations_schema((1, 13)), alloc.POST_ALLOCATIONS_V1_13),
        "post 1.28": (bodies.post_allocations_schema((1, 28)), alloc.POST_ALLOCATIONS_V1_28),
        "post 1.34": (bodies.post_allocations_schema((1, 34)), alloc.POST_ALLOCATIONS_V1_34),
        "post 1.38": (bodies.post_allocations_schema((1, 38)), alloc.POST_ALLOCATIONS_V1_38),
        "rp post": (
            bodies.provider_schema((1, 0), create=True),
            rp.POST_RESOURCE_PROVIDER_SCHEMA,
        ),
        "rp post 1.14": (bodies.provider_schema((1, 14), create=True), rp.POST_RP_SCHEMA_V1_14),
        "rp put": (bodies.provider_schema((1, 0), create=False), rp.PUT_RESOURCE_PROVIDER_SCHEMA),
        "rp put 1.14": (bodies.provider_schema((1, 14), create=False), rp.PUT_RP_SCHEMA_V1_14),
        "inventory": (bodies.INVENTORY, inv.BASE_INVENTORY_SCHEMA),
        "inventory post": (bodies.INVENTORY_WITH_CLASS, inv.POST_INVENTORY_SCHEMA),
        "inventories": (bodies.INVENTORIES, inv.PUT_INVENTORY_SCHEMA),
        "class name": (bodies.CUSTOM_CLASS_NAME, rc.PUT_RC_SCHEMA_V1_2),
        "provider traits": (bodies.PROVIDER_TRAITS, trait.SET_TRAITS_FOR_RP_SCHEMA),
        "aggregates 1.1": (bodies.AGGREGATES[(1, 1)], agg.PUT_AGGREGATES_SCHEMA_V1_1),
        "aggregates 1.19": (bodies.AGGREGATES[(1, 19)], agg.PUT_AGGREGATES_SCHEMA_V1_19),
    }


def test_schemas_are_placements_keyword_for_keyword_in_placements_order() -> None:
    # Same keys in the same order: jsonschema then reports the same failure first.
    pairs = _placement_schemas()
    for name, (ours, theirs) in pairs.items():
        assert json.dumps(ours) == json.dumps(theirs), name


def test_uuid_format_is_oslo_utils_is_uuid_like() -> None:
    uuidutils = pytest.importorskip("oslo_utils.uuidutils")
    samples = [
        str(uuid.uuid4()),
        uuid.uuid4().hex,
        f"{{{uuid.uuid4()}}}",
        "urn:uuid:" + str(uuid.uuid4()),
        "not-a-uuid",
        "",
        str(uuid.uuid4()).upper(),
        str(uuid.uuid4())[:-1] + "g",
    ]
    for sample in samples:
        assert _schema._uuid_like(sample) is uuidutils.is_uuid_like(sample), sample
    assert re.match(bodies.UUID_KEY, str(uuid.uuid4()))


def test_every_fixture_a_yaml_file_names_is_ours_and_seeds_the_fake() -> None:
    from gabbi import utils

    from tests.gabbi import fixtures, runner

    pg = pytest.importorskip("placement.tests.functional.fixtures.gabbits")
    named = {
        name
        for path in runner.yaml_files()
        for name in utils.load_yaml(yaml_file=str(path)).get("fixtures", [])
    }
    for name in named:
        ours = getattr(fixtures, name)
        mro = ours.__mro__
        # Placement's own set-up (a database) must never run: ours comes first.
        assert mro.index(fixtures._FakeAPIFixture) < mro.index(pg.APIFixture), name
