"""What each nova call does on each failure: nova's own answer, from one table.

Every failure starts as one of reportclient's typed errors
(:mod:`reportclient.errors`). nova's callers catch nova's exceptions, test
for ``None`` or ``False``, or let keystoneauth's exceptions through, and
which of those a call gives depends on the call and on what failed (nova
34's ``SchedulerReportClient``: its ``safe_connect`` turns five keystoneauth
failures into ``None``, its ``retries`` turns an exhausted in-server race
into ``False``, each method has its own exception for an HTTP error). So
each failure is first put in one :class:`Situation` (the HTTP situations
nova's code tells apart), and :data:`TABLE` says, per adapter method, what
nova's method does in that situation; :func:`answer` does it.

Inside nova (``nova.exception`` importable) the answer is nova's exception,
with reportclient's error as its ``__cause__``, or keystoneauth's own
exception type for the failures nova lets through. Without nova, the typed
error itself is raised where nova would raise (a tool or test using the
adapter on its own); returned values are the same either way. No
reportclient type reaches nova. The table is printed in
doc/source/nova_adapter.rst (:func:`table_rst`, checked by a unit test).
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NoReturn

from reportclient import errors
from reportclient._adapters.keystoneauth import chain_names, keystoneauth_error

__all__ = [
    "TABLE",
    "Outcome",
    "Situation",
    "answer",
    "fail",
    "nova_exceptions",
    "row_for",
    "situation",
    "table_rst",
]


def nova_exceptions() -> ModuleType | None:
    """``nova.exception`` if nova is installed, else None."""
    try:
        return importlib.import_module("nova.exception")
    except ImportError:
        return None


def fail(name: str, cause: errors.PlacementError, /, *args: Any, **kwargs: Any) -> NoReturn:
    """Raise nova's ``exception.<name>(*args, **kwargs)`` from ``cause``, or ``cause`` without nova.

    :raises PlacementError: ``cause``, when nova is not importable.
    """
    module = nova_exceptions()
    kind = getattr(module, name, None) if module is not None else None
    if kind is None:
        raise cause
    raise kind(*args, **kwargs) from cause


class Situation(enum.Enum):
    """A failure as nova's report client code tells failures apart."""

    #: keystoneauth's ConnectFailure: Placement unreachable (refused, reset).
    UNREACHABLE = "unreachable"
    #: keystoneauth's ConnectTimeout (every timeout) or another transport failure.
    TIMEOUT = "timeout"
    #: keystoneauth's auth and endpoint failures (Unauthorized, MissingAuthPlugin,
    #: EndpointNotFound, DiscoveryFailure): nothing was sent.
    AUTH = "auth"
    #: Placement answered 5xx.
    SERVER = "5xx"
    #: Placement answered 404.
    NOT_FOUND = "404"
    #: Placement answered 400 or another 4xx, or the library refused the input
    #: before sending it (nova sends it, and Placement answers 400).
    REFUSED = "400"
    #: a 409 ``placement.concurrent_update`` naming the consumer generation, or
    #: a consumer another writer changed under the call.
    CONSUMER_CONFLICT = "409 consumer"
    #: a 409 ``placement.concurrent_update`` of any other wording (a provider
    #: generation, Placement's own race), once the call's retries are spent.
    CONFLICT = "409 race"
    #: a 409 of another code: over capacity, inventory in use, a name taken,
    #: a provider in use.
    REFUSED_409 = "409 other"


def _transport(exc: errors.PlacementError) -> Situation:
    """A failure with no answer: keystoneauth's ConnectTimeout (any timeout) or ConnectFailure."""
    names = chain_names(exc)
    timed_out = {"ConnectTimeout", "ReadTimeout", "Timeout", "SSLError"} & set(names)
    if timed_out or "read timeout" in exc.message:
        return Situation.TIMEOUT
    return Situation.UNREACHABLE


