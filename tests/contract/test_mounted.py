"""Placement served under a mount point (as its own fixture and most deployments serve it).

Both sides are called in-process as WSGI apps with ``SCRIPT_NAME=/placement``;
the fake is also reached over its transport adapter with a ``base_url``
that has the path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import requests
import webob

from reportclient.fixture import FakePlacement
from reportclient.testing import EmbeddedPlacement

from . import new_uuid

MOUNT = "/placement"
ADMIN = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}

Send = Callable[..., webob.Response]


@pytest.fixture(params=["fake", "real"])
def send(request: pytest.FixtureRequest) -> Send:
    """Send one request to a WSGI app mounted at :data:`MOUNT`."""
    if request.param == "fake":
        app: Any = FakePlacement().wsgi_app()
    else:
        server: EmbeddedPlacement = request.getfixturevalue("real_placement")
        # The app itself, so it can be given a SCRIPT_NAME (the service has none).
        app = server._server.get_app()

    def _send(
        method: str, path: str, headers: Mapping[str, str] = ADMIN, body: Any = None
    ) -> webob.Response:
        req = webob.Request.blank(
            path, method=method, headers=dict(headers), environ={"SCRIPT_NAME": MOUNT}
        )
        if body is not None:
            req.body = json.dumps(body).encode()
            req.content_type = "application/json"
        return req.get_response(app)

    return _send


def test_the_mount_point_without_a_slash_needs_a_token(send: Send) -> None:
    assert send("GET", "", headers={}).status_int == 401
    assert send("GET", "/", headers={}).status_int == 200


def test_provider_links_start_with_the_mount_point(send: Send) -> None:
    rp = new_uuid()
    created = send("POST", "/resource_providers", body={"name": f"m-{rp}", "uuid": rp})
    assert created.status_int == 200
    links = {link["rel"]: link["href"] for link in created.json["links"]}
    assert links["self"] == f"{MOUNT}/resource_providers/{rp}"
    assert links["traits"] == f"{MOUNT}/resource_providers/{rp}/traits"
    shown = send("GET", f"/resource_providers/{rp}").json
    assert shown["links"] == created.json["links"]


def test_resource_class_links_start_with_the_mount_point(send: Send) -> None:
    shown = send("GET", "/resource_classes/VCPU").json
    assert shown["links"] == [{"rel": "self", "href": f"{MOUNT}/resource_classes/VCPU"}]


def test_the_transport_adapter_with_a_path_links_under_it() -> None:
    fake = FakePlacement(base_url="http://placement.test/placement")
    session = requests.Session()
    session.mount(fake.url, fake.transport_adapter())
    rp = fake.create_provider(name="linked")
    doc = session.get(f"{fake.url}/resource_providers/{rp}", headers=ADMIN).json()
    assert doc["links"][0] == {"rel": "self", "href": f"/placement/resource_providers/{rp}"}
    unauthorised = session.get(fake.url, headers={})
    assert unauthorised.status_code == 401
