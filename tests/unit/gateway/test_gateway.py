"""The caches hear of every answer: raw writes, lost DELETEs, conflict hints, callbacks.

Issue 35's behaviours against requests-mock, exact request sequences. The same
behaviours against the real Placement are in ``tests/functional/test_cache_truth.py``.
"""

from __future__ import annotations

import pytest
import requests
import tenacity

import reportclient
from reportclient import errors
from tests.support.answers import allocations_body, consumer_conflict
from tests.support.clients import update
from tests.support.wire import PROJECT, URL, USER, calls, sent

NO_CONTENT = {"status_code": 204}
MISSING = {"json": {"allocations": {}}}
LOST = {"exc": requests.exceptions.ReadTimeout("slow")}


def claimed(client, wire, consumer, rp, vcpu=1):
    """A consumer this client claimed (new, generation 1) and now caches."""
    wire.put(f"{URL}/allocations/{consumer}", status_code=204)
    client.claim(consumer, {rp: {"VCPU": vcpu}}, project_id=PROJECT, user_id=USER)
    wire.reset_mock()


# -- raw writes ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["PUT", "DELETE", "POST"])
def test_a_raw_write_of_a_consumer_forgets_it(cached_client, wire, consumer, rp, method):
    claimed(cached_client, wire, consumer, rp)
    assert cached_client.cached(consumer, trusted=True) is not None
    path = "/allocations" if method == "POST" else f"/allocations/{consumer}"
    wire.register_uri(method, URL + path, status_code=204)
    body = None if method == "DELETE" else {consumer: {}} if method == "POST" else {}

    cached_client.request(method, path, json=body)

    assert cached_client.cached(consumer) is None


def test_the_typed_update_after_a_raw_write_reads_first(cached_client, wire, consumer, rp):
    claimed(cached_client, wire, consumer, rp)
    wire.put(f"{URL}/allocations/{consumer}", status_code=204)
    cached_client.request("PUT", f"/allocations/{consumer}", json={"allocations": {}})
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 3}}, 2))
    seen = []

    def grow(state):
        seen.append(state.allocations)
        return {rp: {"VCPU": state.allocations[rp]["VCPU"] + 1}}

    cached_client.update_allocations(consumer, grow, project_id=PROJECT, user_id=USER)

    assert calls(wire)[1:] == [
        ("GET", f"/allocations/{consumer}"),
        ("PUT", f"/allocations/{consumer}"),
    ]
    assert seen == [{rp: {"VCPU": 3}}]
    assert sent(wire, 2)["consumer_generation"] == 2


def test_a_raw_write_to_a_path_it_cannot_read_forgets_everything(cached_client, wire, consumer, rp):
    claimed(cached_client, wire, consumer, rp)
    wire.put(f"{URL}/allocations/{consumer}%3Fx", status_code=204)

    cached_client.request("PUT", f"/allocations/{consumer}%3Fx", json={})

    assert cached_client.cached(consumer) is None


def test_a_raw_read_forgets_nothing(cached_client, wire, consumer, rp):
    claimed(cached_client, wire, consumer, rp)
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))

    cached_client.request("GET", f"/allocations/{consumer}")

    assert cached_client.cached(consumer, trusted=True) is not None


# -- DELETEs --------------------------------------------------------------------------


def test_a_force_release_whose_answer_is_lost_forgets_the_consumer(
    cached_client, wire, consumer, rp
):
    claimed(cached_client, wire, consumer, rp)
    wire.delete(f"{URL}/allocations/{consumer}", **LOST)

    with pytest.raises(errors.PlacementUnavailable) as caught:
        cached_client.force_release(consumer)

    assert caught.value.outcome_unknown
    assert cached_client.cached(consumer) is None


def test_a_force_release_answered_leaves_the_consumer_missing(cached_client, wire, consumer, rp):
    claimed(cached_client, wire, consumer, rp)
    wire.delete(f"{URL}/allocations/{consumer}", status_code=204)

    assert cached_client.force_release(consumer) is True

    state = cached_client.cached(consumer, trusted=True)
    assert state is not None and not state.exists


