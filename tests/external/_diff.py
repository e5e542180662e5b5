"""Pairing two recorded runs of one suite and comparing them request by request.

Each side's recording (tests/external/plugin.py) holds, per test, the
requests the suite sent to Placement in order, with the answers. The n-th
request of a test on the fake is paired with the n-th on the real side.
Both are compared with the fuzzer's comparison (tests/fuzz/_compare.py):
the requests themselves (what the suite sent, which an earlier different
answer would change) and then the answers, after the intercepted host (a
fresh uuid per fixture) is replaced by one name. A difference the fuzzer's
declared list explains is counted by its name; any other is undeclared.
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.fuzz._backends import Answer, Request
from tests.fuzz._compare import Renamer, differences
from tests.fuzz._declared import declared_for

__all__ = ["Recording", "SuiteDiff", "compare", "load"]

_HOST = "placement.intercept"
# What the suites draw at random and send, renamed by first appearance like
# the uuids: uuids written as 32 hex digits (osc-placement's custom trait and
# class names) and rand_name's number ("osc-placement-functional-tests--4578").
_HEX = re.compile(r"(?<=_)(?:[0-9A-F]{32}|[0-9a-f]{32})")
# ``name=in:A,B`` and ``required=in:...``: a set, sent in whatever order the
# client's set iterates.
_IN_LIST = re.compile(r"(in(?::|%3A))([^&]*)")
_DRAWN = re.compile(r"(?<=-)\d{6,}\b")
_MOUNT = "/placement"
# What a suite sends that we compare: its choices, not its library's clocks.
_SENT = ("accept", "content-type", "openstack-api-version", "x-auth-token")


@dataclass
class Recording:
    """One side's run of one suite."""

    requests: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    outcomes: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return sum(1 for outcome in self.outcomes.values() if outcome == "passed")


def load(path: Path) -> Recording:
    """Read a recording the plugin wrote."""
    recording = Recording()
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("test"):
            # pytest names an installed test by its path; the package path is enough.
            row["test"] = row["test"].rsplit("site-packages/", 1)[-1]
        if row["kind"] == "request":
            recording.requests[row["test"] or "<outside a test>"].append(row)
        elif row["kind"] == "outcome":
            if recording.outcomes.get(row["test"]) in (None, "passed"):
                recording.outcomes[row["test"]] = row["outcome"]
        elif row["kind"] == "duration":
            recording.seconds += row["seconds"]
    return recording


class Names(Renamer):
    """The fuzzer's renamer, which also renames what the suites drew at random."""

    def text(self, value: str) -> str:
        """``value`` with request ids blanked and made-up uuids, hex ids and numbers renamed."""
        value = super().text(value)
        value = _HEX.sub(
            lambda m: self.seen.setdefault(m.group(0), f"<hex-{len(self.seen)}>"), value
        )
        return _DRAWN.sub(
            lambda m: self.seen.setdefault(m.group(0), f"<n-{len(self.seen)}>"), value
        )


def _unhost(text: str, host: str) -> str:
    return text.replace(host, _HOST)


def _answer(row: dict[str, Any], host: str) -> Answer:
    body = base64.b64decode(row["response_body"]).decode("utf-8", "replace")
    headers = {k.lower(): _unhost(v, host) for k, v in row["response_headers"].items()}
    return Answer(row["status"], headers, _unhost(body, host).encode("utf-8"))


def _path(row: dict[str, Any]) -> tuple[str, str]:
    parts = urlsplit(row["url"])
    path = parts.path[len(_MOUNT) :] if parts.path.startswith(_MOUNT) else parts.path
    return parts.netloc, path + (f"?{parts.query}" if parts.query else "")


def _sent(row: dict[str, Any], path: str, names: Renamer) -> str:
    headers = {k.lower(): v for k, v in row["headers"].items() if k.lower() in _SENT}
    body = names.text(base64.b64decode(row["body"]).decode("utf-8", "replace"))
    try:
        body = json.dumps(_unordered(json.loads(body)), sort_keys=True)
    except ValueError:
        pass
    path = _IN_LIST.sub(
        lambda m: m.group(1) + ",".join(sorted(re.split(",|%2C", m.group(2)))), path
    )
    return names.text(f"{row['method']} {path} {sorted(headers.items())}") + f" {body}"


def _unordered(value: Any) -> Any:
    """A request body with its lists sorted; key order means nothing in JSON anyway.

    Every list a client sends Placement is a set (traits, aggregates, the
    allocations of a pre-1.12 body), and clients fill them in the order of an
    earlier answer (nova copies a provider's trait list into a Python set),
    so their order follows the server's, which Placement does not promise.
    """
    if isinstance(value, dict):
        return {key: _unordered(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted((_unordered(item) for item in value), key=lambda v: json.dumps(v))
    return value


@dataclass
class SuiteDiff:
    """What comparing two recordings of one suite found."""

    compared: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    undeclared: list[str] = field(default_factory=list)


def _kind(line: str) -> str:
    head = line.split(":", 1)[0]
    return head if head.startswith(("status", "header", "body")) else "other"


def compare(real: Recording, fake: Recording) -> SuiteDiff:
    """Pair the two recordings test by test, request by request, and compare each pair."""
    result = SuiteDiff()
    for test in sorted(set(real.requests) | set(fake.requests)):
        theirs, ours = real.requests.get(test, []), fake.requests.get(test, [])
        if len(theirs) != len(ours):
            result.kinds["request count"] += 1
            result.undeclared.append(f"{test}: {len(theirs)} requests real, {len(ours)} fake")
        real_names, fake_names = Names(frozenset()), Names(frozenset())
        for r_row, f_row in zip(theirs, ours, strict=False):
            result.compared += 1
            r_host, r_path = _path(r_row)
            f_host, f_path = _path(f_row)
            sent_real = _sent(r_row, r_path, real_names)
            sent_fake = _sent(f_row, f_path, fake_names)
            where = f"{test} #{r_row['seq']} {r_row['method']} {real_names.text(r_path)}"
            if sent_real != sent_fake:
                result.kinds["request sent"] += 1
                result.undeclared.append(f"{where}: sent real {sent_real!r}, fake {sent_fake!r}")
                continue
            r_answer, f_answer = _answer(r_row, r_host), _answer(f_row, f_host)
            diffs = differences(r_answer, f_answer, real_names, fake_names)
            if not diffs:
                continue
            request = Request(r_row["method"], r_path, route=r_path)
            declared = declared_for(request, r_answer, f_answer, diffs)
            if declared is not None:
                result.kinds[f"declared: {declared.name}"] += 1
                continue
            for line in diffs:
                result.kinds[_kind(line)] += 1
                result.undeclared.append(f"{where}: {line}")
    return result
