"""Shared helpers for the functional tests of the client against the real Placement."""

from __future__ import annotations

import dataclasses
import datetime
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import tenacity

from reportclient import PlacementClient, default_retry
from reportclient.fixture import FakeClock
from reportclient.testing import EmbeddedPlacement, PlacementAdmin

PROJECT = "project-functional"
USER = "user-functional"
#: The newest microversion openstack-placement 16.0.0 serves; pinning it skips ``GET /``.
LATEST = "1.39"
#: Bounded wait for worker threads; a hang fails the test instead of the whole run.
JOIN_TIMEOUT = 60.0
#: ``cache_ttl`` of the clients that trust their cache (``make_cached_client``).
CACHE_TTL = 60.0


@dataclasses.dataclass(frozen=True)
class Real:
    """Most tests' three fixtures as one (the ``real`` fixture of tests/functional/conftest.py).

    ``placement`` is the session's real Placement, ``admin`` a raw admin helper on it and
    ``node`` a fresh compute node (VCPU 8, MEMORY_MB 4096, DISK_GB 100).
    """

    placement: EmbeddedPlacement
    admin: PlacementAdmin
    node: str

    def client(self, **kwargs: Any) -> PlacementClient:
        """``make_client`` on this Placement."""
        return make_client(self.placement, **kwargs)

    def cached_client(self, **kwargs: Any) -> PlacementClient:
        """``make_cached_client`` on this Placement."""
        return make_cached_client(self.placement, **kwargs)

    def claimed(
        self, allocs: Any, *, cached: bool = False, **kwargs: Any
    ) -> tuple[PlacementClient, str]:
        """A new client (``cached``: one trusting its cache) and a new consumer it claimed
        ``allocs`` for (``claim``, with ``kwargs``)."""
        client = self.cached_client() if cached else self.client()
        consumer = new_id()
        claim(client, consumer, allocs, **kwargs)
        return client, consumer

    def wire(self) -> list[tuple[str, str, int]]:
        """``wire``: every request this Placement saw since the last clear."""
        return wire(self.placement)

    def holds(self, consumer: str) -> tuple[int | None, dict[str, dict[str, int]]]:
        """``holds``: what this Placement holds for ``consumer``, read by the admin."""
        return holds(self.admin, consumer)


def new_id() -> str:
    """A fresh uuid4 string: every test uses its own consumers and providers."""
    return str(uuid.uuid4())


def fast_retry(attempts: int = 50) -> tenacity.Retrying:
    """A retry policy with many attempts and millisecond backoff, for races."""
    return default_retry(attempts=attempts, base=0.001, cap=0.02)


def make_client(
    placement: EmbeddedPlacement,
    *,
    token: str | None = "admin",
    microversion: str | None = LATEST,
    **kwargs: Any,
) -> PlacementClient:
    """A client on the embedded Placement, pinned to 1.39 unless told otherwise."""
    return PlacementClient.from_endpoint(
        placement.url, token=token, microversion=microversion, **kwargs
    )


def make_cached_client(
    placement: EmbeddedPlacement, *, clock: FakeClock | None = None, **kwargs: Any
) -> PlacementClient:
    """A client trusting what it cached within ``CACHE_TTL`` seconds of a clock that stands still.

    Unless the test advances ``clock``, every state it read or wrote stays trusted: the
    one-request writes of the trusted cache, as opposed to the default ``cache_ttl=0``.
    """
    return make_client(
        placement, cache_ttl=CACHE_TTL, clock=clock if clock is not None else FakeClock(), **kwargs
    )


#: When :func:`backdate` says the providers were last changed.
LONG_AGO = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)


def backdate(placement: EmbeddedPlacement, uuids: Iterable[str]) -> None:
    """Make the providers look last created and changed in 2001 (their ``Last-Modified``).

    The server's clock made controllable without sleeping: a tree last changed in
    2001 is unchanged since any proof a test makes.
    """
    import sqlalchemy as sa

    rows = sa.text(
        "UPDATE resource_providers SET created_at = :t, updated_at = NULL WHERE uuid IN :u"
    ).bindparams(sa.bindparam("u", expanding=True))
    with placement._engine.begin() as conn:  # the harness's own database: a test seam
        conn.execute(rows, {"t": LONG_AGO.replace(tzinfo=None), "u": list(uuids)})


def backdate_classes(placement: EmbeddedPlacement) -> None:
    """Make every resource class look created in 2001 and never renamed since.

    What a catalogue quiet since long before a proof looks like: the
    resource classes' listing then proves the class names of every cached
    inventory (a class created or renamed later moves it again).
    """
    import sqlalchemy as sa

    rows = sa.text("UPDATE resource_classes SET created_at = :t, updated_at = NULL")
    with placement._engine.begin() as conn:  # the harness's own database: a test seam
        conn.execute(rows, {"t": LONG_AGO.replace(tzinfo=None)})


