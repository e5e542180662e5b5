"""The request id of the oslo.context in force, for calls that name none.

OpenStack services keep the request being served in a thread-local
``oslo_context.context.RequestContext`` (``get_current()``), and oslo
libraries tie their own requests to it. A call given no
``global_request_id`` (and a client built with none) sends the current
context's ``global_id``: its ``global_request_id`` when the request came
with one, else its own ``request_id``, which is what nova sends on every
Placement call (``context.global_id``). Without oslo.context installed, or
with no context in force, nothing is sent. An id not of the
``req-<uuid4>`` form Placement accepts is not sent either: it is the
service's, not the caller's mistake, and Placement would ignore it.
"""

from __future__ import annotations

import re
from types import ModuleType

_oslo_context: ModuleType | None
try:
    from oslo_context import context as _oslo_context
except ImportError:  # the ``oslo`` extra is not installed
    _oslo_context = None

__all__ = ["GLOBAL_REQUEST_ID", "ambient_request_id"]

#: The form Placement (oslo.middleware) accepts for a global request id.
GLOBAL_REQUEST_ID = re.compile(r"req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def ambient_request_id() -> str | None:
    """The current oslo.context's global id, or None (no oslo.context, no context, bad form)."""
    if _oslo_context is None:
        return None
    current = _oslo_context.get_current()
    if current is None:
        return None
    value = current.global_id
    return value if isinstance(value, str) and GLOBAL_REQUEST_ID.fullmatch(value) else None