def situation(exc: errors.PlacementError) -> Situation:
    """The situation nova's code would have met where the library raised ``exc``."""
    if isinstance(exc, (errors.PlacementAuthError, errors.PlacementEndpointError)):
        return Situation.AUTH
    if isinstance(exc, errors.PlacementOverloaded):
        last = exc.last if isinstance(getattr(exc, "last", None), errors.PlacementError) else None
        return situation(last) if last is not None else Situation.CONFLICT
    if isinstance(exc, errors.OutcomeUnknown):
        # A write's answer lost and not settled: a 5xx, else a timeout or a reset.
        return Situation.SERVER if exc.status is not None else _transport(exc)
    if isinstance(exc, (errors.ConsumerChanged, errors.ConsumerGone, errors.AllocationsNotHeld)):
        # The consumer is not as the call presumes (another writer changed
        # it, it holds nothing, or less than asked): nova's consumer failure.
        return Situation.CONSUMER_CONFLICT
    if isinstance(exc, errors.GenerationConflict) and not isinstance(exc, errors.ProviderChanged):
        if exc.consumer_conflict or "consumer generation conflict" in (exc.detail or ""):
            return Situation.CONSUMER_CONFLICT
        return Situation.CONFLICT
    if isinstance(exc, errors.ProviderChanged):
        return Situation.CONFLICT
    if isinstance(
        exc,
        (
            errors.CapacityExceeded,
            errors.InventoryInUse,
            errors.DuplicateName,
            errors.ProviderInUse,
        ),
    ):
        return Situation.REFUSED_409
    if isinstance(exc, errors.ProviderNotFound) or exc.status == 404:
        return Situation.NOT_FOUND
    if isinstance(exc, errors.PlacementUnavailable):
        if exc.status is not None:
            return Situation.SERVER
        return _transport(exc)
    if exc.status == 409:
        return Situation.REFUSED_409
    if exc.status is not None and exc.status >= 500:
        return Situation.SERVER
    return Situation.REFUSED  # 400, another 4xx, or InvalidInput before the wire


@dataclass(frozen=True, slots=True)
class Outcome:
    """What nova's method does in a situation: raise one of its exceptions, or return.

    :param nova: the ``nova.exception`` class name to raise (None: return ``returns``).
    :param keystoneauth: raise keystoneauth's own exception, as nova lets it through.
    """

    nova: str | None = None
    returns: Any = None
    keystoneauth: bool = False

    def __str__(self) -> str:
        if self.keystoneauth:
            return "keystoneauth's exception"
        if self.nova is not None:
            return self.nova
        return repr(self.returns)


KS = Outcome(keystoneauth=True)
NONE = Outcome()
FALSE = Outcome(returns=False)
TRUE = Outcome(returns=True)


def raises(name: str) -> Outcome:
    return Outcome(nova=name)


def _rows(
    default: Outcome,
    /,
    **special: Outcome,
) -> dict[Situation, Outcome]:
    """A method's row: ``default`` for every HTTP answer, keystoneauth's for the transport,
    and what differs (keyword: a :class:`Situation` member's name, lower case)."""
    row = {s: default for s in Situation}
    row.update({Situation.UNREACHABLE: KS, Situation.TIMEOUT: KS, Situation.AUTH: KS})
    for name, outcome in special.items():
        row[Situation[name.upper()]] = outcome
    return row


def _safe(default: Outcome, /, **special: Outcome) -> dict[Situation, Outcome]:
    """A row of a method under nova's ``safe_connect``: None when unreachable or for auth."""
    return _rows(default, unreachable=NONE, auth=NONE, **special)


def _unless_timeout(default: Outcome, /, **special: Outcome) -> dict[Situation, Outcome]:
    """A row whose ``default`` answers an unreachable Placement and an auth failure too."""
    return _rows(default, unreachable=default, auth=default, **special)


#: A provider field write: every conflict is nova's ``ResourceProviderUpdateConflict``.
_UPDATE_CONFLICTS = {
    name: raises("ResourceProviderUpdateConflict")
    for name in ("conflict", "consumer_conflict", "refused_409")
}
#: Where nova's method answers an unreachable Placement or an auth failure as its own.
_CONNECT_REFUSED = {name: raises("PlacementAPIConnectFailure") for name in ("unreachable", "auth")}
#: Where nova's method lets keystoneauth's connect failures out as its own.
_CONNECT_FAILURE = {
    name: raises("PlacementAPIConnectFailure") for name in ("unreachable", "timeout", "auth")
}