def test_a_cascade_whose_consumer_delete_is_lost_forgets_that_consumer(
    cached_client, wire, consumer, rp
):
    claimed(cached_client, wire, consumer, rp)
    wire.get(
        f"{URL}/resource_providers/{rp}/allocations",
        json={
            "allocations": {consumer: {"resources": {"VCPU": 1}}},
            "resource_provider_generation": 3,
        },
    )
    wire.delete(f"{URL}/allocations/{consumer}", **LOST)

    with pytest.raises(errors.PlacementUnavailable):
        cached_client.providers.delete_provider(rp, cascade=True)

    assert cached_client.cached(consumer) is None


@pytest.mark.parametrize("answer", [NO_CONTENT, LOST], ids=["answered", "lost"])
def test_a_provider_delete_forgets_its_fields_whatever_the_answer(cached_client, wire, rp, answer):
    inventories = f"{URL}/resource_providers/{rp}/inventories"
    wire.get(inventories, json={"resource_provider_generation": 3, "inventories": {}})
    cached_client.providers.get_inventories(rp)
    wire.delete(f"{URL}/resource_providers/{rp}", **answer)

    try:
        cached_client.providers.delete_provider(rp)
    except errors.PlacementUnavailable:
        pass
    wire.reset_mock()
    wire.put(
        inventories,
        json={
            "resource_provider_generation": 4,
            "inventories": {"VCPU": {"total": 4}},
        },
    )
    cached_client.providers.set_inventory(rp, "VCPU", 4)

    assert calls(wire) == [
        ("GET", f"/resource_providers/{rp}/inventories"),
        ("PUT", f"/resource_providers/{rp}/inventories"),
    ]


def field_body(kind: str, generation: int, value: object) -> dict[str, object]:
    return {"resource_provider_generation": generation, kind: value}


def test_an_own_field_write_carries_the_other_fields_known_at_its_generation(
    cached_client, wire, rp
):
    base = f"{URL}/resource_providers/{rp}"
    wire.get(f"{base}/traits", json=field_body("traits", 3, ["HW_CPU_X86_AVX2"]))
    wire.get(f"{base}/aggregates", json=field_body("aggregates", 2, []))
    cached_client.providers.get_traits(rp)
    cached_client.providers.get_aggregates(rp)
    wire.put(f"{base}/inventories", json=field_body("inventories", 4, {"VCPU": {"total": 4}}))

    cached_client.providers.set_inventories(rp, {"VCPU": 4}, generation=3)

    fields = cached_client._core.gateway.fields
    carried = fields.entry(rp, reportclient.ProviderTraits)
    assert carried is not None and carried[0].generation == 4  # known at 3: holds at 4
    behind = fields.entry(rp, reportclient.ProviderAggregates)
    assert behind is not None and behind[0].generation == 2  # not known at 3: not carried


@pytest.mark.parametrize("answer", [NO_CONTENT, LOST], ids=["answered", "lost"])
def test_a_provider_delete_drops_its_record_and_a_lost_one_its_trees_wholeness(
    cached_client, wire, rp, answer
):
    child = "7a1f1e0c-9d5e-4e0b-8f5a-1b2c3d4e5f60"
    wire.get(
        f"{URL}/resource_providers?in_tree={rp}",
        json={
            "resource_providers": [
                {"uuid": rp, "name": "cn", "generation": 1, "root_provider_uuid": rp},
                {
                    "uuid": child,
                    "name": "dev",
                    "generation": 1,
                    "parent_provider_uuid": rp,
                    "root_provider_uuid": rp,
                },
            ]
        },
    )
    gateway = cached_client._core.gateway
    gateway.list_tree(rp, None)
    wire.delete(f"{URL}/resource_providers/{child}", **answer)

    try:
        cached_client.providers.delete_provider(child)
    except errors.PlacementUnavailable:
        pass

    assert gateway.provider_record(child) is None
    members = gateway.tree_members(rp)
    assert (members is not None) is (answer is NO_CONTENT)


