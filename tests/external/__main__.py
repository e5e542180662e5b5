"""``python -m tests.external``: run the external suites on both sides, diff them, print the table.

Exits 1 when a test that passes on the real Placement does not pass on the
fake, when any difference is undeclared, or when a suite ran no test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.external._diff import compare, load
from tests.external.suites import SUITES, environment, test_ids


def _run(suite: str, side: str, record: Path, extra: list[str]) -> float:
    """Run one suite on one side under pytest; return its wall time."""
    env = dict(os.environ)
    # osc-placement's test_plugin runs the ``openstack`` script of this env.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(environment(suite))
    # The plugin is imported from this checkout; pytest runs outside it, so
    # that no rootdir configuration of ours applies to their tests.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    command = [
        sys.executable,
        "-m",
        "pytest",
        *test_ids(suite),
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "-p",
        "tests.external.plugin",
        f"--placement-side={side}",
        f"--record={record}",
        *extra,
    ]
    started = time.perf_counter()
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, check=False, cwd=record.parent
    )
    seconds = time.perf_counter() - started
    tail = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"  {suite} on {side}: {tail[0]} ({seconds:.1f} s)", flush=True)
    if done.returncode not in (0, 1):
        print(done.stdout[-4000:], done.stderr[-4000:], sep="\n")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.external", description=__doc__)
    parser.add_argument("--suite", action="append", choices=sorted(SUITES))
    parser.add_argument("--keep", type=Path, help="keep the recordings in this directory")
    parser.add_argument("--show", type=int, default=20, help="undeclared differences to print")
    parser.add_argument("pytest_args", nargs="*", help="passed to each pytest run (after --)")
    args = parser.parse_args(argv)
    suites = args.suite or list(SUITES)
    workdir = (args.keep or Path(tempfile.mkdtemp(prefix="external-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    failed = False
    for suite in suites:
        walls = {}
        for side in ("real", "fake"):
            walls[side] = _run(suite, side, workdir / f"{suite}-{side}.jsonl", args.pytest_args)
        real = load(workdir / f"{suite}-real.jsonl")
        fake = load(workdir / f"{suite}-fake.jsonl")
        diff = compare(real, fake)
        lost = sorted(
            t
            for t, o in real.outcomes.items()
            if o == "passed" and fake.outcomes.get(t) != "passed"
        )
        rows.append((suite, real, fake, diff, walls, lost))
        for line in diff.undeclared[: args.show]:
            print(f"  UNDECLARED {line[:400]}")
        for test in lost:
            print(f"  PASSES ONLY ON THE REAL PLACEMENT: {test}")
        failed |= bool(diff.undeclared or lost or not real.outcomes)

    print()
    head = f"{'suite':<14} {'passed real':>12} {'passed fake':>12} {'requests':>9} "
    head += f"{'undeclared':>10} {'tests s real':>13} {'tests s fake':>13} {'fake/real':>9}"
    print(head)
    print("-" * len(head))
    for suite, real, fake, diff, _walls, _lost in rows:
        ratio = fake.seconds / real.seconds if real.seconds else float("nan")
        print(
            f"{suite:<14} {real.passed:>5}/{len(real.outcomes):<6} {fake.passed:>5}/"
            f"{len(fake.outcomes):<6} {diff.compared:>9} {len(diff.undeclared):>10} "
            f"{real.seconds:>13.1f} {fake.seconds:>13.1f} {ratio:>8.2f}x"
        )
    print()
    print("differences by kind (both sides' answers compared pair by pair):")
    for suite, _real, _fake, diff, walls, _lost in rows:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(diff.kinds.items())) or "none"
        print(f"  {suite}: {kinds}")
        print(f"  {suite}: whole pytest run {walls['real']:.1f} s real, {walls['fake']:.1f} s fake")
    passed = sum(fake.passed for _s, _r, fake, *_ in rows)
    failures = sum(len(fake.outcomes) - fake.passed for _s, _r, fake, *_ in rows)
    print(f"recordings in {workdir}")
    # The plain closing line CI reads: the fake side's tests.
    print(f"{passed} passed, {failures} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
