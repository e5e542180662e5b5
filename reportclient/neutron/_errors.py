"""What each neutron-lib method raises for each failure: one table, neutron-lib's own types.

Every failure starts as one of reportclient's typed errors. neutron-lib 5.0.1's
``PlacementAPIClient`` talks through a keystoneauth Session that raises an
``HttpError`` subclass for every answer of 400 or more; each method turns
some of those into its own ``neutron_lib.exceptions.placement`` type (a 404
naming a missing provider is ``PlacementResourceProviderNotFound``...), and
its ``_check_placement_api_available`` decorator turns any other 4xx into
``PlacementClientError`` with the answer's text. A 5xx, and any failure with
no answer (keystoneauth's ``ConnectFailure``, ``ConnectTimeout``...), reach
neutron as keystoneauth's own exception; ``update_qos_allocation`` and
``update_allocation`` are not decorated, so neutron's QoS plugin sees
keystoneauth's ``Conflict`` for a provider over capacity, as it expects.

:data:`TABLE` holds, per method, the rules read off neutron-lib's code, in
the order it tries them; :data:`WRAPPED` the decorated methods;
:func:`answer` raises what neutron-lib would. Without neutron-lib installed
(a tool using the adapter alone) the typed error itself is raised where a
neutron-lib type would be. The table is printed in
doc/source/neutron_adapter.rst (:func:`table_rst`, checked by a unit test).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from reportclient._adapters.keystoneauth import error_body, http_error
from reportclient.errors import (
    ConsumerChanged,
    ConsumerGone,
    GenerationConflict,
    InvalidInput,
    PlacementError,
)
from reportclient.neutron._common import neutron_exceptions

__all__ = [
    "CONCURRENT_UPDATE",
    "TABLE",
    "WRAPPED",
    "WRAPPED_READS",
    "Rule",
    "answer",
    "client_error_text",
    "fail",
    "is_generation_conflict",
    "status_of",
    "table_rst",
]


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``except`` of a neutron-lib method: when it matches, what it raises.

    :param raises: the ``neutron_lib.exceptions.placement`` class name.
    :param status: the answer's status (None: any).
    :param detail: words the answer's detail must hold (neutron-lib's ``in e.details``).
    :param method: the HTTP method of the failed request (neutron-lib's step).
    :param kind: the library error type that stands for neutron-lib's own
        verdict (a consumer gone, a consumer changed under the write).
    :param conflict: only a generation conflict (:func:`is_generation_conflict`):
        neutron-lib's ``placement.concurrent_update`` test.
    :param args: the exception's keywords, taken from the call's context.
    """

    raises: str
    status: int | None = None
    detail: str | None = None
    method: str | None = None
    kind: type[PlacementError] | None = None
    conflict: bool = False
    args: tuple[str, ...] = ()

    def matches(self, exc: PlacementError) -> bool:
        if self.kind is not None and not isinstance(exc, self.kind):
            return False
        if self.conflict and not is_generation_conflict(exc):
            return False
        if self.status is not None and status_of(exc) != self.status:
            return False
        if self.detail is not None and self.detail not in (exc.detail or exc.message):
            return False
        # Refused before the wire (no method): the write neutron-lib would have sent.
        return self.method is None or exc.method in (None, self.method)

    def __str__(self) -> str:
        when = [
            str(self.status) if self.status is not None else "",
            f'"{self.detail}"' if self.detail else "",
            self.method or "",
            self.kind.__name__ if self.kind is not None else "",
            "generation conflict" if self.conflict else "",
        ]
        return f"{' '.join(w for w in when if w)} -> ``{self.raises}``"


#: Placement's code for a generation conflict (from microversion 1.23).
CONCURRENT_UPDATE = "placement.concurrent_update"


