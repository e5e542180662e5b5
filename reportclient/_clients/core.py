"""What every client by resource shares, and the keywords that build it, declared once.

:class:`ClientSettings` names the keywords every constructor and builder of
a client takes (``PlacementClient(...)``, ``from_session``,
``from_endpoint``, and ``reportclient.config``'s builders): each is typed
and documented here once, and reused with ``**settings:
Unpack[ClientSettings]``. :class:`Core` is what they build: the transport,
the gateway (every route, both caches), the retry policy and the contention
memory, shared by the resource clients a :class:`PlacementClient` is made of.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import tenacity
from keystoneauth1 import adapter as ks_adapter

from reportclient._engine.consumer_write import DEFAULT_CONSUMER_TYPE
from reportclient._engine.contention import ContentionMemory
from reportclient._gateway.gateway import DEFAULT_CACHE_SIZE, DEFAULT_CACHE_TTL, Gateway
from reportclient._model.assumptions import ProofAssumption, validate_assumptions
from reportclient._model.validation import validate_consumer_type, validate_max_staleness
from reportclient._wire.transport import DEFAULT_TIMEOUT, Transport
from reportclient.errors import InvalidInput
from reportclient.retry import RetryBudget, default_retry

__all__ = [
    "SETTINGS",
    "ClientSettings",
    "Core",
    "SessionOptions",
    "Timeout",
    "budget_of",
    "check_settings",
    "policy_of",
]

#: Seconds per request: one number for both, or (connect, read).
Timeout = float | tuple[float, float]


class ClientSettings(TypedDict, total=False):
    """The keywords every client constructor and builder takes; each may be left out.

    :param retry: a ``tenacity.Retrying`` deciding when and how long to
        retry (default :func:`~reportclient.default_retry`); what is
        retried is always the client's decision.
    :param cache_size: consumers whose state is kept (LRU); 0 disables.
        Default 100,000.
    :param cache_ttl: seconds a cached state is trusted for the content and
        generation of a write; 0 (the default) trusts none, so every update
        reads first (doc/source/cache.rst).
    :param clock: monotonic seconds for ``cache_ttl`` and the contention
        windows; tests pass a fake.
    :param microversion: pin a version instead of negotiating one.
    :param global_request_id: ``req-<uuid4>`` sent with every request.
    :param timeout: seconds per request, one number or (connect, read).
    :param default_consumer_type: the type (``^[A-Z0-9_]+$``) of a consumer
        a write creates when the caller names none: ``"INSTANCE"``, as nova
        writes; a consumer that exists keeps its own type.
    :param reconcile_max_staleness: the agent setting for every
        ``providers.reconcile`` that does not pass its own ``max_staleness``:
        None (strict) or 300 for a compute agent (doc/source/providers.rst).
    :param retry_budget: the :class:`~reportclient.RetryBudget` every retry
        of every operation of the client spends from, whatever its policy,
        and a retry that succeeds gives back (default: 20% of first
        attempts plus 1.2 a second, over 10 s, on
        ``clock``); share one between clients to bound them together. None
        spends none: only the policy and the request bound
        (:data:`~reportclient.MAX_REQUESTS`) limit retries
        (doc/source/retry.rst).
    :param proof_assumptions: promises about every other writer of this
        Placement that make the tree view and the agent setting cheaper
        (:class:`~reportclient.ProofAssumption`, or their names); none by
        default, when every write Placement accepts is seen within the
        window (doc/source/providers.rst says what each one risks).
    :param exact_microversion: True sends every request at the client's
        microversion (pinned or negotiated). By default a consumer's read
        or write that sets no type goes at 1.28, which costs Placement less
        (``LEAN_VERSION``); a drop-in whose caller named its version
        (``reportclient.neutron``) sends that one.
    """

    retry: tenacity.Retrying | None
    cache_size: int
    cache_ttl: float
    clock: Callable[[], float]
    microversion: str | None
    global_request_id: str | None
    timeout: Timeout
    default_consumer_type: str
    reconcile_max_staleness: float | None
    retry_budget: RetryBudget | None
    proof_assumptions: Iterable[ProofAssumption | str] | str | None
    exact_microversion: bool


class SessionOptions(ClientSettings, total=False):
    """:class:`ClientSettings`, plus the keystoneauth1 Adapter's own keywords.

    Taken by ``PlacementClient.from_session`` and ``from_endpoint``, which
    build the Adapter: these go to it (``service_type`` defaults to
    ``"placement"``); see keystoneauth1's ``Adapter`` for each.
    """

    service_type: str
    service_name: str
    interface: str | Sequence[str]
    region_name: str
    endpoint_override: str
    version: str
    min_version: str
    max_version: str
    connect_retries: int
    status_code_retries: int
    retriable_status_codes: Sequence[int]
    allow: Mapping[str, Any]
    additional_headers: Mapping[str, str]
    client_name: str
    client_version: str
    allow_version_hack: bool
    user_agent: str
    logger: logging.Logger


#: The keywords of :class:`ClientSettings`, for the builders that split them from others.
SETTINGS = frozenset(ClientSettings.__optional_keys__)


def check_settings(given: Mapping[str, Any], where: str) -> None:
    """Refuse a keyword that is no setting, as Python would for a plain signature.

    :raises TypeError: naming the first unknown keyword.
    """
    unknown = sorted(set(given) - SETTINGS)
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")


def policy_of(retry: object) -> tenacity.Retrying:
    """``retry`` if it is a policy the engine can copy and call.

    :raises InvalidInput: otherwise, before anything is sent.
    """
    if not isinstance(retry, tenacity.Retrying):
        raise InvalidInput(
            f"retry must be a tenacity.Retrying (see reportclient.default_retry), got {retry!r}"
        )
    return retry


def budget_of(settings: ClientSettings, clock: Callable[[], float]) -> RetryBudget | None:
    """The client's retry budget: the one given (None: none), else a default one on ``clock``.

    :raises InvalidInput: for anything but a RetryBudget or None.
    """
    if "retry_budget" not in settings:
        return RetryBudget(clock=clock)
    budget = settings["retry_budget"]
    if budget is not None and not isinstance(budget, RetryBudget):
        raise InvalidInput(
            f"retry_budget must be a reportclient.RetryBudget or None, got {budget!r}"
        )
    return budget


@dataclass(frozen=True, slots=True)
class Core:
    """What the resource clients of one :class:`PlacementClient` share."""

    transport: Transport
    gateway: Gateway
    retry: tenacity.Retrying
    contention: ContentionMemory
    clock: Callable[[], float]
    default_type: str
    max_staleness: float | None
    budget: RetryBudget | None
    assumptions: frozenset[ProofAssumption] = frozenset()

    @classmethod
    def build(cls, adapter: ks_adapter.Adapter, settings: ClientSettings) -> Core:
        """The transport, gateway and policy ``settings`` describe, over ``adapter``.

        :raises InvalidInput: a setting out of range, before any request.
        """
        clock = settings.get("clock", time.monotonic)
        default_type = validate_consumer_type(
            settings.get("default_consumer_type", DEFAULT_CONSUMER_TYPE)
        )
        max_staleness = validate_max_staleness(settings.get("reconcile_max_staleness"))
        assumptions = validate_assumptions(settings.get("proof_assumptions"))
        retry = settings.get("retry")
        policy = policy_of(retry) if retry is not None else default_retry()
        budget = budget_of(settings, clock)
        transport = Transport(
            adapter,
            microversion=settings.get("microversion"),
            global_request_id=settings.get("global_request_id"),
            timeout=settings.get("timeout", DEFAULT_TIMEOUT),
            reads=policy,
            budget=budget,
            exact=settings.get("exact_microversion", False),
        )
        # Every request goes through the gateway, the only writer of both caches.
        try:
            gateway = Gateway.build(
                transport,
                cache_size=settings.get("cache_size", DEFAULT_CACHE_SIZE),
                cache_ttl=settings.get("cache_ttl", DEFAULT_CACHE_TTL),
                clock=clock,
            )
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        return cls(
            transport,
            gateway,
            policy,
            ContentionMemory(clock, budget),
            clock,
            default_type,
            max_staleness,
            budget,
            assumptions,
        )

    def policy(self, retry: tenacity.Retrying | None) -> tenacity.Retrying:
        """One call's policy: the one given, else the client's."""
        return self.retry if retry is None else policy_of(retry)