#: What nova 34's method does in each situation, per adapter method, and per step
#: where nova's own steps answer differently ("<method> read" for its GETs,
#: "<method> write" for its writes, or a step named at the call). Read off
#: nova/scheduler/client/report.py; printed in doc/source/nova_adapter.rst.
TABLE: dict[str, dict[Situation, Outcome]] = {
    "get_allocation_candidates": _safe(Outcome(returns=(None, None, None))),
    "get_provider_traits": _rows(raises("ResourceProviderTraitRetrievalFailed")),
    "get_resource_provider_name": _rows(
        raises("ResourceProviderRetrievalFailed"),
        not_found=raises("ResourceProviderNotFound"),
        unreachable=raises("ResourceProviderNotFound"),
        auth=raises("ResourceProviderNotFound"),
    ),
    "get_providers_in_tree": _rows(raises("ResourceProviderRetrievalFailed")),
    "get_provider_tree_and_ensure_root read": _rows(raises("ResourceProviderRetrievalFailed")),
    "get_provider_tree_and_ensure_root write": _unless_timeout(
        raises("ResourceProviderCreationFailed")
    ),
    "set_inventory_for_provider": _rows(
        raises("ResourceProviderUpdateFailed"),
        **_UPDATE_CONFLICTS,
    ),
    "set_traits_for_provider": _safe(
        raises("ResourceProviderUpdateFailed"),
        **_UPDATE_CONFLICTS,
    ),
    "set_aggregates_for_provider": _safe(
        raises("ResourceProviderUpdateFailed"),
        **_UPDATE_CONFLICTS,
    ),
    "update_from_provider_tree create": _unless_timeout(raises("ResourceProviderCreationFailed")),
    "update_from_provider_tree reshape": _unless_timeout(
        raises("ReshapeFailed"),
        timeout=raises("ReshapeFailed"),
        **dict.fromkeys(("conflict", "consumer_conflict"), raises("PlacementReshapeConflict")),
    ),
    "update_from_provider_tree write": _rows(
        raises("ResourceProviderSyncFailed"),
        conflict=raises("ResourceProviderUpdateConflict"),
        consumer_conflict=raises("ResourceProviderUpdateConflict"),
    ),
    "get_allocs_for_consumer": _rows(raises("ConsumerAllocationRetrievalFailed")),
    "get_allocations_for_consumer": _rows(
        Outcome(returns={}), unreachable=NONE, timeout=NONE, auth=NONE
    ),
    "claim_resources": _safe(FALSE, consumer_conflict=raises("AllocationUpdateFailed")),
    "add_resources_to_instance_allocation read": _rows(raises("ConsumerAllocationRetrievalFailed")),
    "add_resources_to_instance_allocation write": _rows(raises("AllocationUpdateFailed")),
    "remove_resources_from_instance_allocation read": _rows(
        raises("ConsumerAllocationRetrievalFailed")
    ),
    "remove_resources_from_instance_allocation write": _rows(
        NONE,
        consumer_conflict=raises("AllocationUpdateFailed"),
        conflict=raises("AllocationUpdateFailed"),
    ),
    "remove_provider_tree_from_instance_allocation read": _rows(
        raises("ConsumerAllocationRetrievalFailed")
    ),
    "remove_provider_tree_from_instance_allocation tree": _rows(
        raises("ResourceProviderRetrievalFailed")
    ),
    "remove_provider_tree_from_instance_allocation write": _rows(FALSE),
    "move_allocations read": _safe(raises("ConsumerAllocationRetrievalFailed")),
    "move_allocations write": _safe(FALSE, consumer_conflict=raises("AllocationMoveFailed")),
    "put_allocations": _rows(
        FALSE,
        **_CONNECT_FAILURE,
        consumer_conflict=raises("AllocationUpdateFailed"),
    ),
    "delete_allocation_for_instance": _safe(raises("AllocationDeleteFailed")),
    "get_allocations_for_resource_provider": _rows(
        raises("ResourceProviderAllocationRetrievalFailed")
    ),
    "delete_resource_provider read": _rows(raises("ResourceProviderRetrievalFailed")),
    # nova swallows ResourceProviderInUse and ResourceProviderDeletionFailed here.
    "delete_resource_provider write": _rows(NONE),
    "get_provider_by_name": _rows(
        raises("ResourceProviderNotFound"),
        **_CONNECT_FAILURE,
    ),
    "aggregate_add_host read": _rows(
        raises("ResourceProviderAggregateRetrievalFailed"),
        **_CONNECT_REFUSED,
    ),
    "aggregate_add_host write": _safe(
        raises("ResourceProviderUpdateFailed"),
        **_UPDATE_CONFLICTS,
    ),
    "aggregate_remove_host read": _rows(
        raises("ResourceProviderAggregateRetrievalFailed"),
        **_CONNECT_REFUSED,
    ),
    "aggregate_remove_host write": _safe(
        raises("ResourceProviderUpdateFailed"),
        **_UPDATE_CONFLICTS,
    ),
    "get_usages_counts_for_limits": _rows(raises("UsagesRetrievalFailed")),
    "get_usages_counts_for_quota": _rows(raises("UsagesRetrievalFailed")),
}


