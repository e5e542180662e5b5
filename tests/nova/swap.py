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


class SwappedReportClient(reportclient.nova.SchedulerReportClient):
    """The adapter, built on the Placement the running nova test set up."""

    @staticmethod
    def _default_adapter() -> ks_adapter.Adapter:
        if not _current:
            raise RuntimeError("no nova PlacementFixture is set up")
        fixture = _current[-1]
        session = ks_session.Session(auth=token_endpoint.Token(fixture.endpoint, fixture.token))
        return ks_adapter.Adapter(
            session, service_type="placement", endpoint_override=fixture.endpoint
        )


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
