"""The write machine's backend for a real Placement (one process, or a cluster) on 127.0.0.1.

The client reaches Placement through a loopback :class:`FaultProxy`, which makes the faults
on the client's first write (whatever its method and path): ``drop_answer`` (a lost answer
after the commit), ``hold`` forwarded once the client's read timed out (a timeout after the
commit) or right after the client's next read (the slow write), ``answer(503)`` before and
``answer_after_forwarding(500)`` after the commit, and ``answer(503)`` on the read after a
dropped answer. The machine's reads and the other writer go straight to Placement with
:class:`PlacementAdmin`. A hook in the client's transport reports each request before the
client sees its answer; waits are bounded events, never sleeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import requests
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

import reportclient
from reportclient.testing import PlacementAdmin
from tests.machines.write_machine import SERVICE
from tests.support.faultproxy import (
    Action,
    FaultProxy,
    Match,
    RuleHandle,
    answer,
    answer_after_forwarding,
    drop_answer,
    hold,
)

#: The client's read timeout: how long a held write keeps it waiting.
READ_TIMEOUT = 0.4
#: Bound on every wait for the proxy (a hang fails the test instead of the run).
WAIT = 10.0
WRITES = ("PUT", "POST", "DELETE")


class HookedAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter, calling ``after(method, path, status or None)`` after each request."""

    def __init__(self, after: Callable[[str, str, int | None], None]) -> None:
        super().__init__()
        self.after = after

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        method, path = request.method or "GET", urlsplit(request.url or "").path
        try:
            response = super().send(request, *args, **kwargs)
        except requests.exceptions.RequestException:
            self.after(method, path, None)
            raise
        self.after(method, path, response.status_code)
        return response


class HttpBackend:
    """A FaultProxy in front of Placement at ``port``; the other writer goes around it."""

    def __init__(self, port: int, admin: PlacementAdmin) -> None:
        self.admin = admin
        self.proxy = FaultProxy("127.0.0.1", port, timeout=WAIT)
        self._rules: list[RuleHandle] = []
        self._fault = "none"
        self._on_request: Callable[[str], None] = lambda label: None
        self._fired = self._disturbed = self._wrote = False

    def client(self, **kwargs: Any) -> reportclient.PlacementClient:
        transport = requests.Session()
        transport.trust_env = False  # loopback only: no proxy from the environment
        transport.mount("http://", HookedAdapter(self._answered))
        session = ks_session.Session(auth=token_endpoint.Token(self.proxy.url, "admin"),
                                     session=transport)  # fmt: skip
        adapter = ks_adapter.Adapter(
            session,
            service_type="placement",
            endpoint_override=self.proxy.url,
            additional_headers=SERVICE,
        )
        return reportclient.PlacementClient(
            adapter, microversion="1.39", timeout=(WAIT, READ_TIMEOUT), **kwargs
        )

    def arm(self, fault: str, on_request: Callable[[str], None]) -> None:
        self._fault, self._on_request = fault, on_request
        self._fired = self._disturbed = self._wrote = False
        make: Callable[[], Action] | None = {
            "lost-reset": drop_answer,
            "failing-reread": drop_answer,
            "lost-timeout": hold,
            "slow-write": lambda: hold(forward_after=Match("GET", "/")),
            "5xx-before-commit": lambda: answer(503),
            "5xx-after-commit": lambda: answer_after_forwarding(500),
        }.get(fault)
        self._rules = [] if make is None else [self.proxy.add_rule(m, "/", make()) for m in WRITES]

    def _answered(self, method: str, path: str, status: int | None) -> None:
        """After each of the client's requests (in its thread, before it sees the answer)."""
        self._disturbed |= status is None or status >= 500
        rules = [r for r in self._rules[:3] if r.applied.is_set()]
        if method in WRITES and not self._wrote:
            self._wrote = True
            for rule in self._rules[:3]:
                if not rule.applied.is_set():
                    rule.remaining = 0  # only the first write meets the fault
        if rules:
            put = rules[0]
            self._fired = True
            if method in WRITES and status is None and self._fault == "lost-timeout":
                put.forward()  # commits now: after the timeout, before the re-read
                assert put.forwarded.wait(WAIT)
            if method in WRITES and status is None and self._fault == "failing-reread":
                if len(self._rules) == 3:
                    self._rules.append(self.proxy.add_rule("GET", "/", answer(503)))
            if method == "GET" and self._fault == "slow-write":
                assert put.forwarded.wait(WAIT)  # released by this read; let it commit
        self._on_request(f"{method} {path}")

    def disarm(self) -> tuple[bool, bool]:
        for rule in self._rules:
            if rule.action.name == "hold" and rule.applied.is_set():
                if not rule.forwarded.is_set():  # no read came after it (a force_release)
                    rule.forward()
                assert rule.forwarded.wait(WAIT), "a held write never landed"
            rule.remaining = 0  # an unused rule must not fire in a later operation
        self._rules = []
        return self._fired, self._fired or self._disturbed

    def close(self) -> None:
        self.proxy.close()
