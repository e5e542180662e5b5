"""Run nova's own functional tests from the installed nova, on nova's client or on ours.

``python -m tests.nova.run --client nova --json own.json`` runs the chosen
tests with nova's ``SchedulerReportClient``; ``--client reportclient
--compare own.json`` runs them with :mod:`reportclient.nova` swapped in
(:mod:`tests.nova.swap`) and prints::

    nova functional on reportclient: N passed of M (nova's own client: M' passed)

M counts the tests that use the report client only through its public
interface. A test whose source reaches into the client's private members
(``self.client._provider_tree``, ``client._ensure_resource_provider``...)
tests nova's implementation, not its interface: it is run, listed with the
private names it uses, and not counted. Nothing of nova's is copied or
changed: the tests are loaded by name from the installed ``nova`` package.

The exit status is 1 when a counted test passes on nova's client and fails
on the adapter without being one of :data:`KNOWN` (each with the reason the
adapter differs on purpose), so CI fails on a regression and on nothing else.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import subprocess
import sys
import time
import unittest
import warnings
from collections.abc import Iterator
from typing import Any

#: The tests run, chosen by what they call (doc/source/nova_adapter.rst says why):
#: a module or class of nova's, and the pattern its test names must match.
#: Every test of a module or class.
ALL = r"test_"

#: nova's regression tests whose source touches Placement or allocations, by bug number.
REGRESSIONS = """
1595962 1628606 1671648 1679750 1682693 1702454 1713783 1718455 1718512 1719730
1735407 1741364 1746483 1764556 1764883 1780373 1781286 1781710 1784353 1790204
1794996 1797580 1806064 1815153 1825020 1825034 1825537 1830747 1835822 1837955
1839560 1845291 1848343 1849165 1849409 1852458 1853009 1862633 1886418 1890244
1893284 1896463 1978983 2025480 2062127 2098496 2102038 2111440 2134375 2140631
2143972 2153425
""".split()

SUITES = (
    # Every public call of the report client against nova's Placement fixture.
    ("nova.tests.functional.test_report_client", ALL),
    # Servers and their moves, each asserting the usages and allocations
    # Placement holds afterwards: claim_resources (doubling up on evacuate),
    # move_allocations, put_allocations, the deletes and
    # remove_provider_tree_from_instance_allocation, on flat and nested compute
    # trees (update_from_provider_tree with children).
    ("nova.tests.functional.test_servers.ServerMovingTests", ALL),
    ("nova.tests.functional.test_servers.ServerMovingTestsWithNestedComputes", ALL),
    ("nova.tests.functional.test_servers.ServerMovingTestsFromFlatToNested", ALL),
    # Placement answering 409 placement.concurrent_update to every write:
    # nova's exception, in nova's time, after one request.
    ("nova.tests.functional.test_servers.ConsumerGenerationConflictTest", ALL),
    ("nova.tests.functional.test_servers.ServerLiveMigrateForceAndAbort", ALL),
    ("nova.tests.functional.test_servers.ServerRescheduleTests", ALL),
    ("nova.tests.functional.test_servers.ServerBuildAbortTests", ALL),
    ("nova.tests.functional.test_servers.ServerUnshelveSpawnFailTests", ALL),
    ("nova.tests.functional.test_servers.ServerSoftDeleteTests", ALL),
    ("nova.tests.functional.test_servers.ServerRebuildTestCase", ALL),
    ("nova.tests.functional.test_servers.TraitsBasedSchedulingTest", ALL),
    # Provider trees the virt driver reports: traits, inventories, children.
    ("nova.tests.functional.test_servers_provider_tree", ALL),
    ("nova.tests.functional.compute.test_resource_tracker", ALL),
    ("nova.tests.functional.libvirt.test_reshape", ALL),
    # nova-manage's placement audit and heal_allocations (the raw calls).
    ("nova.tests.functional.test_nova_manage", ALL),
    # Host aggregates mirrored into Placement (aggregate_add_host, _remove_host).
    ("nova.tests.functional.test_aggregates", ALL),
    ("nova.tests.functional.test_service", ALL),
    # nova's regression tests whose source touches Placement or allocations.
    # test_bug_2080531 is left out: it reads the server's network info the
    # moment the server is ACTIVE, before nova's network allocation (a thread of
    # its own) has always saved it, and fails on nova's own client as often.
    *((f"nova.tests.functional.regressions.test_bug_{bug}", ALL) for bug in REGRESSIONS),
)

#: Counted tests the adapter fails on purpose, with the difference that makes them fail.
#: None today: nova's test_update_from_provider_tree_reshape, listed here until the
#: adapter kept a view of nova's tree (a sharing provider stays in it after the compute
#: node left its aggregate, as in nova's cache), passes since.
KNOWN: dict[str, str] = {}

_PRIVATE = re.compile(
    r"\b(?:client|reportclient|report_client|scheduler_client|placementclient)\._[a-z]\w*"
    r"|SchedulerReportClient\._[a-z]\w*|\._provider_tree\b|\._association_refresh_time\b"
)


def _tests(suite: unittest.TestSuite | unittest.TestCase) -> Iterator[unittest.TestCase]:
    if isinstance(suite, unittest.TestCase):
        yield suite
        return
    for child in suite:
        yield from _tests(child)


def private_uses(test: unittest.TestCase) -> list[str]:
    """The private report-client names a test method's own source uses."""
    method = getattr(type(test), test._testMethodName, None)
    if method is None:
        return []
    sources = [inspect.getsource(method)]
    found = {m.group(0) for src in sources for m in _PRIVATE.finditer(src)}
    return sorted(found)