def is_generation_conflict(exc: PlacementError) -> bool:
    """A 409 neutron-lib reads as a generation conflict, or the library's verdict of one.

    neutron-lib retries, then gives up with its generation-conflict type,
    on a 409 whose ``code`` is ``placement.concurrent_update``. The library
    ends the same retries with :class:`GenerationConflict`, or with
    :class:`PlacementOverloaded` carrying that 409 when its retry budget
    refused one more try: both are conflicts that outlasted the retries.
    Before 1.23 Placement sends no ``code`` (neutron-lib's ``KeyError``):
    the conflict is told by its words.
    """
    if isinstance(exc, GenerationConflict):
        return True
    if exc.status != 409:
        return False
    if exc.code is None:
        return "generation conflict" in (exc.detail or exc.message)
    return exc.code == CONCURRENT_UPDATE


_RP = ("resource_provider",)
_NO_RP = "No resource provider with uuid"
_RP_404 = Rule("PlacementResourceProviderNotFound", 404, args=_RP)
_RP_CONFLICT = Rule(
    "PlacementResourceProviderGenerationConflict",
    409,
    conflict=True,
    args=("resource_provider", "generation"),
)
#: A class's inventory missing, where the provider itself exists.
_NO_INVENTORY = Rule(
    "PlacementInventoryNotFound",
    404,
    "No inventory of class",
    args=("resource_provider", "resource_class"),
)

#: neutron-lib 5.0.1's ``except`` clauses per method, in order (read off
#: ``neutron_lib/placement/client.py``). A method absent here has none of its own.
TABLE: dict[str, tuple[Rule, ...]] = {
    "update_resource_provider": (
        _RP_404,
        Rule("PlacementResourceProviderNameNotUnique", 409, args=("name",)),
    ),
    "ensure_resource_provider": (
        Rule("PlacementResourceProviderNameNotUnique", 409, method="PUT", args=("name",)),
    ),
    "get_resource_provider": (_RP_404,),
    "update_resource_provider_inventories": (_RP_404, _RP_CONFLICT),
    "delete_resource_provider_inventories": (Rule(_RP_404.raises, 404, _NO_RP, args=_RP),),
    "delete_resource_provider_inventory": (
        Rule(_RP_404.raises, 404, _NO_RP, args=_RP),
        _NO_INVENTORY,
    ),
    "get_inventory": (
        Rule(_RP_404.raises, 404, _NO_RP, args=_RP),
        _NO_INVENTORY,
    ),
    "update_resource_provider_inventory": (
        # Without a caller's generation neutron-lib reads the provider first;
        # at the generation the record carries the adapter reads nothing, and
        # the write's 404 naming the provider is the same fact.
        Rule(_RP_404.raises, 404, method="GET", args=_RP),
        Rule(_RP_404.raises, 404, _NO_RP, method="PUT", args=_RP),
        Rule("PlacementResourceNotFound", 404, args=("url",)),
        _RP_CONFLICT,
    ),
    "list_aggregates": (Rule("PlacementAggregateNotFound", 404, args=_RP),),
    "get_trait": (Rule("PlacementTraitNotFound", 404, args=("trait",)),),
    "delete_trait": (Rule("PlacementTraitNotFound", 404, args=("trait",)),),
    "update_resource_provider_traits": (
        _RP_404,
        # The provider's generation is read by a decorated call: its 400 is
        # PlacementClientError before this method's ``except BadRequest``.
        Rule("PlacementTraitNotFound", 400, method="PUT", args=("trait",)),
        _RP_CONFLICT,
    ),
    "list_resource_provider_traits": (_RP_404,),
    "delete_resource_provider_traits": (_RP_404,),
    "get_resource_class": (Rule("PlacementResourceClassNotFound", 404, args=("resource_class",)),),
    "delete_resource_class": (
        Rule("PlacementResourceClassNotFound", 404, args=("resource_class",)),
    ),
    "update_qos_allocation": (
        Rule("PlacementAllocationRemoved", kind=ConsumerGone, args=("consumer",)),
        Rule("PlacementAllocationGenerationConflict", kind=ConsumerChanged, args=("consumer",)),
        Rule("PlacementAllocationGenerationConflict", 409, conflict=True, args=("consumer",)),
    ),
}

