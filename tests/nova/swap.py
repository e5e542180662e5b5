"""Make nova build ``reportclient.nova.SchedulerReportClient`` wherever it builds its own.

nova's functional tests create their report client as
``report.SchedulerReportClient()`` (or through ``report_client_singleton()``,
which does the same), and nova's ``PlacementFixture`` serves Placement
through wsgi-intercept at ``fixture.endpoint`` with a ``noauth2`` token. The
swap replaces the class in ``nova.scheduler.client.report`` before any test
module is imported (so ``class VersionCheckingReportClient(report.
SchedulerReportClient)`` subclasses the adapter), and gives the adapter an
Adapter for the fixture in force, as nova's own client gets its Adapter
from nova's ``[placement]`` options. No assertion of nova's is touched.
"""

from __future__ import annotations

from typing import Any

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

import reportclient.nova

__all__ = ["install"]

_current: list[Any] = []  # the nova PlacementFixture set up last


#: Requests the report clients under test sent to Placement (both clients, as run.py counts).
SENT = [0]


class FixtureAdapter(ks_adapter.Adapter):  # type: ignore[misc]
    """An Adapter to the Placement of the nova test running now, counting what it sends.

    nova's fixture patches the report client's class, so one client built in
    one test (nova's ``report_client_singleton``, a service started before the
    fixture) reaches the next test's Placement. The adapter is built once
    with its client: it finds the fixture in force at each request, its
    endpoint and token, as nova's patched methods do.
    """

    def __init__(self) -> None:
        super().__init__(ks_session.Session(), service_type="placement")
        self._serving: Any = None

    def request(self, url: str, method: str, **kwargs: Any) -> Any:
        if not _current:
            # No fixture in force (a test simulating a nova-api with no Placement
            # configured): what nova's own client meets then, its real adapter.
            unconfigured = reportclient.nova.SchedulerReportClient._default_adapter()
            return unconfigured.request(url, method, **kwargs)
        fixture = _current[-1]
        if fixture is not self._serving:
            self.session = ks_session.Session(
                auth=token_endpoint.Token(fixture.endpoint, fixture.token)
            )
            self.endpoint_override = fixture.endpoint
            self._serving = fixture
        SENT[0] += 1
        return super().request(url, method, **kwargs)


class SwappedReportClient(reportclient.nova.SchedulerReportClient):
    """The adapter, on the Placement of whichever nova test is running."""

    @staticmethod
    def _default_adapter() -> ks_adapter.Adapter:
        return FixtureAdapter()


def count_report_client_requests() -> None:
    """Count what a report client sends through nova's PlacementFixture, whichever client.

    nova's fixture replaces ``SchedulerReportClient.get/put/post/delete`` with its
    ``_fake_*`` methods, called with the report client as ``client`` (the
    fixture's own API client for the tests' assertions passes None): nova's
    client sends everything that way, the adapter its raw calls (its typed
    requests go through :class:`CountingAdapter`).
    """
    from nova.tests.functional import fixtures as nova_fixtures

    for verb in ("get", "put", "post", "delete"):
        name = f"_fake_{verb}"
        original = getattr(nova_fixtures.PlacementFixture, name)

        def counting(
            self: Any, client: Any, *args: Any, _sent: Any = original, **kwargs: Any
        ) -> Any:
            if client is not None:
                SENT[0] += 1
            return _sent(self, client, *args, **kwargs)

        setattr(nova_fixtures.PlacementFixture, name, counting)


def install() -> None:
    """Swap nova's report client for the adapter (call before importing nova's tests)."""
    from nova.scheduler.client import report
    from nova.tests.functional import fixtures as nova_fixtures

    setup = nova_fixtures.PlacementFixture.setUp

    def recording_setup(fixture: Any) -> None:
        setup(fixture)
        _current.append(fixture)
        fixture.addCleanup(_current.remove, fixture)

    nova_fixtures.PlacementFixture.setUp = recording_setup
    report.SchedulerReportClient = SwappedReportClient
    report.PLACEMENTCLIENT = None
