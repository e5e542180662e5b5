"""The clients a workload drives, behind one small interface.

Every driver claims ``{rp: {"VCPU": 1}}`` for a consumer (``claim``) or adds one VCPU to
what a consumer holds (``update``), and exposes ``wire``: client-side request counts by
method plus a one-shot hook run just before the next PUT leaves.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, Protocol

import requests
import tenacity
from keystoneauth1 import adapter as ks_adapter

from bench.support.common import (
    MICROVERSION,
    PROJECT,
    USER,
    CountingAdapter,
    CountingSession,
    counting_session,
    keepalive_pool,
    make_adapter,
)
from reportclient import PlacementClient, add_allocations

CONSUMER_TYPE = "INSTANCE"


class Wire(Protocol):
    """What a workload reads and arms on a driver's connection."""

    counts: Counter[str]
    before_put: Callable[[], None] | None
    hook_seconds: float


class Driver(Protocol):
    """A client under test."""

    name: str
    wire: Wire

    def claim(self, consumer: str, rp: str) -> None:
        """Make ``consumer`` hold ``{rp: {VCPU: 1}}``; raise when the client reports failure."""

    def update(self, consumer: str, rp: str) -> None:
        """Add one VCPU on ``rp`` to what ``consumer`` holds; raise on failure."""

    def warm(self, consumer: str) -> None:
        """Let the client learn ``consumer`` the way it would in service (may do nothing)."""


#: The cache_ttl the "trusting" reportclient variant runs with, and its row name.
TTL = 60.0
RC_TTL_NAME = f"reportclient (ttl {TTL:g})"


class ReportclientDriver:
    """reportclient's PlacementClient over a counting keystoneauth1 Session, version pinned.

    ``cache_ttl=0`` (the library's default, row ``reportclient``) reads before every update,
    release and claim of a consumer it has seen; ``cache_ttl=TTL`` (row
    ``reportclient (ttl 60)``) writes from a state cached within that many seconds.
    """

    def __init__(
        self,
        url: str,
        token: str,
        retry: tenacity.Retrying | None = None,
        *,
        cache_ttl: float = 0.0,
        pool_size: int | None = None,
    ) -> None:
        """One client with its own keystoneauth1 Session (and connection pool).

        :param pool_size: connections kept, through ``PlacementClient.from_session``'s own
            keyword; None leaves keystoneauth's default pool.
        """
        self.name = "reportclient" if cache_ttl == 0 else f"reportclient (ttl {cache_ttl:g})"
        self._made = (url, token, retry, cache_ttl)
        self.wire: CountingSession = counting_session(url, token)
        self.client = PlacementClient.from_session(
            self.wire,
            pool_size=pool_size,
            endpoint_override=url,
            microversion=MICROVERSION,
            retry=retry,
            cache_ttl=cache_ttl,
        )

    def pooled(self, size: int) -> ReportclientDriver:
        """The same client built anew with a pool of ``size`` (this one is left unused)."""
        url, token, retry, cache_ttl = self._made
        return ReportclientDriver(url, token, retry, cache_ttl=cache_ttl, pool_size=size)

    def claim(self, consumer: str, rp: str) -> None:
        """``PlacementClient.claim``."""
        self.client.claim(consumer, {rp: {"VCPU": 1}}, project_id=PROJECT, user_id=USER)

    def update(self, consumer: str, rp: str) -> None:
        """``PlacementClient.update_allocations`` with ``add_allocations``."""
        self.client.update_allocations(
            consumer, add_allocations({rp: {"VCPU": 1}}), project_id=PROJECT, user_id=USER
        )

    def warm(self, consumer: str) -> None:
        """Read the consumer once so its generation is cached."""
        self.client.get_allocations(consumer)


class BareError(RuntimeError):
    """A bare floor's request was refused (the floors never retry)."""


class _BareWire:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.before_put: Callable[[], None] | None = None
        self.hook_seconds = 0.0
        self._lock = threading.Lock()

    def count(self, method: str) -> None:
        # Shared by many threads in the production-shape runs: a locked increment.
        with self._lock:
            self.counts[method] += 1


