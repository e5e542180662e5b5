"""Placement 16.0.0's deadlock retry re-sends an advanced consumer generation (multi-writer only).

``placement/objects/allocation.py`` wraps ``_set_allocations`` in
``oslo_db.api.wrap_db_retry(max_retries=5, retry_on_deadlock=True)``. One attempt bumps the
consumer's generation with ``UPDATE consumers SET generation=g+1 WHERE id=.. AND
generation=g`` and then *stores g+1 on the in-memory* ``Consumer``
(``placement/objects/consumer.py``, ``increment_generation``). When a later statement of the
same attempt fails with a deadlock, MariaDB has rolled the whole transaction back, but the
object keeps g+1, and the retry guards with ``generation=g+1``: if another writer moved the
consumer from g to g+1 meanwhile, the guard matches and the retry overwrites that writer's
allocations. Both writers were answered 204 for a write carrying g: one update is lost.

On one database server this needs a deadlock reported after the consumer's row was updated,
which Placement's statement order makes rare. On Galera with writes on several nodes it is
the ordinary case: a write set from another node that updates the same consumer row aborts
the local transaction (a brute-force abort) right after its ``UPDATE consumers``, and the
abort surfaces as 1213 on the next statement, still inside the retry. This test makes that
interleaving happen on purpose, in-process, against the suite's cluster: writer L runs in
this process on node 1 and is held just after its generation bump; writer W writes the same
consumer through host 2 (node 2); once node 1 has applied W, L goes on.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reportclient.testing import GaleraPlacement, PlacementAdmin
from tests.races.runner import new_id
from tests.races.workers import raw_body

pytestmark = pytest.mark.functional

#: Seconds any step of the interleaving may take before the test gives up.
STEP = 60.0


@pytest.fixture
def node1_app(galera: GaleraPlacement) -> Iterator[Callable[..., Any]]:
    """Placement in this process, on Galera node 1 only; a function that sends it one request."""
    import webob
    from placement import db_api

    from reportclient.testing import _app

    conf = _app.build_conf(galera.database_url(0))
    db_api.configure(conf)
    app = _app.load_app(conf)

    def send(method: str, path: str, body: dict[str, Any]) -> webob.Response:
        request = webob.Request.blank(path, method=method)
        request.headers["X-Auth-Token"] = galera.token
        request.headers["OpenStack-API-Version"] = "placement 1.39"
        request.content_type = "application/json"
        request.body = json.dumps(body).encode()
        return request.get_response(app)

    yield send
    db_api.placement_context_manager.dispose_pool()


def _applied(galera: GaleraPlacement, index: int, seqno: int) -> bool:
    return int(galera.galera.status(index).get("wsrep_last_committed", -1)) >= seqno


def test_deadlock_retry_overwrites_a_write_that_moved_the_generation(
    galera: GaleraPlacement, node1_app: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from placement.objects import consumer as consumer_obj

    with PlacementAdmin(galera.hosts[1].url, galera.token, timeout=60.0) as admin:
        rp = admin.create_provider(inventory={"VCPU": 64})
        consumer = new_id()
        assert admin.put_allocations(consumer, raw_body({rp: {"VCPU": 1}}, None)).ok
        galera.galera.wait_all_synced()

        bumped, go_on = threading.Event(), threading.Event()
        original = consumer_obj.delete_consumers_if_no_allocations
        calls = []

        def held(ctx: Any, uuids: Any) -> None:
            # Called by _set_allocations right after increment_generation().
            calls.append(len(calls))
            if len(calls) == 1:
                bumped.set()
                assert go_on.wait(STEP)
            original(ctx, uuids)

        monkeypatch.setattr(consumer_obj, "delete_consumers_if_no_allocations", held)
        answers: list[int] = []
        writer_l = threading.Thread(
            target=lambda: answers.append(
                node1_app(
                    "PUT", f"/allocations/{consumer}", raw_body({rp: {"VCPU": 2}}, 1)
                ).status_code
            )
        )
        writer_l.start()
        assert bumped.wait(STEP), "writer L never reached its generation bump"

        # W carries the same generation, on another node: certified first, it wins.
        w = admin.put_allocations(consumer, raw_body({rp: {"VCPU": 3}}, 1))
        assert w.status_code == 204, w.text
        seqno = int(galera.galera.status(1)["wsrep_last_committed"])
        deadline = time.monotonic() + STEP
        while not _applied(galera, 0, seqno):
            assert time.monotonic() < deadline, "node 1 never applied W"
            time.sleep(0.05)
        go_on.set()
        writer_l.join(STEP)
        assert not writer_l.is_alive()

        galera.galera.wait_all_synced()
        final = admin.get_allocations(consumer)

    # L's first attempt was aborted by W's write set and retried with the generation it had
    # bumped in memory (2), which W had just made real: both answered 204 for generation 1.
    assert answers == [204]
    assert len(calls) == 2, "L's attempt was not retried"
    assert final["consumer_generation"] == 3
    assert final["allocations"][rp]["resources"] == {"VCPU": 2}  # W's write is gone
