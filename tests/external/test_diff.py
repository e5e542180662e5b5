"""The external suites' wire diff: what it pairs, renames, declares and reports."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests.external._diff import Names, compare, load

HOST_A = "0b7e3a7c-5d3f-4d5e-9a0c-1f2e3d4c5b6a"
HOST_B = "9f8e7d6c-5b4a-4392-8170-6e5d4c3b2a19"


def _row(host: str, path: str, status: int, body: Any, seq: int = 1, **kw: Any) -> dict[str, Any]:
    return {
        "kind": "request",
        "test": kw.get("test", "t::one"),
        "seq": seq,
        "method": kw.get("method", "GET"),
        "url": f"http://{host}/placement{path}",
        "headers": {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"},
        "body": "",
        "status": status,
        "response_headers": {"Content-Type": "application/json", **kw.get("headers", {})},
        "response_body": base64.b64encode(json.dumps(body).encode()).decode(),
    }


def _recording(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    lines = [*rows, {"kind": "outcome", "test": "t::one", "outcome": "passed"}]
    lines.append({"kind": "duration", "test": "t::one", "seconds": 0.5})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_uuids_hex_ids_and_drawn_numbers_are_renamed_by_first_appearance() -> None:
    names = Names(frozenset())
    text = "rp-123456789 CUSTOM_X_0123456789ABCDEF0123456789ABCDEF " + HOST_A

    assert names.text(text) == "rp-<n-2> CUSTOM_X_<hex-1> <uuid-1>"


def test_same_answers_on_other_hosts_with_other_made_up_ids_agree(tmp_path: Path) -> None:
    real = [_row(HOST_A, "/resource_providers", 200, {"uuid": HOST_A})]
    fake = [_row(HOST_B, "/resource_providers", 200, {"uuid": HOST_B})]

    diff = compare(load(_recording(tmp_path, "r", real)), load(_recording(tmp_path, "f", fake)))

    assert (diff.compared, diff.undeclared, dict(diff.kinds)) == (1, [], {})


def test_a_different_status_is_undeclared_and_counted_by_kind(tmp_path: Path) -> None:
    real = [_row(HOST_A, "/traits", 200, {"traits": []})]
    fake = [_row(HOST_B, "/traits", 404, {"traits": []})]

    diff = compare(load(_recording(tmp_path, "r", real)), load(_recording(tmp_path, "f", fake)))

    assert diff.kinds["status"] == 1
    assert "status: real 200, fake 404" in diff.undeclared[0]


def test_a_difference_the_fuzzer_declares_is_counted_under_its_name(tmp_path: Path) -> None:
    real = [_row(HOST_A, "/x", 500, {"errors": [{"status": 500}]})]
    fake = [_row(HOST_B, "/x", 400, {"errors": [{"status": 400}]})]

    diff = compare(load(_recording(tmp_path, "r", real)), load(_recording(tmp_path, "f", fake)))

    assert diff.undeclared == []
    assert diff.kinds["declared: placement-500"] == 1


def test_a_different_number_of_requests_is_undeclared(tmp_path: Path) -> None:
    real = [_row(HOST_A, "/traits", 200, {}), _row(HOST_A, "/traits", 200, {}, seq=2)]
    fake = [_row(HOST_B, "/traits", 200, {})]

    diff = compare(load(_recording(tmp_path, "r", real)), load(_recording(tmp_path, "f", fake)))

    assert diff.kinds["request count"] == 1


def test_outcomes_and_durations_are_read(tmp_path: Path) -> None:
    recording = load(_recording(tmp_path, "r", []))

    assert (recording.passed, recording.seconds) == (1, 0.5)


def test_sets_a_client_sends_in_another_order_agree(tmp_path: Path) -> None:
    real = _row(HOST_A, "/traits?name=in:B,A", 200, {"traits": ["A", "B"]})
    fake = _row(HOST_B, "/traits?name=in:A,B", 200, {"traits": ["A", "B"]})
    real_put = _row(HOST_A, "/resource_providers/x/traits", 200, {}, seq=2, method="PUT")
    fake_put = _row(HOST_B, "/resource_providers/x/traits", 200, {}, seq=2, method="PUT")
    real_put["body"] = base64.b64encode(b'{"traits": ["B", "A"]}').decode()
    fake_put["body"] = base64.b64encode(b'{"traits": ["A", "B"]}').decode()

    diff = compare(
        load(_recording(tmp_path, "r", [real, real_put])),
        load(_recording(tmp_path, "f", [fake, fake_put])),
    )

    assert (diff.compared, diff.undeclared) == (2, [])