def _paste_config_fix() -> None:
    """Point nova's tests at the api-paste.ini the nova wheel installs under ``sys.prefix``.

    nova's ConfFixture looks for it beside the source tree (``etc/nova``),
    which an installed nova does not have.
    """
    from nova.tests.fixtures import conf as conf_fixture

    paste = os.path.join(sys.prefix, "etc", "nova", "api-paste.ini")
    setup = conf_fixture.ConfFixture.setUp

    def setup_with_paste(self: Any) -> None:
        setup(self)
        self.conf.set_default("api_paste_config", paste, group="wsgi")

    conf_fixture.ConfFixture.setUp = setup_with_paste


class _Outcomes(unittest.TestResult):
    """Each test's outcome, and the Placement requests its report client sent."""

    def __init__(self) -> None:
        super().__init__()
        self.outcome: dict[str, str] = {}
        self.requests: dict[str, int] = {}
        self._before = 0

    def startTest(self, test: unittest.TestCase) -> None:  # noqa: N802
        from tests.nova import swap

        super().startTest(test)
        self._before = swap.SENT[0]

    def stopTest(self, test: unittest.TestCase) -> None:  # noqa: N802
        from tests.nova import swap

        self.requests[test.id()] = swap.SENT[0] - self._before
        super().stopTest(test)

    def addSuccess(self, test: unittest.TestCase) -> None:  # noqa: N802
        self.outcome[test.id()] = "pass"

    def _fail(self, test: unittest.TestCase, err: Any) -> None:
        kind, value, _tb = err
        self.outcome[test.id()] = f"{kind.__name__}: {str(value).strip().splitlines()[-1][:200]}"

    def addError(self, test: unittest.TestCase, err: Any) -> None:  # noqa: N802
        self._fail(test, err)

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:  # noqa: N802
        self._fail(test, err)

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:  # noqa: N802
        self.outcome[test.id()] = f"skipped: {reason}"


def run(client: str) -> tuple[dict[str, str], dict[str, list[str]], dict[str, int]]:
    """Every chosen test's outcome, the private names of those that use some, and the
    Placement requests each test's report clients sent."""
    warnings.simplefilter("ignore")
    # nova's TestCase turns this into a per-test timeout: a test that hangs fails
    # instead of stopping the run.
    os.environ.setdefault("OS_TEST_TIMEOUT", str(TEST_TIMEOUT))
    from tests.nova import swap

    if client == "reportclient":
        swap.install()
    swap.count_report_client_requests()
    _paste_config_fix()
    suite = unittest.TestSuite()
    for name, pattern in SUITES:
        chosen = re.compile(pattern)
        loaded = unittest.defaultTestLoader.loadTestsFromName(name)
        suite.addTests(t for t in _tests(loaded) if chosen.match(t._testMethodName))
    private = {t.id(): uses for t in _tests(suite) if (uses := private_uses(t))}
    result = _Outcomes()
    suite.run(result)
    return result.outcome, private, result.requests


_out = sys.stdout


def say(*parts: object) -> None:
    """Print to the console even after nova's output was sent to ``--log``."""
    print(*parts, file=_out)


def interface_differences() -> tuple[int, list[str]]:
    """nova's public methods, and how the adapter's differ (missing, or other parameters)."""
    from nova.scheduler.client.report import SchedulerReportClient as Nova

    import reportclient.nova

    ours = reportclient.nova.SchedulerReportClient
    names = sorted(n for n, _ in inspect.getmembers(Nova, callable) if not n.startswith("_"))
    differences = []
    for name in names:
        if not hasattr(ours, name):
            differences.append(f"{name}: missing")
            continue
        theirs = list(inspect.signature(getattr(Nova, name)).parameters)
        mine = list(inspect.signature(getattr(ours, name)).parameters)
        if theirs != mine:
            differences.append(f"{name}: nova takes {theirs}, the adapter {mine}")
    return len(names), differences


#: Seconds a nova test may take before nova's TestCase fails it (OS_TEST_TIMEOUT).
TEST_TIMEOUT = 240


def module_of(test_id: str) -> str:
    """The test's module under nova.tests.functional (``test_servers``, ``regressions``...)."""
    parts = test_id.split(".")
    return "regressions" if "regressions" in parts else parts[3]


