"""What a failing cell leaves behind: every log, every operation, and each failure's timeline.

A failure the judge keeps in the client's columns is explained from Placement's logs or not at
all, and those logs live in directories the cluster removes when the session ends. So when a
cell's judge finds one, :func:`keep_failure` writes, in a directory of its own under
:func:`artifacts_root` (``$GALERA_ARTIFACTS``, else ``galera-artifacts`` in tox's env dir,
else the temp dir), named after the time, the mode and the fault:

* ``summary.txt``: the cell (mode, fault, seed, setup), the judge's evidence and findings, the
  requests Placement retried or whose failure deleted a consumer;
* ``host<n>.log`` (every start of that Placement host) and ``host<n>.cell.log`` (this cell's
  part), ``node<n>.err`` (that Galera node's error log) and ``haproxy.log``;
* ``ops.jsonl``: every operation of every workload as its client reported it (times on the
  monotonic clock), ``hops.jsonl``: every request the fault proxy sent on (host, status);
* ``timeline-<uuid>.txt`` for every consumer or provider a failure is about: its operations,
  their requests through the proxy and every host log line carrying their global request ids,
  in clock order (one clock: the hosts stamp their lines with ``time.monotonic()``,
  :data:`reportclient.testing._app.EVIDENCE_FORMAT`).

The timelines are printed too, so a CI log alone says what happened.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reportclient.testing import GaleraPlacement
from tests.galera.faults import Hop
from tests.galera.matrix import Cell
from tests.galera.provider_workers import POp
from tests.races.checker import Op

__all__ = [
    "ARTIFACTS_ENV", "artifacts_root", "carrying", "keep_failure", "naming", "op_record",
    "timeline",
]  # fmt: skip

#: Where failing cells leave their evidence (a directory; created when needed).
ARTIFACTS_ENV = "GALERA_ARTIFACTS"
_REQUEST_ID = re.compile(r"\[(req-[0-9a-f-]{36})\]")
#: A host log line's monotonic clock, when it has one (:data:`_app.EVIDENCE_FORMAT`).
_CLOCK = re.compile(r"^(\d+\.\d+) ")


def artifacts_root(environ: Mapping[str, str]) -> Path:
    """``$GALERA_ARTIFACTS``, else ``galera-artifacts`` in tox's env dir, else in the temp dir."""
    if environ.get(ARTIFACTS_ENV):
        return Path(environ[ARTIFACTS_ENV])
    if environ.get("TOX_ENV_DIR"):
        return Path(environ["TOX_ENV_DIR"]) / "galera-artifacts"
    return Path(tempfile.gettempdir()) / "reportclient-galera-artifacts"


def op_record(workload: str, op: Op | POp) -> dict[str, Any]:
    """One operation as a JSON object: its fields, its workload and what it names.

    ``subjects``: the consumer of a racing or added-to consumer's operation; the provider (or
    a claim's consumer) of a provider-side one; a move's source and target.
    """
    record = {"workload": workload, **dataclasses.asdict(op)}
    if isinstance(op, Op):
        record["subjects"] = [op.consumer]
    elif op.kind == "move":
        record["subjects"] = [op.subject, str(op.value)]
    else:
        record["subjects"] = [op.subject]
    return record


def naming(records: Iterable[Mapping[str, Any]], subject: str) -> list[Mapping[str, Any]]:
    """The operations (:func:`op_record`) about ``subject``."""
    return [record for record in records if subject in record["subjects"]]


def carrying(
    logs: Sequence[tuple[str, str]], request_ids: Collection[str]
) -> list[tuple[float | None, str, str]]:
    """Every line of ``logs`` (``(host, text)``) naming one of ``request_ids`` in brackets.

    As ``(clock, host, line)``, the clock read from the line (None for a line without one), in
    each log's order.
    """
    found = []
    for host, text in logs:
        for line in text.splitlines():
            named = _REQUEST_ID.search(line)
            if named is None or named.group(1) not in request_ids:
                continue
            clock = _CLOCK.match(line)
            found.append((None if clock is None else float(clock.group(1)), host, line))
    return found


def _held(record: Mapping[str, Any]) -> Any:
    if record["outcome"] == "ok":
        return record.get("result", record.get("value"))
    return record.get("sent") or record.get("value")