_Kwargs = Callable[[Mapping[str, Any], errors.PlacementError], dict[str, Any]]


def _and_error(**keys: str) -> _Kwargs:
    """nova's keywords: each named one from the call's context key given, and ``error``."""
    return lambda c, e: {**{kw: c.get(key) for kw, key in keys.items()}, "error": str(e)}


#: The keywords each nova exception takes, from the call's context and the error.
_KWARGS: dict[str, _Kwargs] = {
    "AllocationUpdateFailed": _and_error(consumer_uuid="consumer_uuid"),
    "AllocationDeleteFailed": _and_error(consumer_uuid="consumer_uuid"),
    "AllocationMoveFailed": _and_error(
        source_consumer="source_consumer", target_consumer="target_consumer"
    ),
    "ConsumerAllocationRetrievalFailed": _and_error(consumer_uuid="consumer_uuid"),
    "ResourceProviderAllocationRetrievalFailed": _and_error(rp_uuid="rp_uuid"),
    "ResourceProviderAggregateRetrievalFailed": lambda c, e: {"uuid": c.get("rp_uuid")},
    "ReshapeFailed": lambda c, e: {"error": str(e)},
    "PlacementReshapeConflict": lambda c, e: {"error": str(e)},
    "ResourceProviderRetrievalFailed": lambda c, e: {"uuid": c.get("rp_uuid")},
    "ResourceProviderTraitRetrievalFailed": lambda c, e: {"uuid": c.get("rp_uuid")},
    "ResourceProviderNotFound": lambda c, e: {
        "name_or_uuid": c.get("name_or_uuid", c.get("rp_uuid"))
    },
    "ResourceProviderUpdateConflict": lambda c, e: {
        "uuid": c.get("rp_uuid"),
        "generation": c.get("generation", -1) if c.get("generation") is not None else -1,
        "error": str(e),
    },
    "ResourceProviderUpdateFailed": lambda c, e: {"url": c.get("url", e.url), "error": str(e)},
    "ResourceProviderDeletionFailed": lambda c, e: {"uuid": c.get("rp_uuid")},
    "ResourceProviderCreationFailed": lambda c, e: {"name": c.get("name")},
    "UsagesRetrievalFailed": lambda c, e: {
        "project_id": c.get("project_id"),
        "user_id": c.get("user_id") or "N/A",
    },
}


def _no_kwargs(context: Mapping[str, Any], exc: errors.PlacementError) -> dict[str, Any]:
    return {}


def row_for(method: str, exc: errors.PlacementError) -> dict[Situation, Outcome]:
    """``method``'s row, by the step ``exc`` failed at when nova's steps answer differently.

    ``method`` may name its step already ("move_allocations read"); else a
    GET's failure takes the method's "read" row and any other's its "write"
    row, where the table has them (refused before the wire: "write").
    """
    if method in TABLE:
        return TABLE[method]
    step = "read" if exc.method in ("GET", "HEAD") else "write"
    return TABLE[f"{method} {step}"]


def answer(method: str, exc: errors.PlacementError, /, **context: Any) -> Any:
    """Do what nova's ``method`` does where the library raised ``exc``: raise, or return a value.

    :param context: what nova's exception names (``consumer_uuid``,
        ``rp_uuid``, ``source_consumer``...).
    :raises PlacementError: ``exc`` itself where nova raises and nova is not installed.
    """
    outcome = row_for(method, exc)[situation(exc)]
    if outcome.keystoneauth:
        if nova_exceptions() is None:
            raise exc
        raise keystoneauth_error(exc) from exc
    if outcome.nova is not None:
        build = _KWARGS.get(outcome.nova, _no_kwargs)
        fail(outcome.nova, exc, **build(context, exc))
    return outcome.returns


def table_rst() -> list[str]:
    """:data:`TABLE` as the list-table in doc/source/nova_adapter.rst."""
    columns = list(Situation)
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - method",
        *[f"     - {s.value}" for s in columns],
    ]
    for method, row in TABLE.items():
        lines.append(f"   * - ``{method}``")
        lines.extend(f"     - {_short(row[s])}" for s in columns)
    return lines


def _short(outcome: Outcome) -> str:
    if outcome.keystoneauth:
        return "ks"
    if outcome.nova is not None:
        return f"``{outcome.nova}``"
    return f"``{outcome.returns!r}``"
