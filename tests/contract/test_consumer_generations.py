"""Consumer generations: creation, updates, deletion by empty write, DELETE and reads."""

from __future__ import annotations

from . import CONFLICT, NOT_FOUND, Backend, body, detail, new_uuid, outcome

VCPU_8 = {"VCPU": {"total": 8}}


def _get(backend: Backend, consumer: str) -> dict[str, object]:
    response = backend.request("GET", f"/allocations/{consumer}")
    assert response.status_code == 200
    doc: dict[str, object] = response.json()
    return doc


def test_new_consumer_written_with_null_gets_generation_1(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    put = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    assert outcome(put) == (204, None)
    assert put.content == b""
    assert _get(backend, consumer) == {
        "allocations": {rp: {"resources": {"VCPU": 2}, "generation": 2}},
        "project_id": "project-a",
        "user_id": "user-a",
        "consumer_generation": 1,
        "consumer_type": "INSTANCE",
    }


def test_update_with_current_generation_adds_one(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    put = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 3}}, 1))
    assert outcome(put) == (204, None)
    doc = _get(backend, consumer)
    assert doc["consumer_generation"] == 2
    assert doc["allocations"] == {rp: {"resources": {"VCPU": 3}, "generation": 3}}


def test_update_with_stale_generation_is_a_consumer_conflict(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 3}}, 1))
    put = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 4}}, 1))
    assert outcome(put) == (409, "placement.concurrent_update")
    assert detail(put) == CONFLICT.format("consumer generation conflict - expected 2 but got 1")
    assert _get(backend, consumer)["consumer_generation"] == 2


def test_null_generation_for_existing_consumer_reports_none(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    put = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    assert outcome(put) == (409, "placement.concurrent_update")
    assert detail(put) == CONFLICT.format("consumer generation conflict - expected 1 but got None")


def test_generation_for_unknown_consumer_reports_expected_null(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    put = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, 3))
    assert outcome(put) == (409, "placement.concurrent_update")
    assert detail(put) == CONFLICT.format("consumer generation conflict - expected null but got 3")
    assert _get(backend, consumer) == {"allocations": {}}


def test_empty_write_deletes_consumer(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    put = backend.request("PUT", f"/allocations/{consumer}", body({}, 1))
    assert outcome(put) == (204, None)
    assert _get(backend, consumer) == {"allocations": {}}


def test_after_empty_write_old_generation_is_refused_and_null_restarts_at_1(
    backend: Backend,
) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    backend.request("PUT", f"/allocations/{consumer}", body({}, 1))
    stale = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, 2))
    assert detail(stale) == CONFLICT.format(
        "consumer generation conflict - expected null but got 2"
    )
    fresh = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    assert outcome(fresh) == (204, None)
    assert _get(backend, consumer)["consumer_generation"] == 1


def test_empty_write_for_unknown_consumer_leaves_a_generation_0_record(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    assert outcome(backend.request("PUT", f"/allocations/{consumer}", body({}, None))) == (
        204,
        None,
    )
    assert _get(backend, consumer) == {"allocations": {}}
    again = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 1}}, None))
    assert detail(again) == CONFLICT.format(
        "consumer generation conflict - expected 0 but got None"
    )
    write = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 1}}, 0))
    assert outcome(write) == (204, None)
    assert _get(backend, consumer)["consumer_generation"] == 1


def test_get_of_unknown_consumer_is_200_with_empty_allocations_only(backend: Backend) -> None:
    response = backend.request("GET", f"/allocations/{new_uuid()}")
    assert outcome(response) == (200, None)
    assert response.json() == {"allocations": {}}


def test_delete_needs_no_generation_and_second_delete_is_404(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    first = backend.request("DELETE", f"/allocations/{consumer}")
    second = backend.request("DELETE", f"/allocations/{consumer}")
    assert outcome(first) == (204, None)
    assert outcome(second) == (404, "placement.undefined_code")
    assert detail(second) == NOT_FOUND.format(f"No allocations for consumer '{consumer}'")


def test_delete_then_write_needs_null(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    backend.request("DELETE", f"/allocations/{consumer}")
    put = backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    assert outcome(put) == (204, None)
    assert _get(backend, consumer)["consumer_generation"] == 1


def test_consumer_attributes_are_replaced_by_a_write(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    backend.request(
        "PUT",
        f"/allocations/{consumer}",
        body({rp: {"VCPU": 2}}, 1, consumer_type="MIGRATION", project_id="p2", user_id="u2"),
    )
    doc = _get(backend, consumer)
    assert (doc["project_id"], doc["user_id"], doc["consumer_type"]) == ("p2", "u2", "MIGRATION")


def test_get_hides_generation_and_type_below_their_microversions(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    at_1_27 = backend.request("GET", f"/allocations/{consumer}", microversion="1.27").json()
    at_1_0 = backend.request("GET", f"/allocations/{consumer}", microversion=None).json()
    allocations = {rp: {"resources": {"VCPU": 2}, "generation": 2}}
    assert at_1_27 == {"allocations": allocations, "project_id": "project-a", "user_id": "user-a"}
    assert at_1_0 == {"allocations": allocations}


def test_write_below_1_28_needs_no_generation_but_bumps_it(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    backend.request("PUT", f"/allocations/{consumer}", body({rp: {"VCPU": 2}}, None))
    legacy = {"allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u"}
    put = backend.request("PUT", f"/allocations/{consumer}", legacy, microversion="1.27")
    assert outcome(put) == (204, None)
    assert _get(backend, consumer)["consumer_generation"] == 2


def test_consumer_written_below_1_38_reads_as_unknown_type(backend: Backend) -> None:
    rp, consumer = backend.create_provider(VCPU_8), new_uuid()
    put = backend.request(
        "PUT",
        f"/allocations/{consumer}",
        body({rp: {"VCPU": 2}}, None, consumer_type=None),
        microversion="1.37",
    )
    assert outcome(put) == (204, None)
    assert _get(backend, consumer)["consumer_type"] == "unknown"