class BareDriver:
    """The floors: a plain ``requests.Session``, no library, no retry, no cache.

    ``get_first=False``: one ``PUT`` with ``consumer_generation: null`` per claim.
    ``get_first=True``: ``GET`` the consumer, then ``PUT`` with the generation it showed,
    which is what any client without a generation cache must do.
    """

    def __init__(self, url: str, token: str, *, get_first: bool) -> None:
        """A session with the token and the pinned microversion as default headers."""
        self.name = "bare GET+PUT" if get_first else "bare PUT"
        self.get_first = get_first
        self.url = url
        self.session = requests.Session()
        self.session.headers.update(
            {
                "X-Auth-Token": token,
                "OpenStack-API-Version": f"placement {MICROVERSION}",
                "Accept": "application/json",
            }
        )
        self.wire = _BareWire()

    def _get(self, consumer: str) -> dict[str, Any]:
        self.wire.count("GET")
        resp = self.session.get(f"{self.url}/allocations/{consumer}")
        if resp.status_code != 200:
            raise BareError(f"GET {resp.status_code}: {resp.text[:200]}")
        body: dict[str, Any] = resp.json()
        return body

    def _put(self, consumer: str, body: dict[str, Any]) -> None:
        self.wire.count("PUT")
        if self.wire.before_put is not None:
            hook, self.wire.before_put = self.wire.before_put, None
            began = time.perf_counter()
            hook()
            self.wire.hook_seconds += time.perf_counter() - began
        resp = self.session.put(f"{self.url}/allocations/{consumer}", json=body)
        if resp.status_code != 204:
            raise BareError(f"PUT {resp.status_code}: {resp.text[:200]}")

    def claim(self, consumer: str, rp: str) -> None:
        """PUT (or GET then PUT) the claim."""
        generation = self._get(consumer).get("consumer_generation") if self.get_first else None
        self._put(
            consumer,
            {
                "allocations": {rp: {"resources": {"VCPU": 1}}},
                "consumer_generation": generation,
                "project_id": PROJECT,
                "user_id": USER,
                "consumer_type": CONSUMER_TYPE,
            },
        )

    def update(self, consumer: str, rp: str) -> None:
        """GET, add one VCPU, PUT with the generation read."""
        current = self._get(consumer)
        allocations = {
            provider: {"resources": dict(entry["resources"])}
            for provider, entry in current.get("allocations", {}).items()
        }
        resources = allocations.setdefault(rp, {"resources": {}})["resources"]
        resources["VCPU"] = resources.get("VCPU", 0) + 1
        self._put(
            consumer,
            {
                "allocations": allocations,
                "consumer_generation": current.get("consumer_generation"),
                "project_id": current.get("project_id", PROJECT),
                "user_id": current.get("user_id", USER),
                "consumer_type": current.get("consumer_type", CONSUMER_TYPE),
            },
        )

    def warm(self, consumer: str) -> None:
        """Nothing to learn: the floor reads on every call."""


class KeystoneauthDriver(BareDriver):
    """The floor through the transport reportclient itself uses: a keystoneauth1 Adapter PUT.

    Same bodies as :class:`BareDriver` with ``get_first=False``; the gap between this and
    reportclient is the library's own cost, the gap to ``bare PUT`` is keystoneauth1's.
    """

    def __init__(self, url: str, token: str) -> None:
        """A plain (uncounted) keystoneauth1 Adapter; requests are counted here."""
        super().__init__(url, token, get_first=False)
        self.name = "ks Adapter PUT"
        self.adapter = make_adapter(url, token, adapter_class=ks_adapter.Adapter)

    def _put(self, consumer: str, body: dict[str, Any]) -> None:
        self.wire.count("PUT")
        resp = self.adapter.put(
            f"/allocations/{consumer}",
            json=body,
            microversion=MICROVERSION,
            raise_exc=False,
            connect_retries=0,
            status_code_retries=0,
        )
        if resp.status_code != 204:
            raise BareError(f"PUT {resp.status_code}: {resp.text[:200]}")


# -- nova ----------------------------------------------------------------------------------


class NovaUnavailable(RuntimeError):
    """nova cannot be imported or driven here; the message says why."""


class NovaClaimFailed(RuntimeError):
    """``claim_resources`` returned something other than True (it does not always raise)."""


