"""Placement's gabbi fixtures, seeding the fake instead of a database.

Each YAML file names fixture classes from
``placement/tests/functional/fixtures/gabbits.py``; gabbi looks them up by
name in this module. Placement's classes build their provider trees with
``test_base`` helpers (``tb.create_provider``, ``tb.add_inventory``,
``tb.set_traits``, ``tb.set_allocation``...) and the user/project/resource
class objects. We keep Placement's own ``start_fixture`` bodies, so the trees
are exactly Placement's, including when a new Placement release changes
them, and swap those helpers for :class:`_FakeDB`, which writes the same
things into a fresh :class:`FakePlacement` through its arrange API.

The class layering does the rest: each class here inherits Placement's class
first and :class:`_FakeAPIFixture` second, so Placement's
``super().start_fixture()`` lands in ours (environment variables and a new
fake) rather than in Placement's database set-up.
"""

from __future__ import annotations

import os
import uuid as uuidlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest import mock

from placement.tests.functional.fixtures import gabbits as pg

from reportclient.fixture import FakePlacement
from tests.gabbi import wsgi

__all__ = [
    "APIFixture",
    "AllocationFixture",
    "CORSFixture",
    "DeepNUMANetworkFixture",
    "GranularFixture",
    "LegacyRBACPolicyFixture",
    "NUMAAggregateFixture",
    "NUMANetworkFixture",
    "NeutronQoSMultiSegmentFixture",
    "NonSharedStorageFixture",
    "OpenPolicyFixture",
    "SecureRBACPolicyFixture",
    "SharedStorageFixture",
]

#: Set by placement's APIFixture for every file; the YAML reads them as $ENVIRON[...].
_FRESH_UUIDS = (
    "RP_UUID RP_NAME RP_UUID1 RP_NAME1 RP_UUID2 RP_NAME2 PROJECT_ID ADMIN_PROJECT_ID "
    "SERVICE_PROJECT_ID USER_ID PROJECT_ID_ALT USER_ID_ALT INSTANCE_UUID MIGRATION_UUID "
    "CONSUMER_UUID PARENT_PROVIDER_UUID ALT_PARENT_PROVIDER_UUID"
).split()
_CUSTOM_CLASSES = {
    "CUSTOM_RES_CLASS": "CUSTOM_IRON_NFV",
    "CUSTOM_RES_CLASS1": "CUSTOM_IRON_NFV1",
    "CUSTOM_RES_CLASS2": "CUSTOM_IRON_NFV2",
}


class _Provider:
    """What ``tb.create_provider`` returns, as far as the fixtures use it."""

    def __init__(self, fake: FakePlacement, uuid: str, name: str) -> None:
        self.uuid = uuid
        self.name = name
        self._fake = fake
        self._context = None

    def set_aggregates(self, aggregates: list[str]) -> None:
        _set_aggregates(self._fake, self.uuid, aggregates)


def _set_aggregates(fake: FakePlacement, rp: str, aggregates: Any) -> None:
    # ResourceProvider.set_aggregates leaves the generation alone unless asked
    # (increment_generation=False); FakePlacement.set_aggregates bumps it.
    fake._state.set_traits_and_aggregates(rp, None, aggregates=aggregates, bump=False)


class _External:
    """A user or project: Placement keys consumers on their external ids."""

    def __init__(self, context: object = None, external_id: str = "") -> None:
        self.external_id = external_id

    def create(self) -> None:
        """Users and projects need no row in the fake."""


class _Consumer:
    def __init__(self, uuid: str, user: _External, project: _External) -> None:
        self.uuid = uuid
        self.user = user
        self.project = project


class _ResourceClass:
    def __init__(self, context: object = None, name: str = "") -> None:
        self.name = name

    def create(self) -> None:
        wsgi.current_fake().create_resource_class(self.name)


class _FakeDB:
    """The ``test_base`` helpers Placement's fixtures call, writing to the current fake."""

    @staticmethod
    def create_provider(context: object, name: str, *aggs: str, **kwargs: Any) -> _Provider:
        fake = wsgi.current_fake()
        uuid = kwargs.get("uuid") or getattr(pg.uuids, name)
        fake.create_provider(name, uuid, parent=kwargs.get("parent"))
        if aggs:
            _set_aggregates(fake, uuid, aggs)
        return _Provider(fake, uuid, name)

    @staticmethod
    def ensure_rc(context: object, name: str) -> None:
        if name.startswith("CUSTOM_"):
            wsgi.current_fake().create_resource_class(name)

    @staticmethod
    def add_inventory(rp: _Provider, rc: str, total: int, **kwargs: Any) -> None:
        fake = wsgi.current_fake()
        kwargs.setdefault("max_unit", total)
        inventory: dict[str, Any] = dict(fake.inventory(rp.uuid))
        inventory[rc] = {"total": total, **kwargs}
        fake.set_inventory(rp.uuid, inventory)

    @staticmethod
    def set_traits(rp: _Provider, *traits: str) -> None:
        fake = wsgi.current_fake()
        # Placement's helper creates a trait it does not know; so does this one.
        ensure = getattr(fake._state, "ensure_trait", None)
        for name in traits:
            if ensure is not None and name.startswith("CUSTOM_"):
                ensure(name)
        fake.set_traits(rp.uuid, traits)

    @staticmethod
    def ensure_consumer(
        ctx: object, user: _External, project: _External, consumer_id: str | None = None
    ) -> _Consumer:
        return _Consumer(consumer_id or str(uuidlib.uuid4()), user, project)

    @staticmethod
    def set_allocation(
        ctx: object, rp: _Provider, consumer: _Consumer, rc_used_dict: dict[str, int]
    ) -> None:
        # Placement's replace_all: the consumer's allocations become exactly these.
        wsgi.current_fake().put_allocations(
            consumer.uuid,
            {rp.uuid: dict(rc_used_dict)},
            project_id=consumer.project.external_id,
            user_id=consumer.user.external_id,
            consumer_type=None,
        )

    @staticmethod
    def create_user_and_project(ctx: object, prefix: str = "fake") -> tuple[_External, _External]:
        return _External(external_id=f"{prefix}-user"), _External(external_id=f"{prefix}-project")


