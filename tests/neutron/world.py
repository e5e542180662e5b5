"""What tests/neutron drives neutron's own code with: a counting wire, a Placement, neutron's fakes.

Both clients get the same kind of keystoneauth Session (:class:`Wire`): it
counts every request the client sends and can run another writer's action
just before one of the client's writes, which is how a race is placed
between a client's read and its write without a sleep. neutron's plugins
are its own classes, built without their ``__init__`` where that would
start threads or reach nova and a database (the report plugin's and the
segment notifier's batch notifiers collect their events, run by the
plugin's own executor); everything Placement sees is what neutron's code
asked of the client.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import requests
import tenacity
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_config import cfg

import reportclient.neutron
from reportclient.testing import EmbeddedPlacement

ADMIN = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
#: The clients under test, by the name the table shows.
KINDS = ("neutron-lib", "reportclient")


class Wire(ks_session.Session):  # type: ignore[misc]
    """A keystoneauth Session that counts requests and runs queued actions before writes.

    ``versions`` holds the ``OpenStack-API-Version`` each request went out
    with, read off the request keystoneauth prepared (neutron-lib puts the
    header itself, the library's transport asks keystoneauth for it).
    """

    def __init__(self, url: str) -> None:
        super().__init__(auth=token_endpoint.Token(url, "admin"))
        self.url = url
        self.sent: list[str] = []
        self.versions: list[str] = []
        self.before_write: list[Callable[[str, str], None]] = []

    def request(self, url: str, method: str, **kwargs: Any) -> Any:
        if method.upper() in ("PUT", "POST", "DELETE") and self.before_write:
            self.before_write.pop(0)(method.upper(), url)
        self.sent.append(f"{method.upper()} {url.replace(self.url, '')}")
        try:
            resp = super().request(url, method, **kwargs)
        except ks_exc.HttpError as exc:
            self._version_of(exc.response)
            raise
        self._version_of(resp)
        return resp

    def _version_of(self, resp: Any) -> None:
        headers = resp.request.headers if resp is not None and resp.request is not None else {}
        self.versions.append(headers.get("OpenStack-API-Version", "none"))


def configure() -> None:
    """Register the options neutron's code reads, as neutron-server does at start."""
    from neutron.conf import common
    from neutron.conf.plugins.ml2 import config as ml2

    if "send_events_interval" not in cfg.CONF:
        cfg.CONF.register_opts(common.core_opts)  # what the plugins' batch notifiers read
    if "placement" not in cfg.CONF:
        common.register_placement_opts()
    if "ml2" not in cfg.CONF:
        ml2.register_ml2_plugin_opts()
    cfg.CONF([], project="neutron")


def client(
    kind: str,
    wire: Wire,
    version: str = "placement 1.37",
    retry: tenacity.Retrying | None = None,
) -> Any:
    """neutron-lib's class or the drop-in, over ``wire``, as neutron constructs it.

    Both send through ``wire`` in place of the Session ``[placement]``
    would make. ``retry`` is the drop-in's policy (None: the production
    default, what the comparison runs); tests pass one that never sleeps.
    """
    if kind == "neutron-lib":
        from neutron_lib.placement import client as nl_client

        made = nl_client.PlacementAPIClient(cfg.CONF, openstack_api_version=version)
        made._client = wire  # neutron-lib's session, built from [placement] on first use
        return made
    return reportclient.neutron.PlacementAPIClient(cfg.CONF, version, session=wire, retry=retry)


class Admin:
    """Another writer (nova, an operator), straight to Placement at 1.39; never counted."""

    def __init__(self, placement: EmbeddedPlacement) -> None:
        self.url = placement.url

    def call(self, method: str, path: str, body: Any = None) -> Any:
        resp = requests.request(method, self.url + path, json=body, headers=ADMIN, timeout=30)
        if resp.status_code >= 400:
            raise AssertionError(f"{method} {path}: {resp.status_code} {resp.text}")
        return resp.json() if resp.content else None

    def provider(self, name: str, rp: str, parent: str | None = None, **inventory: int) -> str:
        self.call(
            "POST",
            "/resource_providers",
            {"name": name, "uuid": rp, "parent_provider_uuid": parent},
        )
        if inventory:
            inv = {rc: {"total": n} for rc, n in inventory.items()}
            self.call(
                "PUT",
                f"/resource_providers/{rp}/inventories",
                {"inventories": inv, "resource_provider_generation": 0},
            )
        return rp

    def allocations(self, consumer: str) -> dict[str, Any]:
        return dict(self.call("GET", f"/allocations/{consumer}"))

    def write(self, consumer: str, allocations: dict[str, dict[str, int]]) -> None:
        """nova's write of the instance: what it holds now, with ``allocations`` changed."""
        now = self.allocations(consumer)
        held = {rp: dict(a["resources"]) for rp, a in now["allocations"].items()}
        for rp, resources in allocations.items():
            held.setdefault(rp, {}).update(resources)
        self.call(
            "PUT",
            f"/allocations/{consumer}",
            {
                "allocations": {rp: {"resources": r} for rp, r in held.items()},
                "consumer_generation": now.get("consumer_generation"),
                "project_id": now.get("project_id", "p"),
                "user_id": now.get("user_id", "u"),
                "consumer_type": "INSTANCE",
            },
        )

    def state(self) -> dict[str, Any]:
        """Everything neutron and nova could have changed, generations left out.

        A generation counts writes, and the drop-in's point is to send fewer
        of them; every field a generation guards is compared itself.
        """
        out: dict[str, Any] = {"providers": {}, "allocations": {}}
        consumers: set[str] = set()
        for rp in self.call("GET", "/resource_providers")["resource_providers"]:
            u = rp["uuid"]
            base = f"/resource_providers/{u}"
            out["providers"][rp["name"]] = {
                "uuid": u,
                "parent": rp["parent_provider_uuid"],
                "inventories": self.call("GET", base + "/inventories")["inventories"],
                "traits": sorted(self.call("GET", base + "/traits")["traits"]),
                "aggregates": sorted(self.call("GET", base + "/aggregates")["aggregates"]),
            }
            consumers |= set(self.call("GET", base + "/allocations")["allocations"])
        for c in sorted(consumers):
            out["allocations"][c] = self.allocations(c)["allocations"]
            for held in out["allocations"][c].values():
                held.pop("generation", None)
        out["custom traits"] = self.call("GET", "/traits?name=startswith:CUSTOM_")["traits"]
        classes = self.call("GET", "/resource_classes")["resource_classes"]
        out["custom classes"] = sorted(
            c["name"] for c in classes if c["name"].startswith("CUSTOM_")
        )
        return out


class Logs(logging.Handler):
    """neutron's log lines as a conclusion: logger, level and the message's template."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[tuple[str, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("neutron.") and record.levelno >= logging.INFO:
            self.lines.append((record.name, record.levelname, str(record.msg)))


class Collect:
    """A batch notifier that keeps its events, for the plugin's own executor to run."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def queue_event(self, event: Any) -> None:
        self.events.append(event)

    def take(self) -> list[Any]:
        events, self.events = self.events, []
        return events


def fixed(name: str) -> str:
    """A uuid both sides share (each runs on its own Placement with the same names)."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, name))