def stamp_later(placement: EmbeddedPlacement, uuids: Iterable[str], seconds: float = 60) -> None:
    """Make the providers look last changed ``seconds`` from now on the server's clock.

    What a change well after every proof this test made looks like (a scheduler's claim
    minutes after the agent last proved its tree), without waiting for it.
    """
    import sqlalchemy as sa

    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    rows = sa.text("UPDATE resource_providers SET updated_at = :t WHERE uuid IN :u").bindparams(
        sa.bindparam("u", expanding=True)
    )
    with placement._engine.begin() as conn:  # the harness's own database: a test seam
        conn.execute(rows, {"t": later.replace(tzinfo=None), "u": list(uuids)})


def wire(placement: Any) -> list[tuple[str, str, int]]:
    """``(method, path, status)`` of every request the server saw since the last clear."""
    return [(r.method, r.path, r.status) for r in placement.requests_seen]


def raw_body(
    allocations: Mapping[str, Mapping[str, int]],
    generation: int | None,
    *,
    project_id: str = PROJECT,
    user_id: str = USER,
    consumer_type: str | None = "INSTANCE",
) -> dict[str, Any]:
    """A PUT /allocations body as another writer (not reportclient) would send it at 1.39."""
    body: dict[str, Any] = {
        "allocations": {rp: {"resources": dict(res)} for rp, res in allocations.items()},
        "consumer_generation": generation,
        "project_id": project_id,
        "user_id": user_id,
    }
    if consumer_type is not None:
        body["consumer_type"] = consumer_type
    return body


def wsgi_send(app: Any, token: str, method: str, path: str, body: Any, request_id: str = "") -> Any:
    """One JSON request at 1.39 to Placement's WSGI ``app``, in this thread; its webob response.

    For a test that makes a request land where no HTTP client can (inside another request,
    or on one Galera node only). ``request_id``: a global request id to send.
    """
    import webob

    request = webob.Request.blank(path, method=method)
    request.headers["X-Auth-Token"] = token
    if request_id:
        request.headers["X-Openstack-Request-Id"] = request_id
    request.headers["OpenStack-API-Version"] = "placement 1.39"
    request.content_type = "application/json"
    request.body = json.dumps(body).encode()
    return request.get_response(app)


def held(raw: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """``provider -> class -> amount`` from a raw ``GET /allocations/{c}`` body."""
    return {rp: dict(entry["resources"]) for rp, entry in raw["allocations"].items()}


def run_together(
    workers: list[Callable[[], Any]], timeout: float = JOIN_TIMEOUT
) -> list[tuple[str, Any]]:
    """Start ``workers`` at the same instant (a Barrier) and collect their outcomes.

    Returns one ``("ok", result)`` or ``("error", exception)`` per worker, in order. Fails if
    any thread is still running after ``timeout`` seconds.
    """
    barrier = threading.Barrier(len(workers))
    outcomes: list[tuple[str, Any] | None] = [None] * len(workers)

    def run(index: int, work: Callable[[], Any]) -> None:
        barrier.wait(timeout)
        try:
            outcomes[index] = ("ok", work())
        except Exception as exc:  # collected and asserted by the test
            outcomes[index] = ("error", exc)

    threads = [
        threading.Thread(target=run, args=(i, w), name=f"race-{i}", daemon=True)
        for i, w in enumerate(workers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    stuck = [t.name for t in threads if t.is_alive()]
    assert not stuck, f"threads still running after {timeout}s: {stuck}"
    assert all(o is not None for o in outcomes)
    return [o for o in outcomes if o is not None]


def holds(admin: Any, consumer: str) -> tuple[int | None, dict[str, dict[str, int]]]:
    """(generation, allocations) Placement holds for ``consumer``, read around the client;
    (None, {}) when it holds none."""
    raw = admin.get_allocations(consumer)
    return raw.get("consumer_generation"), held(raw)


def claim(client: PlacementClient, consumer: str, allocs: Any, **kwargs: Any) -> Any:
    """``client.claim`` as the functional tests' project and user."""
    return client.claim(consumer, allocs, project_id=PROJECT, user_id=USER, **kwargs)


def update(client: PlacementClient, consumer: str, mutate: Any, **kwargs: Any) -> Any:
    """``client.update_allocations`` as the functional tests' project and user."""
    return client.update_allocations(consumer, mutate, project_id=PROJECT, user_id=USER, **kwargs)