def test_a_raw_write_to_a_provider_drops_its_record(cached_client, wire, rp):
    wire.get(
        f"{URL}/resource_providers/{rp}",
        json={"uuid": rp, "name": "cn", "generation": 1, "root_provider_uuid": rp},
    )
    gateway = cached_client._core.gateway
    cached_client.providers.get_provider(rp)
    assert gateway.provider_record(rp) is not None
    wire.put(f"{URL}/resource_providers/{rp}", json={"uuid": rp, "name": "x", "generation": 1})

    cached_client.request("PUT", f"/resource_providers/{rp}", json={"name": "x"})

    assert gateway.provider_record(rp) is None


# -- a conflict's "expected N" is evidence, never a state ------------------------------


def test_an_update_whose_consumer_is_deleted_after_a_conflict_is_gone(client, wire, consumer, rp):
    wire.get(
        f"{URL}/allocations/{consumer}",
        [{"json": allocations_body({rp: {"VCPU": 2}}, 2)}, MISSING],
    )
    wire.put(f"{URL}/allocations/{consumer}", **consumer_conflict("3", "2"))
    seen = []

    def record(state):
        seen.append(state)
        return {rp: {"VCPU": 1}}

    with pytest.raises(errors.ConsumerGone):
        client.update_allocations(consumer, record, project_id=PROJECT, user_id=USER)

    assert [s.generation for s in seen] == [2]


def test_subtract_after_a_conflict_and_a_delete_is_gone_not_not_held(client, wire, consumer, rp):
    wire.get(
        f"{URL}/allocations/{consumer}",
        [{"json": allocations_body({rp: {"VCPU": 2}}, 2)}, MISSING],
    )
    wire.put(f"{URL}/allocations/{consumer}", **consumer_conflict("3", "2"))

    with pytest.raises(errors.ConsumerGone):
        update(client, consumer, reportclient.subtract_allocations({rp: {"VCPU": 1}}))


def test_a_claim_carrying_a_stale_hint_is_retried_at_once(client, wire, consumer, rp, sleeps):
    """The conflict's "expected 4" is gone by the next write: no contended wait for it."""
    wire.put(
        f"{URL}/allocations/{consumer}",
        [consumer_conflict("4", "None"), consumer_conflict("null", "4"), NO_CONTENT],
    )
    wire.get(f"{URL}/allocations/{consumer}", **MISSING)

    client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    puts = [sent(wire, i) for i, r in enumerate(wire.request_history) if r.method == "PUT"]
    assert [p["consumer_generation"] for p in puts] == [None, 4, None]
    assert sleeps == [0.0, 0.0]  # both retried at once: a wrong guess, not contention


# -- a caller's retry_error_callback never hides a write that may land --------------------


def pending_write(wire, consumer, rp):
    """Every PUT's answer is lost; every read shows the consumer as the write found it."""
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    wire.put(f"{URL}/allocations/{consumer}", **LOST)


def test_a_callback_value_does_not_hide_a_pending_write(client, wire, consumer, rp):
    pending_write(wire, consumer, rp)
    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(2),
        sleep=lambda _s: None,
        retry_error_callback=lambda _state: None,
    )

    with pytest.raises(errors.OutcomeUnknown) as caught:
        client.update_allocations(
            consumer, lambda s: {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER, retry=policy
        )

    assert isinstance(caught.value.__cause__, errors.PlacementUnavailable)


def test_a_callback_raising_is_the_cause_of_outcome_unknown(client, wire, consumer, rp):
    pending_write(wire, consumer, rp)

    def give_up(_state):
        raise ValueError("the caller's own")

    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(2), sleep=lambda _s: None, retry_error_callback=give_up
    )

    with pytest.raises(errors.OutcomeUnknown) as caught:
        client.update_allocations(
            consumer, lambda s: {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER, retry=policy
        )

    assert isinstance(caught.value.__cause__, ValueError)


def test_a_callback_with_nothing_pending_is_the_callers_as_before(client, wire, consumer, rp):
    wire.get(f"{URL}/allocations/{consumer}", json=allocations_body({rp: {"VCPU": 1}}, 1))
    wire.put(f"{URL}/allocations/{consumer}", **consumer_conflict("2", "1"))
    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(2),
        sleep=lambda _s: None,
        retry_error_callback=lambda _state: "given up",
    )

    result = client.update_allocations(
        consumer, lambda s: {rp: {"VCPU": 2}}, project_id=PROJECT, user_id=USER, retry=policy
    )

    assert result == "given up"