def by_module(
    counted: list[str],
    outcome: dict[str, str],
    own: dict[str, str],
    requests: dict[str, int],
    own_requests: dict[str, int],
) -> list[str]:
    """The counted tests by module: how many pass on each client, and the requests each sent.

    Requests are compared over the tests that pass on both clients (a failing
    test stops early and sends fewer).
    """
    rows: dict[str, list[int]] = {}
    for test in counted:
        row = rows.setdefault(module_of(test), [0, 0, 0, 0, 0, 0])
        row[0] += 1
        row[1] += own.get(test) == "pass"
        row[2] += outcome[test] == "pass"
        if own.get(test) == "pass" and outcome[test] == "pass":
            row[3] += 1
            row[4] += own_requests.get(test, 0)
            row[5] += requests.get(test, 0)
    lines = [
        "| module | counted | pass: nova's client | pass: adapter | both pass "
        "| requests: nova's client | requests: adapter | adapter/nova |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    total = [0, 0, 0, 0, 0, 0]
    for module in sorted(rows):
        row = rows[module]
        total = [a + b for a, b in zip(total, row, strict=True)]
        lines.append(_row(module, row))
    lines.append(_row("**all**", total))
    return lines


def _row(name: str, row: list[int]) -> str:
    ratio = f"{row[5] / row[4]:.2f}" if row[4] else "-"
    return f"| {name} | {row[0]} | {row[1]} | {row[2]} | {row[3]} | {row[4]} | {row[5]} | {ratio} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=("nova", "reportclient"), required=True)
    parser.add_argument("--json", help="write the outcomes here")
    parser.add_argument("--compare", help="nova's own outcomes (from --client nova --json)")
    parser.add_argument("--log", help="send nova's own output (its services' logs) here")
    parser.add_argument(
        "--with-nova",
        metavar="DIR",
        help="run nova's own client at the same time in another process (one core each), "
        "writing DIR/own.json and DIR/nova-own.log, and compare with it",
    )
    args = parser.parse_args(argv)
    beside = None
    if args.with_nova:
        args.compare = os.path.join(args.with_nova, "own.json")
        own_log = os.path.join(args.with_nova, "nova-own.log")
        command = [sys.executable, "-m", "tests.nova.run", "--client", "nova"]
        command.extend(["--json", args.compare, "--log", own_log])
        beside = subprocess.Popen(command)
    global _out
    if args.log:
        # nova's services log to the console (fd 1 and 2, whatever stream
        # object they hold); the summary goes to the console kept aside.
        _out = os.fdopen(os.dup(1), "w", buffering=1)
        with open(args.log, "w") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
    started = time.monotonic()
    outcome, private, requests = run(args.client)
    took = time.monotonic() - started
    if args.json:
        with open(args.json, "w") as out:
            json.dump(
                {"outcome": outcome, "private": private, "requests": requests, "seconds": took},
                out,
                indent=1,
            )
    if not args.compare:
        passed = sum(v == "pass" for v in outcome.values())
        total = len(outcome)
        say(f"nova functional on nova's own client: {passed} passed of {total} ({took:.0f} s)")
        return 0
    if beside is not None and beside.wait() != 0:
        say(f"nova's own client run exited {beside.returncode}")
        return 1
    with open(args.compare) as given:
        recorded = json.load(given)
    own = recorded["outcome"]
    own_requests: dict[str, int] = recorded.get("requests", {})
    methods, differences = interface_differences()
    say(
        f"SchedulerReportClient's public methods: {methods - len(differences)} of {methods} "
        "with nova's parameters"
    )
    for difference in differences:
        say(f"  {difference}")
    # A test nova itself skips (a decorator naming a nova bug) tests nothing.
    skipped = sorted(
        t for t in outcome if t not in private and str(own.get(t, "")).startswith("skipped")
    )
    counted = sorted(t for t in outcome if t not in private and t not in skipped)
    ours = [t for t in counted if outcome[t] == "pass"]
    theirs = [t for t in counted if own.get(t) == "pass"]
    say(f"\n== left out: {len(private)} test(s) reaching into nova's private report-client members")
    for test in sorted(private):
        say(f"  {test}: {', '.join(private[test])} (on reportclient: {outcome.get(test)})")
    if skipped:
        say(f"\n== left out: {len(skipped)} test(s) nova skips on its own client")
        for test in skipped:
            say(f"  {test}: {own[test]} (on reportclient: {outcome[test]})")
    regressions = [t for t in theirs if outcome[t] != "pass" and t not in KNOWN]
    say("\n== counted tests that do not pass on reportclient")
    for test in counted:
        if outcome[test] != "pass":
            why = f" - {KNOWN[test]}" if test in KNOWN else ""
            say(f"  {test}: {outcome[test]} (nova's own: {own.get(test)}){why}")
    say(
        f"\nnova functional on reportclient: {len(ours)} passed of {len(counted)} "
        f"(nova's own client: {len(theirs)} passed) in {took:.0f} s"
    )
    say("\n" + "\n".join(by_module(counted, outcome, own, requests, own_requests)))
    known = [t for t in counted if outcome[t] != "pass" and t in KNOWN]
    failed = len(counted) - len(ours) - len(known)
    say(f"{len(known)} known difference(s) listed above, not counted as failures")
    say(f"{len(ours)} passed, {failed} failed")
    return 1 if regressions or differences else 0


if __name__ == "__main__":
    sys.exit(main())