#: The methods under neutron-lib's ``_check_placement_api_available``: any
#: other 4xx is ``PlacementClientError`` with the answer's text.
WRAPPED = frozenset(
    {
        "create_resource_provider",
        "update_resource_provider",
        "ensure_resource_provider",
        "delete_resource_provider",
        "get_resource_provider",
        "list_resource_providers",
        "update_resource_provider_inventories",
        "delete_resource_provider_inventories",
        "delete_resource_provider_inventory",
        "get_inventory",
        "update_resource_provider_inventory",
        "associate_aggregates",
        "list_aggregates",
        "list_traits",
        "get_trait",
        "update_trait",
        "delete_trait",
        "update_resource_provider_traits",
        "list_resource_provider_traits",
        "delete_resource_provider_traits",
        "list_resource_classes",
        "get_resource_class",
        "create_resource_class",
        "update_resource_class",
        "delete_resource_class",
        "list_allocations",
    }
)


#: Undecorated methods whose reads are a decorated method's (``update_qos_allocation``
#: reads with ``list_allocations``): a 4xx on a read is ``PlacementClientError``.
WRAPPED_READS = frozenset({"update_qos_allocation"})


def status_of(exc: PlacementError) -> int | None:
    """The answer's status; 400 for input the library refused before the wire.

    neutron-lib sends what it is given and Placement refuses malformed input
    with a 400; the library refuses it first (:class:`InvalidInput`, no
    request made), and the adapter answers as that 400 would be answered.
    """
    if exc.status is None and exc.method is None and isinstance(exc, InvalidInput):
        return 400
    return exc.status


def client_error_text(exc: PlacementError) -> str:
    """The answer's text as ``PlacementClientError`` carries it (newlines as spaces)."""
    return json.dumps(error_body(exc, status_of(exc))).replace("\n", " ")


def fail(name: str, cause: PlacementError, /, **kwargs: Any) -> NoReturn:
    """Raise ``neutron_lib.exceptions.placement.<name>(**kwargs)`` from ``cause``.

    :raises PlacementError: ``cause`` itself when neutron-lib is not importable.
    """
    module = neutron_exceptions()
    kind = getattr(module, name, None) if module is not None else None
    if kind is None:
        raise cause
    raise kind(**kwargs) from cause


def answer(method: str, exc: PlacementError, /, **context: Any) -> NoReturn:
    """Raise what neutron-lib's ``method`` raises where the library raised ``exc``.

    Its own rules first, then the decorator's ``PlacementClientError`` for
    any other 4xx, then keystoneauth's exception for the status (or for the
    failure, when nothing answered).

    :param context: what neutron-lib's exceptions name (``resource_provider``,
        ``resource_class``, ``trait``, ``name``, ``consumer``, ``url``, ``generation``).
    """
    for rule in TABLE.get(method, ()):
        if rule.matches(exc):
            fail(rule.raises, exc, **_kwargs(rule, exc, context))
    # Refused before the wire (no method): the library checks input before its first read.
    wrapped = method in WRAPPED or (method in WRAPPED_READS and exc.method in ("GET", None))
    status = status_of(exc)
    if status is not None and 400 <= status <= 499 and wrapped:
        fail("PlacementClientError", exc, msg=client_error_text(exc))
    raise http_error(exc, status) from exc


def _kwargs(rule: Rule, exc: PlacementError, context: Mapping[str, Any]) -> dict[str, Any]:
    given = dict(context)
    given.setdefault("url", exc.url)
    given.setdefault("msg", client_error_text(exc))
    given.setdefault("generation", None)
    return {name: given.get(name) for name in rule.args}


def table_rst() -> list[str]:
    """:data:`TABLE` and :data:`WRAPPED` as the list-table in doc/source/neutron_adapter.rst."""
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - method",
        "     - what neutron-lib raises (first rule that matches)",
        "     - any other 4xx",
    ]
    for method in sorted(WRAPPED | set(TABLE) | {"update_allocation"}):
        rules = "; ".join(str(r) for r in TABLE.get(method, ())) or "none of its own"
        other = "``PlacementClientError``" if method in WRAPPED else "keystoneauth's"
        lines += [f"   * - ``{method}``", f"     - {rules}", f"     - {other}"]
    return lines
