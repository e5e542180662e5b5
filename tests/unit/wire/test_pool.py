"""The connection pool is sized by the caller, with a default fit for 64 threads."""

from __future__ import annotations

import pytest
import requests
from keystoneauth1 import session as ks_session

import reportclient
from tests.support.wire import URL


def _pool_sizes(session: requests.Session) -> dict[str, int]:
    return {prefix: adapter._pool_maxsize for prefix, adapter in session.adapters.items()}


def _requests_session(client: reportclient.PlacementClient) -> requests.Session:
    return client._core.transport._adapter.session.session


def test_from_endpoint_keeps_64_connections_per_host_by_default():
    client = reportclient.PlacementClient.from_endpoint(URL, token="t", microversion="1.39")

    assert _pool_sizes(_requests_session(client)) == {"http://": 64, "https://": 64}
    assert reportclient.DEFAULT_POOL_SIZE == 64


def test_from_endpoint_takes_the_callers_pool_size():
    client = reportclient.PlacementClient.from_endpoint(URL, token="t", pool_size=8)

    assert _pool_sizes(_requests_session(client)) == {"http://": 8, "https://": 8}


def test_from_session_leaves_the_callers_session_alone_unless_asked():
    session = ks_session.Session()
    before = dict(session.session.adapters)

    reportclient.PlacementClient.from_session(session, endpoint_override=URL)

    assert session.session.adapters == before


def test_from_session_sizes_the_pool_when_asked():
    session = ks_session.Session()

    reportclient.PlacementClient.from_session(session, endpoint_override=URL, pool_size=32)

    assert _pool_sizes(session.session) == {"http://": 32, "https://": 32}
    assert all(
        isinstance(adapter, ks_session.TCPKeepAliveAdapter)
        for adapter in session.session.adapters.values()
    )


@pytest.mark.parametrize("size", [0, -1, True, 2.0, "64"])
def test_invalid_pool_size_is_invalid_input(size):
    with pytest.raises(reportclient.InvalidInput, match="pool_size"):
        reportclient.PlacementClient.from_endpoint(URL, token="t", pool_size=size)
