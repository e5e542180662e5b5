"""force_release against the real Placement: one DELETE, no generation, whatever is there."""

from __future__ import annotations

from reportclient.testing import EmbeddedPlacement
from tests.functional._helpers import Real, make_client, new_id, raw_body, wire


def test_force_release_deletes_what_another_writer_wrote_in_one_request(real: Real) -> None:
    client, consumer = real.claimed({real.node: {"VCPU": 1}})
    # Another writer changes it; the forced release does not care.
    response = real.admin.put_allocations(
        consumer, raw_body({real.node: {"VCPU": 3}}, generation=1)
    )
    assert response.status_code == 204
    real.placement.clear_requests_seen()

    assert client.force_release(consumer) is True

    assert real.wire() == [("DELETE", f"/allocations/{consumer}", 204)]
    raw = real.admin.get_allocations(consumer)
    assert raw == {"allocations": {}}
    assert real.admin.usages(real.node).get("VCPU", 0) == 0


def test_force_release_of_a_consumer_placement_does_not_hold_returns_false(
    real_placement: EmbeddedPlacement,
) -> None:
    client = make_client(real_placement)
    consumer = new_id()
    real_placement.clear_requests_seen()

    assert client.force_release(consumer) is False

    assert wire(real_placement) == [("DELETE", f"/allocations/{consumer}", 404)]