class _Config:
    """Stands in for the oslo.config fixture: [cors] options reach the fake, others are kept."""

    def __init__(self) -> None:
        self.options: dict[str, dict[str, Any]] = {}

    def config(self, group: str = "DEFAULT", **kwargs: Any) -> None:
        self.options.setdefault(group, {}).update(kwargs)
        if group == "cors":
            app = wsgi.current_fake()._app
            app.cors = replace(app.cors, **{k: tuple(v) for k, v in kwargs.items()})


class _Policy:
    """Stands in for Placement's policy fixture: rules opened to everyone open the fake."""

    def set_rules(self, rules: dict[str, str], overwrite: bool = True) -> None:
        if rules and all(check == "@" for check in rules.values()):
            wsgi.current_fake()._app.open_policy = True


class _FakeAPIFixture(pg.APIFixture):
    """Placement's APIFixture for the fake: the same environment, an empty fake."""

    def start_fixture(self) -> None:
        self.context = None
        self.conf_fixture = _Config()
        self.policy_fixture = _Policy()
        for name in _FRESH_UUIDS:
            os.environ[name] = str(uuidlib.uuid4())
        os.environ.update(_CUSTOM_CLASSES)
        self.fake = FakePlacement()
        self.fake._app.secure_rbac = self._secure_rbac
        wsgi.serve_fake(self.fake)

    def stop_fixture(self) -> None:
        wsgi.serve_fake(None)


class _Seeding:
    """First in each class's MRO: runs Placement's seeding with the fake's helpers."""

    def start_fixture(self) -> None:
        with _seeding():
            super().start_fixture()


@contextmanager
def _seeding() -> Iterator[None]:
    with (
        mock.patch.object(pg, "tb", _FakeDB),
        mock.patch.object(pg.user_obj, "User", _External),
        mock.patch.object(pg.project_obj, "Project", _External),
        mock.patch.object(pg.rc_obj, "ResourceClass", _ResourceClass),
    ):
        yield


class APIFixture(_FakeAPIFixture):
    """An empty fake with Placement's environment variables."""


class AllocationFixture(_Seeding, pg.AllocationFixture, _FakeAPIFixture):
    """See Placement's AllocationFixture."""


class SharedStorageFixture(_Seeding, pg.SharedStorageFixture, _FakeAPIFixture):
    """See Placement's SharedStorageFixture."""


class NUMAAggregateFixture(_Seeding, pg.NUMAAggregateFixture, _FakeAPIFixture):
    """See Placement's NUMAAggregateFixture."""


class NUMANetworkFixture(_Seeding, pg.NUMANetworkFixture, _FakeAPIFixture):
    """See Placement's NUMANetworkFixture."""


class DeepNUMANetworkFixture(_Seeding, pg.DeepNUMANetworkFixture, _FakeAPIFixture):
    """See Placement's DeepNUMANetworkFixture."""


class NonSharedStorageFixture(_Seeding, pg.NonSharedStorageFixture, _FakeAPIFixture):
    """See Placement's NonSharedStorageFixture."""


class CORSFixture(_Seeding, pg.CORSFixture, _FakeAPIFixture):
    """See Placement's CORSFixture: [cors] allowed_origin and allow_headers."""


class GranularFixture(_Seeding, pg.GranularFixture, _FakeAPIFixture):
    """See Placement's GranularFixture."""


class OpenPolicyFixture(_Seeding, pg.OpenPolicyFixture, _FakeAPIFixture):
    """See Placement's OpenPolicyFixture: every rule open to every user."""


class SecureRBACPolicyFixture(_FakeAPIFixture):
    """Placement's new default policies (secure RBAC)."""

    _secure_rbac = True


class LegacyRBACPolicyFixture(_FakeAPIFixture):
    """Placement's deprecated policies (the default in 16.0.0)."""

    _secure_rbac = False


class NeutronQoSMultiSegmentFixture(_Seeding, pg.NeutronQoSMultiSegmentFixture, _FakeAPIFixture):
    """See Placement's NeutronQoSMultiSegmentFixture."""
