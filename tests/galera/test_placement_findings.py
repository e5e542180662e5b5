"""Placement 16.0.0 breaking a consumer on its own, made to happen on purpose on the cluster.

Both findings of ``doc/source/galera.rst`` ("Placement-side findings"), each forced by
holding one writer, L, at the right line: L runs Placement in this process on Galera node 1
only, while writer W goes through host 2 (node 2), as another client would.

**The deadlock retry re-sends an advanced generation.** ``placement/objects/allocation.py``
wraps ``_set_allocations`` in ``oslo_db.api.wrap_db_retry(max_retries=5,
retry_on_deadlock=True)``. One attempt bumps the consumer's generation with ``UPDATE
consumers SET generation=g+1 WHERE id=.. AND generation=g`` and then *stores g+1 on the
in-memory* ``Consumer`` (``placement/objects/consumer.py``, ``increment_generation``). When
a later statement of the same attempt fails with a deadlock, MariaDB has rolled the whole
transaction back, but the object keeps g+1, and the retry guards with ``generation=g+1``: if
another writer moved the consumer from g to g+1 meanwhile, the guard matches and the retry
overwrites that writer's allocations. On Galera with writes on several nodes this is the
ordinary shape of a conflict: the other node's write set aborts the local transaction right
after its ``UPDATE consumers`` (a brute-force abort), reported as 1213 on the next statement.

**A failed write deletes the consumer it created, whoever wrote to it since.** The
allocation handlers create a new consumer in a transaction of their own
(``handlers/util.py``, ``ensure_consumer``), and when the allocation write then fails they
delete it by id (``handlers/allocation.py``, ``delete_consumers``). A client that met the
new consumer meanwhile ("expected 0 but got None", then a write at generation 0) has its
allocations left without a consumer row: counted in usages, missing from every listing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reportclient.testing import GaleraPlacement, PlacementAdmin
from tests.functional._helpers import wsgi_send
from tests.races.runner import new_id
from tests.races.workers import raw_body

pytestmark = pytest.mark.functional

#: Seconds any step of the interleaving may take before the test gives up.
STEP = 60.0


@pytest.fixture(scope="module")
def node1_app(galera: GaleraPlacement) -> Iterator[Callable[..., Any]]:
    """Placement in this process, on Galera node 1 only; a function that sends it one request.

    Module-scoped: Placement's database configuration is global to the process.
    """
    from placement import db_api

    from reportclient.testing import _app

    conf = _app.build_conf(galera.database_url(0))
    db_api.configure(conf)
    app = _app.load_app(conf)

    def send(method: str, path: str, body: dict[str, Any]) -> Any:
        return wsgi_send(app, galera.token, method, path, body)

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


def test_a_failed_write_deletes_the_consumer_another_writer_filled_meanwhile(
    galera: GaleraPlacement, node1_app: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from placement.handlers import allocation as handler

    with PlacementAdmin(galera.hosts[1].url, galera.token, timeout=60.0) as admin:
        rp = admin.create_provider(inventory={"VCPU": 64})
        consumer = new_id()
        created, go_on = threading.Event(), threading.Event()
        original = handler._resource_providers_by_uuid

        def held(ctx: Any, uuids: Any) -> Any:
            # Called by the PUT handler right after ensure_consumer() created the consumer.
            created.set()
            assert go_on.wait(STEP)
            return original(ctx, uuids)

        monkeypatch.setattr(handler, "_resource_providers_by_uuid", held)
        answers: list[int] = []
        writer_l = threading.Thread(
            target=lambda: answers.append(
                node1_app(
                    "PUT", f"/allocations/{consumer}", raw_body({rp: {"VCPU": 1}}, None)
                ).status_code
            )
        )
        writer_l.start()
        assert created.wait(STEP), "writer L never created its consumer"
        galera.galera.wait_all_synced()

        # W meets the new, empty consumer as every client does, and writes at its generation.
        first = admin.put_allocations(consumer, raw_body({rp: {"VCPU": 2}}, None))
        assert first.status_code == 409 and "expected 0 but got None" in first.text, first.text
        w = admin.put_allocations(consumer, raw_body({rp: {"VCPU": 2}}, 0))
        assert w.status_code == 204, w.text
        galera.galera.wait_all_synced()
        go_on.set()
        writer_l.join(STEP)
        assert not writer_l.is_alive()
        galera.galera.wait_all_synced()

        # L's write failed on the generation W moved (409); its handler then deleted "its"
        # consumer by id. W's 2 VCPU stay in allocations, with no consumer row.
        assert answers == [409]
        assert admin.get_allocations(consumer) == {"allocations": {}}
        assert admin.usages(rp).get("VCPU") == 2
        assert admin.provider_allocations(rp) == {}
    for index in range(galera.galera.size):
        assert galera.orphaned_allocations(index)[rp] == {consumer: 2}
