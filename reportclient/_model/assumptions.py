"""What a deployment may promise about its other writers, to make a proof cheaper.

By default every write Placement 16.0.0 accepts is seen by the tree view and
the agent setting within their windows, whoever sent it and at whatever
microversion (doc/source/providers.rst, "Every write that changes a
provider"). Two of those writes move nothing a listing shows, and the only
sound proof of the fields they change costs a request:

* ``PUT /resource_providers/{uuid}/aggregates`` below microversion 1.19
  (a bare list; osc-placement's ``resource provider aggregate set`` sends it
  unless told ``--os-placement-api-version 1.19``) replaces the aggregates
  without moving the provider's generation or ``updated_at``: each
  provider's aggregates are read once per window.
* ``PUT /resource_classes/{name}`` with a body (1.2-1.6) renames a custom
  class in every inventory without moving any provider: one listing of the
  resource classes per client per window proves the names an inventory
  uses.

A deployment that knows its writers may name an assumption and save that
request, accepting exactly the risk the assumption's docstring states.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from reportclient.errors import InvalidInput

__all__ = ["ProofAssumption", "validate_assumptions"]


class ProofAssumption(str, enum.Enum):
    """A promise about every other writer of this Placement, named in the client's settings."""

    #: Every writer of provider aggregates uses microversion 1.19 or later, so
    #: an aggregate change moves the provider's generation and ``updated_at``,
    #: and a listing proves aggregates as it proves inventories and traits.
    #: The risk: an aggregate set below 1.19 (osc-placement's default, a
    #: script's bare list, neutron's segments plugin) is not seen until this
    #: client next reads that provider's aggregates for another reason (a
    #: write of them, a conflict, ``invalidate``); until then the view
    #: hands nova the old membership and the agent setting does not put its
    #: description back.
    AGGREGATES_AT_1_19 = "aggregates_at_1_19"
    #: No writer renames a custom resource class (``PUT /resource_classes/{name}``
    #: with a body, microversions 1.2-1.6). The risk: after such a rename the
    #: cached inventories keep the old class name until the provider's
    #: generation moves; a write naming the old class meets Placement's 400
    #: (no such class), and the view hands nova a class that no longer exists.
    NO_CLASS_RENAMES = "no_class_renames"


def validate_assumptions(value: object) -> frozenset[ProofAssumption]:
    """The assumptions named by ``value``: an iterable of :class:`ProofAssumption` or their names.

    A comma-separated string is read as oslo.config's ``ListOpt`` gives one.

    :raises InvalidInput: a name that is no assumption, or a value that is no iterable of names.
    """
    if value is None:
        return frozenset()
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, Iterable):
        raise InvalidInput(
            f"proof_assumptions must be names of reportclient.ProofAssumption, got {value!r}"
        )
    out: set[ProofAssumption] = set()
    known = ", ".join(a.value for a in ProofAssumption)
    for item in value:
        try:
            out.add(ProofAssumption(item))
        except ValueError:
            raise InvalidInput(
                f"proof_assumptions: {item!r} is no assumption (known: {known})"
            ) from None
    return frozenset(out)
