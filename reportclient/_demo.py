"""The shelve race, replayed against a Placement and narrated.

A scheduler claims an instance (its client caches generation 1), another
service wipes the instance's allocations while shelve-offloading it (which
deletes the consumer), and the scheduler claims again for the unshelve with
its stale generation. reportclient recovers; the same story with retries
switched off shows the failure a client without recovery hits.

This module is an application of the library, not part of it: it is only
imported by the ``reportclient`` console script.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO
from urllib.parse import urlsplit

import requests
import tenacity
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from reportclient._clients.placement import PlacementClient
from reportclient.errors import GenerationConflict
from reportclient.retry import NO_RETRY

__all__ = ["Backend", "run_demo"]

PROJECT = "demo-project"
USER = "demo-user"
FLAVOR = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
INVENTORY = {
    "VCPU": {"total": 16, "max_unit": 16},
    "MEMORY_MB": {"total": 32768, "max_unit": 32768},
    "DISK_GB": {"total": 500, "max_unit": 500},
}


@dataclass
class Backend:
    """Where the story runs: a Placement root URL, its token, and a mount.

    ``mount`` adds an in-process transport to a ``requests.Session`` (the
    fake Placement); None means real HTTP.
    """

    name: str
    url: str
    token: str
    mount: Callable[[requests.Session], None] | None = None

    def session(self) -> ks_session.Session:
        """A keystoneauth1 Session that reaches this backend."""
        session = ks_session.Session(auth=token_endpoint.Token(self.url, self.token))
        if self.mount is not None:
            self.mount(session.session)
        return session


@contextlib.contextmanager
def open_backend(kind: str, url: str | None, token: str) -> Iterator[Backend]:
    """Start (and afterwards stop) the Placement the demo talks to.

    :raises RuntimeError: when the embedded Placement is not installed.
    """
    if url is not None:
        yield Backend(f"Placement at {url}", url.rstrip("/"), token)
    elif kind == "fake":
        try:
            from reportclient.fixture import FakePlacement
        except ImportError as exc:
            raise RuntimeError(
                f"--placement fake needs the 'fixture' extra ({exc.name} is missing): "
                "pip install 'reportclient[fixture]'"
            ) from exc

        fake = FakePlacement()
        adapter = fake.transport_adapter()
        yield Backend(
            "the fake Placement (reportclient.fixture)",
            fake.url,
            "admin",
            lambda session: session.mount(fake.url, adapter),
        )
    else:
        # The embedded Placement imports its server stack only when it
        # starts; look for it first, so a missing extra is a sentence naming
        # what to install rather than a ModuleNotFoundError from inside it.
        missing = [m for m in ("placement", "oslo_db") if importlib.util.find_spec(m) is None]
        if missing:
            raise RuntimeError(
                f"the embedded Placement needs the 'placement' extra ({', '.join(missing)} "
                "not installed): pip install 'reportclient[placement]' (or run: tox -e demo); "
                "--placement fake needs only 'reportclient[fixture]', and --url uses a "
                "Placement you already run"
            )
        from reportclient.testing import EmbeddedPlacement

        with EmbeddedPlacement() as placement:
            yield Backend(
                f"the real openstack-placement, embedded at {placement.url}",
                placement.url,
                placement.token,
            )


class Narrator:
    """Prints one line per HTTP exchange an actor makes."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.exchanges = 0

    def say(self, text: str = "") -> None:
        print(text, file=self.out)

    def hook(self, actor: str) -> Callable[..., requests.Response]:
        def on_response(resp: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
            self.exchanges += 1
            self.say(f"    {actor:<13}{_describe(resp)}")
            return resp

        return on_response


def _describe(resp: requests.Response) -> str:
    request = resp.request
    path = urlsplit(request.url or "").path or "/"
    line = f"{request.method} {_shorten(path)} -> {resp.status_code}"
    sent = _json(request.body)
    if isinstance(sent, dict) and "consumer_generation" in sent:
        allocations = "{}" if not sent.get("allocations") else "allocations"
        line += f"  sent {allocations} with generation {json.dumps(sent['consumer_generation'])}"
    seen = _json(resp.content)
    if isinstance(seen, dict):
        if seen.get("errors"):
            error = seen["errors"][0]
            detail = " ".join(str(error.get("detail", "")).split())
            detail = detail.replace(
                "There was a conflict when trying to complete your request. ", ""
            )
            line += f"  [{error.get('code')}] {detail}"
        elif request.method == "GET" and "allocations" in seen:
            generation = seen.get("consumer_generation")
            line += f"  saw generation {json.dumps(generation)}"
            if generation is None:
                line += " (consumer does not exist)"
    return line


def _json(raw: Any) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return None


def _shorten(path: str) -> str:
    parts = [p[:8] + "…" if len(p) == 36 else p for p in path.split("/")]
    return "/".join(parts)


# The story's scheduler trusts its cache for a while, as the seed incident's
# did: that is what leaves it holding a stale generation to write with. With
# the default cache_ttl=0 it would read before writing and meet no conflict.
SCHEDULER_CACHE_TTL = 300.0


def _client(
    backend: Backend,
    narrator: Narrator,
    actor: str,
    retry: tenacity.Retrying | None,
    cache_ttl: float = 0.0,
) -> tuple[PlacementClient, ks_adapter.Adapter]:
    session = backend.session()
    session.session.hooks["response"].append(narrator.hook(actor))
    adapter = ks_adapter.Adapter(session, service_type="placement", endpoint_override=backend.url)
    return PlacementClient(adapter, retry=retry, cache_ttl=cache_ttl), adapter


def _create_compute_node(client: PlacementClient) -> str:
    rp = str(uuid.uuid4())
    client.providers.create_provider(f"demo-compute-{rp[:8]}", uuid=rp)
    client.providers.set_inventories(rp, INVENTORY)
    return rp


def _story(
    backend: Backend, narrator: Narrator, retry: tenacity.Retrying | None, compute_node: str
) -> bool:
    """Schedule, shelve-offload, unshelve. True when the unshelve claim held."""
    scheduler, _ = _client(backend, narrator, "scheduler", retry, SCHEDULER_CACHE_TTL)
    compute, _ = _client(backend, narrator, "nova-compute", None)
    instance = str(uuid.uuid4())
    claim = {compute_node: FLAVOR}

    narrator.say(f"  1. schedule instance {instance[:8]}…: the scheduler claims {FLAVOR}")
    state = scheduler.claim(instance, claim, project_id=PROJECT, user_id=USER)
    narrator.say(f"       scheduler now caches generation {state.generation}")
    narrator.say("  2. shelve-offload: nova-compute empties the allocations (deletes the consumer)")
    compute.release(instance)
    narrator.say(
        f"  3. unshelve: the scheduler claims again; trusting its cache (cache_ttl="
        f"{SCHEDULER_CACHE_TTL:g}) it writes the stale generation"
    )
    try:
        state = scheduler.claim(instance, claim, project_id=PROJECT, user_id=USER)
    except GenerationConflict as exc:
        narrator.say(f"       FAILED after {exc.attempts} attempt(s): {exc}")
        return False
    final = compute.get_allocations(instance)
    held = final.allocations == {compute_node: FLAVOR} and final.generation == 1
    narrator.say(
        f"       RECOVERED: Placement holds {dict(final.allocations.get(compute_node, {}))} "
        f"at generation {final.generation}"
    )
    return held


def run_demo(
    kind: str = "embedded",
    url: str | None = None,
    token: str = "admin",  # noqa: S107 - noauth2 user name
    out: TextIO | None = None,
) -> int:
    """Run the story twice (with and without retries); 0 when reportclient recovered."""
    import sys

    narrator = Narrator(out or sys.stdout)
    with open_backend(kind, url, token) as backend:
        narrator.say(f"reportclient demo: the shelve race against {backend.name}")
        setup, _adapter = _client(backend, narrator, "setup", None)
        narrator.say(f"  negotiated microversion {setup.microversion}")
        compute_node = _create_compute_node(setup)
        narrator.say()
        narrator.say("With reportclient (default retry policy):")
        recovered = _story(backend, narrator, None, compute_node)
        narrator.say()
        narrator.say("Without recovery (retries disabled, as a client that does not retry):")
        failed_without = not _story(backend, narrator, NO_RETRY, compute_node)
    narrator.say()
    if recovered and failed_without:
        narrator.say(
            "OK: reportclient recovered from the stale generation; without it the "
            "unshelve claim failed."
        )
        return 0
    narrator.say(
        "UNEXPECTED: "
        + ("recovery failed" if not recovered else "the no-retry client did not hit the conflict")
    )
    return 1
