"""pytest plugin: put the fake behind Placement's fixture and record the Placement traffic.

Loaded with ``-p tests.external.plugin``. ``--placement-side=fake`` swaps
Placement's ``PlacementFixture`` class for the drop-in at configure time,
before any test module is imported, so suites that subclass it at import
time (nova's) get the fake too; the suites' own code and assertions are
untouched. ``--record=PATH`` writes one JSON line per request to Placement
(``/placement`` on a wsgi-intercepted host) and one per test outcome.
"""

from __future__ import annotations

import base64
import json
import random
import sys
import time
import uuid
from typing import IO, Any
from urllib.parse import urlsplit

import pytest
import requests

_state: dict[str, Any] = {"test": None, "seq": 0, "out": None, "drawn": random.Random(0)}
# uuids the suites themselves make (nova's uuidsentinel and its services,
# osc-placement's consumers) come from a generator seeded per test, so both
# sides use the same ones: nova iterates sets and dicts keyed by them, and
# their order (uuid comparison, string hashing) decides the order of its
# requests. Uuids the server makes (Placement's or the fake's) stay random.
_UUID_LIBRARIES = ("uuid", "oslo_utils.uuidutils", "oslo_utils.fixture")
_SUITE_PACKAGES = ("nova", "osc_placement")
_uuid4 = uuid.uuid4


def _suite_uuid4() -> uuid.UUID:
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in _UUID_LIBRARIES:
        frame = frame.f_back
    caller = frame.f_globals.get("__name__", "") if frame is not None else ""
    if caller.split(".", 1)[0] in _SUITE_PACKAGES:
        return uuid.UUID(int=_state["drawn"].getrandbits(128), version=4)
    return _uuid4()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("external")
    group.addoption("--placement-side", choices=("real", "fake"), default="real")
    group.addoption("--record", default=None, help="JSON lines of requests and outcomes")


def _b64(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return base64.b64encode(data).decode()


def _is_placement(url: str) -> bool:
    return urlsplit(url).path.startswith("/placement")


def _write(line: dict[str, Any]) -> None:
    out: IO[str] | None = _state["out"]
    if out is not None:
        out.write(json.dumps(line) + "\n")


def _recording_send(original: Any) -> Any:
    def send(session: requests.Session, request: requests.PreparedRequest, **kwargs: Any) -> Any:
        response = original(session, request, **kwargs)
        if _is_placement(request.url or ""):
            _state["seq"] += 1
            body = request.body
            if body is not None and not isinstance(body, bytes | str):
                body = b""  # a streamed body: none of these suites send one
            _write(
                {
                    "kind": "request",
                    "test": _state["test"],
                    "seq": _state["seq"],
                    "method": request.method,
                    "url": request.url,
                    "headers": dict(request.headers),
                    "body": _b64(body),
                    "status": response.status_code,
                    "response_headers": dict(response.headers),
                    "response_body": _b64(response.content),
                }
            )
        return response

    return send


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--placement-side") == "fake":
        from reportclient.fixture import use_in_place_of_placement_fixture

        swap = use_in_place_of_placement_fixture()
        swap.setUp()
        config.add_cleanup(swap.cleanUp)
    path = config.getoption("--record")
    if path:
        _state["out"] = open(path, "w", encoding="utf-8")  # closed at cleanup
        config.add_cleanup(_state["out"].close)
    uuid.uuid4 = _suite_uuid4
    config.add_cleanup(lambda: setattr(uuid, "uuid4", _uuid4))
    original = requests.Session.send
    requests.Session.send = _recording_send(original)  # type: ignore[method-assign]
    config.add_cleanup(lambda: setattr(requests.Session, "send", original))


def pytest_collection_finish(session: pytest.Session) -> None:
    # nova's TestCase deletes its public attributes at cleanup to free memory;
    # pytest's unittest runner then fails deleting the test method it set.
    # Keeping them changes nothing a test asserts (both sides alike).
    nova_test = sys.modules.get("nova.test")
    if nova_test is not None:
        nova_test.TestCase._clear_attrs = lambda self: None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _state["test"] = item.nodeid
    _state["seq"] = 0
    _state["drawn"] = random.Random(item.nodeid)
    started = time.perf_counter()
    yield
    _write({"kind": "duration", "test": item.nodeid, "seconds": time.perf_counter() - started})
    _state["test"] = None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _write({"kind": "outcome", "test": report.nodeid, "outcome": report.outcome})