def timeline(
    records: Sequence[Mapping[str, Any]],
    hops: Iterable[Hop],
    lines: Iterable[tuple[float | None, str, str]],
) -> list[str]:
    """One subject's story in clock order, each entry ``+seconds who: what``.

    ``records``: its operations (:func:`op_record`), each a start and an end (outcome,
    generation, what it left or sent, the error's detail); ``hops``: the proxy's requests, kept
    when they carry one of those operations' request ids; ``lines``: host log lines
    (:func:`carrying`), shown without their clock. Lines without a clock come last.
    """
    ids = {record["request_id"]: record for record in records}
    events: list[tuple[float, int, str, str]] = []
    for record in records:
        rid, worker = record["request_id"][4:12], record.get("worker", record["workload"])
        what = f"{record['kind']} {rid}"
        events.append((record["start"], 0, worker, f"{what} starts: {record.get('args', '')}"))
        generation = record.get("generation")
        detail = f" ({record['detail'][:300]})" if record.get("detail") else ""
        held = f"g{generation} {_held(record)}" if generation is not None else f"{_held(record)}"
        ended = f"{what} ends {record['outcome']} {held}{detail}"
        events.append((record["end"], 3, worker, ended))
    for hop in hops:
        if hop.request_id not in ids:
            continue
        what = f"{hop.method} {hop.path} {hop.request_id[4:12]}"
        events.append((hop.sent, 1, "proxy", f"sends {what}"))
        answer = f"answered {hop.status}" if hop.status is not None else "no answer"
        events.append((hop.answered, 2, "proxy", f"{answer} from {hop.served_by or '?'}: {what}"))
    unclocked = []
    for clock, host, line in lines:
        text = _CLOCK.sub("", line, count=1)
        if clock is None:
            unclocked.append(f"   ?      {host}: {text}")
        else:
            events.append((clock, 2, host, text))
    if not events:
        return unclocked
    t0 = min(event[0] for event in events)
    ordered = sorted(events, key=lambda event: (event[0], event[1]))
    return [f"{at - t0:+8.3f} {who}: {what}" for at, _, who, what in ordered] + unclocked


def _ops(cell: Cell) -> list[dict[str, Any]]:
    records = [op_record("consumers", op) for op in cell.consumer_ops]
    records += [op_record("adds", op) for op in cell.add_ops]
    kinds = {"move": "moves"}
    records += [op_record(kinds.get(op.kind, "providers"), op) for op in cell.provider_ops]
    return records


def keep_failure(
    root: Path,
    galera: GaleraPlacement,
    cell: Cell,
    cell_logs: Sequence[str],
    hops: Sequence[Hop],
    seed: int,
) -> tuple[Path, str]:
    """Write the failing ``cell``'s evidence under ``root``; return its directory and the text
    to print (the directory, then each failing subject's timeline).

    :param cell_logs: each host's log since the cell began, in host order.
    """
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    slug = re.sub(r"[^a-z0-9]+", "-", f"{cell.mode}-{cell.fault}".lower()).strip("-")
    where = root / f"{stamp}-{slug}"
    suffix = 1
    while where.exists():
        suffix += 1
        where = root / f"{stamp}-{slug}-{suffix}"
    where.mkdir(parents=True)
    records = _ops(cell)
    summary = {
        "mode": cell.mode, "fault": cell.fault, "seed": seed,
        "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", ""),
        "judged_at_seqno": cell.judged_at, "window": dataclasses.asdict(cell.window),
        "failed": sorted(cell.failed), "evidence": cell.evidence,
        "findings": cell.finding_lines, "retried": sorted(cell.retried),
        "cleanups": {c: sorted(r) for c, r in cell.cleanups.items()},
        "setup": dataclasses.asdict(cell.setup),
    }  # fmt: skip
    (where / "summary.txt").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    for index, host in enumerate(galera.hosts):
        (where / f"{host.name}.log").write_text(host.read_log())
        (where / f"{host.name}.cell.log").write_text(cell_logs[index])
        (where / f"node{index + 1}.err").write_text(galera.galera.read_log(index))
    if galera.haproxy is not None:
        (where / "haproxy.log").write_text(galera.haproxy.read_log())
    with open(where / "ops.jsonl", "w") as out:
        out.writelines(json.dumps(r, default=str) + "\n" for r in records)
    with open(where / "hops.jsonl", "w") as out:
        out.writelines(json.dumps(dataclasses.asdict(h)) + "\n" for h in hops)
    logs = [(host.name, text) for host, text in zip(galera.hosts, cell_logs, strict=True)]
    printed = [f"galera artifacts of {cell.mode} / {cell.fault}: {where}"]
    for subject in sorted(cell.failed):
        mine = naming(records, subject)
        lines = carrying(logs, {record["request_id"] for record in mine})
        story = timeline(mine, hops, lines)
        (where / f"timeline-{subject}.txt").write_text("\n".join(story) + "\n")
        printed.append(f"-- {subject}: {len(mine)} operations, {len(lines)} host log lines")
        printed += [f"   {entry}" for entry in story]
    return where, "\n".join(printed)
