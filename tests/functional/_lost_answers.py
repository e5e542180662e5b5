"""Lost answers with another writer acting in between (the incarnation and float tests).

:class:`CommitThenAct` is ``LosingAdapter`` (test_lost_response.py) with an ``after_commit``
hook: the request reaches Placement and commits, Placement's answer is read and thrown away,
the hook runs the other writer's actions synchronously (with its own client and session), and
only then does the client under test see a connection reset. Its next request is its re-read,
so "the other writer acted after the commit and before the re-read" holds by construction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import requests
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from requests.adapters import HTTPAdapter

from reportclient import PlacementClient
from tests.functional._helpers import LATEST, fast_retry

#: Bounded wait for events and worker threads; a hang fails the test instead of the run.
WAIT = 30.0


class CommitThenAct(HTTPAdapter):
    """Loses the answer of the next request of ``method`` whose path contains ``path``.

    The request reaches Placement and commits; Placement's answer is read and thrown away;
    ``after_commit()`` then runs (another writer acting between the commit and the client's
    re-read), and only then does the client see a connection reset.
    """

    def __init__(
        self, method: str, path: str, after_commit: Callable[[], None] = lambda: None
    ) -> None:
        super().__init__(max_retries=0)
        self.method = method
        self.path = path
        self.after_commit = after_commit
        self.armed = True
        #: ``(method, path, status)`` of each request whose answer was lost.
        self.lost: list[tuple[str, str, int]] = []

    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        path = request.path_url
        if not self.armed or request.method != self.method or self.path not in path:
            return super().send(request, *args, **kwargs)
        self.armed = False
        response = super().send(request, *args, **kwargs)
        response.content  # noqa: B018 - the whole answer is read: the write has committed
        response.close()
        self.lost.append((self.method, path, response.status_code))
        self.after_commit()
        raise requests.exceptions.ConnectionError("connection reset by peer (simulated)")


class LateAnswer(HTTPAdapter):
    """Delays the answer of the next ``GET`` whose path is ``path``, after Placement sent it.

    The request is answered by Placement and its body read in full (``answered`` is set); the
    answer is handed to the client only once ``release`` is set.
    """

    def __init__(self, path: str) -> None:
        super().__init__(max_retries=0)
        self.path = path
        self.armed = True
        self.answered = threading.Event()
        self.release = threading.Event()

    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        if not self.armed or request.method != "GET" or request.path_url != self.path:
            return super().send(request, *args, **kwargs)
        self.armed = False
        response = super().send(request, *args, **kwargs)
        response.content  # noqa: B018 - Placement's answer is in: what it says is fixed now
        self.answered.set()
        assert self.release.wait(WAIT), "the late answer was never released"
        return response


def client_over(url: str, adapter: HTTPAdapter | None = None, **kwargs: Any) -> PlacementClient:
    """The client under test on ``url`` (1.39, fast retries), every request through ``adapter``."""
    http = requests.Session()
    if adapter is not None:
        http.mount("http://", adapter)
    session = ks_session.Session(auth=token_endpoint.Token(url, "admin"), session=http)
    kwargs.setdefault("retry", fast_retry())
    return PlacementClient.from_session(
        session, endpoint_override=url, microversion=LATEST, **kwargs
    )
