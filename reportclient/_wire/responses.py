"""Turning an error response into the one typed exception that says what happened.

The one place a response becomes an exception, keyed on Placement's
``errors[0].code`` (keystoneauth1's own ``from_response`` drops it). The
only substring matches the library cannot avoid live here too: Placement
gives an over-capacity refusal, a missing provider and an inventory in use
no code of their own.
"""

from __future__ import annotations

import json
from typing import Any

from reportclient.errors import (
    CONCURRENT_UPDATE,
    DUPLICATE_NAME,
    INVENTORY_INUSE,
    PROVIDER_CANNOT_DELETE_PARENT,
    PROVIDER_IN_USE,
    PROVIDER_NOT_FOUND,
    CannotDeleteParent,
    CapacityExceeded,
    DuplicateName,
    GenerationConflict,
    InventoryInUse,
    MicroversionUnsupported,
    PlacementAuthError,
    PlacementError,
    PlacementUnavailable,
    ProviderInUse,
    ProviderNotFound,
)

__all__ = ["error_from_response"]

# Placement gives the over-capacity 409 no code of its own, so its wording
# is the only thing that tells it apart from other undefined-code conflicts.
_CAPACITY_MARKERS = ("exceed the capacity", "Unable to allocate inventory")
# A 404 carries no code of its own; its wording names the missing provider.
_NO_PROVIDER = "No resource provider with uuid"

_BY_CODE: dict[str, type[PlacementError]] = {
    INVENTORY_INUSE: InventoryInUse,
    DUPLICATE_NAME: DuplicateName,
    PROVIDER_IN_USE: ProviderInUse,
    PROVIDER_CANNOT_DELETE_PARENT: CannotDeleteParent,
    PROVIDER_NOT_FOUND: ProviderNotFound,
}


def _first_error(body: Any) -> dict[str, Any]:
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            return errors[0]
        if isinstance(body.get("title"), str):
            # noauth2's 401 is webob's plain format: title, message, "401 ..." code.
            message = body.get("message")
            return {"title": body["title"], "detail": message if isinstance(message, str) else ""}
    return {}


def _clean_detail(detail: str) -> str:
    # webob puts its stock sentence for the status ("There was a conflict
    # when trying to complete your request.") before Placement's own words.
    head, sep, tail = detail.partition("\n\n")
    if sep and tail.strip() and head.rstrip().endswith(".") and "\n" not in head.strip():
        detail = tail
    return " ".join(detail.replace("<br />", " ").split())


def error_from_response(
    *,
    status: int,
    text: str,
    request_id: str | None,
    method: str,
    url: str,
    consumer_uuid: str | None = None,
) -> PlacementError:
    """Build the typed exception for an error response.

    Placement's JSON error body (``errors[0]``) supplies code, title and
    detail; HTML pages and other non-JSON bodies are kept as the detail,
    shortened, so nothing the server said is lost.
    """
    try:
        body = json.loads(text) if text else None
    except ValueError:
        body = None
    first = _first_error(body)
    code = first.get("code") if isinstance(first.get("code"), str) else None
    title = first.get("title") if isinstance(first.get("title"), str) else None
    raw_detail = first.get("detail")
    if isinstance(raw_detail, str):
        detail = _clean_detail(raw_detail)
    else:
        detail = " ".join(text.split())[:500] if text else ""
    request_id = request_id or (first.get("request_id") if first else None)
    kwargs: dict[str, Any] = dict(
        status=status,
        code=code,
        title=title,
        detail=detail,
        request_id=request_id,
        method=method,
        url=url,
        consumer_uuid=consumer_uuid,
    )
    message = detail or title or f"HTTP {status}"
    typed = _BY_CODE.get(code or "")
    if typed is not None:
        return typed(message, **kwargs)
    if status == 409 and code == CONCURRENT_UPDATE:
        if "in use" in detail and detail.startswith("Unable to delete inventory"):
            # DELETE .../inventories/{rc} reports an inventory in use under the
            # concurrent-update code; retrying it could never succeed.
            return InventoryInUse(message, **kwargs)
        return GenerationConflict(message, **kwargs)
    if status == 404 and _NO_PROVIDER in detail:
        return ProviderNotFound(message, **kwargs)
    if status == 409 and any(marker in detail for marker in _CAPACITY_MARKERS):
        return CapacityExceeded(message, **kwargs)
    if status == 401:
        return PlacementAuthError(message, **kwargs)
    if status == 406 and isinstance(body, dict):
        return MicroversionUnsupported(message, **kwargs)
    if status >= 500:
        # Any 5xx to a write may come after the server committed: Placement's
        # own 500 can follow the database commit, and a proxy's 502/503/504/507
        # may hide a write the server applied. Only a read can tell. A read
        # changed nothing, whatever the server did with it.
        return PlacementUnavailable(
            message, outcome_unknown=method not in ("GET", "HEAD"), **kwargs
        )
    return PlacementError(message, **kwargs)