def load_nova() -> tuple[Any, str]:
    """Import nova's report client module; return it and nova's version.

    :raises NovaUnavailable: with the reason, when nova is missing or broken.
    """
    from bench.support.common import package_version

    version = package_version("nova")
    if version is None:
        raise NovaUnavailable(
            "nova is not installed in this environment (use `tox -e bench-nova`, or a "
            "separate virtualenv: pip install -e .[placement,test] nova)"
        )
    try:
        with warnings.catch_warnings():
            # nova imports eventlet, which warns that it is deprecated on every import.
            warnings.simplefilter("ignore")
            from nova.scheduler.client import report
    except Exception as exc:  # any import failure means "cannot compare", not a crash
        raise NovaUnavailable(f"nova {version} failed to import: {exc!r}") from exc
    return report, version


def optional_nova(wanted: bool) -> Any:
    """nova's report client module when ``wanted`` and importable, else None.

    Says on stderr which: nova's version, or why it did not load (a run without
    nova still measures reportclient).
    """
    if not wanted:
        return None
    try:
        report, version = load_nova()
    except NovaUnavailable as exc:
        print(f"nova: {exc}", file=sys.stderr)
        return None
    print(f"nova {version}", file=sys.stderr)
    return report


def nova_for(meta: dict[str, Any], skipped: str, level: str) -> Any:
    """nova's report client module for an entry that compares with it, or None.

    Either way ``meta["nova_note"]`` says what the table compares with: nova's version
    and how its client is built, or ``skipped`` and why (also printed to stderr as
    ``level: ...``); ``meta["nova"]`` is nova's version when it loaded.
    """
    try:
        report, meta["nova"] = load_nova()
    except NovaUnavailable as exc:
        meta["nova_note"] = f"{skipped}: {exc}"
        print(f"{level}: {meta['nova_note']}", file=sys.stderr, flush=True)
        return None
    meta["nova_note"] = (
        f"nova {meta['nova']} SchedulerReportClient(adapter=<keystoneauth1 Adapter, "
        "endpoint_override=Placement URL, noauth2 token>); no nova config"
    )
    return report


class NovaDriver:
    """nova's ``SchedulerReportClient`` given our counting Adapter, exactly as nova calls it.

    ``SchedulerReportClient(adapter=...)`` is nova's own seam: with an adapter it reads no
    ``[placement]`` config and contacts no Keystone. ``claim_resources`` is called with the
    microversion nova's scheduler uses for allocation candidates (``SAME_SUBTREE_VERSION``,
    1.36) and ``consumer_generation=None``, as ``nova.scheduler.utils.claim_resources`` does.
    ``update`` is ``add_resources_to_instance_allocation`` (GET then PUT, nova's retries).
    """

    name = "nova"

    def __init__(self, report: Any, url: str, token: str) -> None:
        """One SchedulerReportClient with its own keystoneauth1 Session."""
        # raise_exc=False as nova's own get_sdk_adapter/get_ksa_adapter build it: nova reads
        # 409 bodies itself and retries or raises AllocationUpdateFailed.
        self.wire: CountingAdapter = make_adapter(url, token, raise_exc=False)
        self.client = report.SchedulerReportClient(adapter=self.wire)
        self.version = report.SAME_SUBTREE_VERSION
        # claim_resources and add_resources_... only read context.global_id.
        self.context = SimpleNamespace(global_id=None)

    def claim(self, consumer: str, rp: str) -> None:
        """``SchedulerReportClient.claim_resources``."""
        ok = self.client.claim_resources(
            self.context,
            consumer,
            {"allocations": {rp: {"resources": {"VCPU": 1}}}},
            PROJECT,
            USER,
            allocation_request_version=self.version,
            consumer_generation=None,
        )
        if ok is not True:
            raise NovaClaimFailed(f"claim_resources returned {ok!r}")

    def update(self, consumer: str, rp: str) -> None:
        """``SchedulerReportClient.add_resources_to_instance_allocation``."""
        self.client.add_resources_to_instance_allocation(
            self.context, consumer, {rp: {"resources": {"VCPU": 1}}}
        )

    def warm(self, consumer: str) -> None:
        """Nothing to learn: nova reads on every call."""


def pooled(driver: Driver, size: int) -> Driver:
    """``driver`` with room for ``size`` threads sharing it, whichever client it is.

    reportclient gets its pool the way its users do (``from_session(pool_size=...)``); the
    floors and nova get the same keep-alive pool mounted on their session.
    """
    if isinstance(driver, ReportclientDriver):
        return driver.pooled(size)
    session = getattr(driver, "session", None)  # the floors' requests.Session
    if session is None:
        session = driver.wire.session.session  # type: ignore[attr-defined]  # nova's Adapter
    keepalive_pool(session, size)
    return driver
