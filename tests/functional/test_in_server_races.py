"""On the real Placement: an allocation write's in-server race says what moved under it.

Placement checks the consumer generation a write carries before the write's
transaction, then bumps every provider's and the consumer's generation
inside it (``placement/objects/allocation.py``, ``_set_allocations``). What
moved in between decides Placement's words, and the client's next step:

* another write of the **same consumer**: the consumer's bump loses, and
  Placement answers "...Another thread concurrently updated the data". That
  is contention on the consumer: the client waits under the policy and
  reads after the wait, with no re-read at once (it would be stale by then).
  The first test makes that writer land between the two, from a hook in
  Placement's handler (the embedded server answers one request at a time,
  so the other writer's request goes to the application directly, inside
  the first one), and checks what Placement answered and what the client
  did;
* claims on the same providers, when the provider's bump lost more often
  than Placement retries it (``allocation_conflict_retry_count``, default
  10): Placement answers "...updated the resource provider data". The
  consumer is untouched: the client re-reads at once, sees that, and writes
  again without waiting. (Checked here against Placement's own exception
  texts: a claim landing after Placement read the providers happens inside
  the write's transaction, where no hook can send another request.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reportclient import GenerationConflict, PlacementClient, add_allocations, default_retry
from reportclient.testing import EmbeddedPlacement, PlacementAdmin
from tests.functional._helpers import held, new_id, raw_body, wire, wsgi_send

pytestmark = pytest.mark.functional


def send(placement: EmbeddedPlacement, method: str, path: str, body: Any) -> Any:
    """One request to Placement's application, in this thread."""
    return wsgi_send(placement.wsgi_app, placement.token, method, path, body)


@pytest.fixture
def inside_the_write(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Callable[[Callable[[Any], None]], None]]:
    """``arm(other)``: ``other(context)`` runs once, inside the next allocation write, after
    Placement checked its consumer generation and before it reads the providers and opens
    the write's transaction (``handlers/util.py``, ``ensure_consumer``)."""
    from placement.handlers import util as handler_util

    original = handler_util.ensure_consumer
    armed: list[Callable[[Any], None]] = []

    def ensure_consumer(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        found = original(ctx, *args, **kwargs)
        if armed:
            armed.pop()(ctx)
        return found

    monkeypatch.setattr(handler_util, "ensure_consumer", ensure_consumer)
    yield armed.append
    assert not armed, "the armed writer never ran"


@pytest.fixture
def client(real_placement: EmbeddedPlacement) -> PlacementClient:
    sleeps: list[float] = []
    policy = default_retry(sleep=sleeps.append, rand=lambda: 0.5)
    client = PlacementClient.from_endpoint(
        real_placement.url, token="admin", microversion="1.39", retry=policy
    )
    client.sleeps = sleeps  # type: ignore[attr-defined]
    return client


def test_another_write_of_the_consumer_inside_the_write_is_contention(
    real_placement: EmbeddedPlacement,
    placement_admin: PlacementAdmin,
    compute_node: str,
    inside_the_write: Callable[[Callable[[Any], None]], None],
    client: PlacementClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    consumer = new_id()
    assert placement_admin.put_allocations(consumer, raw_body({compute_node: {"VCPU": 1}}, None))

    def other_writer(ctx: Any) -> None:
        answer = send(
            real_placement,
            "PUT",
            f"/allocations/{consumer}",
            raw_body({compute_node: {"VCPU": 4}}, 1),
        )
        assert answer.status_code == 204, answer.text

    inside_the_write(other_writer)
    real_placement.clear_requests_seen()
    with caplog.at_level(logging.DEBUG, logger="reportclient.retry"):
        client.update_allocations(
            consumer, add_allocations({compute_node: {"VCPU": 1}}), project_id="p", user_id="u"
        )

    path = f"/allocations/{consumer}"
    assert wire(real_placement) == [
        ("GET", path, 200),
        ("PUT", path, 204),  # the other writer, inside the client's PUT
        ("PUT", path, 409),
        ("GET", path, 200),  # after the wait, not before it
        ("PUT", path, 204),
    ]
    (retried,) = [r.getMessage() for r in caplog.records if r.name == "reportclient.retry"]
    assert "Another thread concurrently updated the data." in retried, retried
    assert client.sleeps == [0.5]  # type: ignore[attr-defined]  # 0.5 of the first window, 1 s
    assert held(placement_admin.get_allocations(consumer)) == {compute_node: {"VCPU": 5}}


def test_only_the_consumer_s_own_race_reads_as_contention_on_it() -> None:
    """Placement's two in-server race texts, as its handler words them, judged by the client.

    The provider's (``ResourceProviderConcurrentUpdateDetected``, raised once
    ``replace_all`` ran out of ``allocation_conflict_retry_count`` retries)
    leaves the consumer untouched: the client re-reads at once to see that
    (``tests/unit/public/test_retry_policy.py`` pins both paths).
    """
    from placement import exception

    def answered(error: type[Exception]) -> GenerationConflict:
        detail = (
            "There was a conflict when trying to complete your request.\n\n Inventory and/or "
            f"allocations changed while attempting to allocate: {error.msg_fmt}  "  # type: ignore[attr-defined]
        )
        return GenerationConflict(
            detail, status=409, code="placement.concurrent_update", detail=detail
        )

    assert answered(exception.ConcurrentUpdateDetected).consumer_moved
    assert not answered(exception.ResourceProviderConcurrentUpdateDetected).consumer_moved
    assert not answered(exception.ResourceProviderConcurrentUpdateDetected).consumer_conflict
