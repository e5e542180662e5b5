"""The values every request is sent with, checked before any is sent.

Timeouts, global request ids and the connection pool: what the transport
and the clients' per-call keywords take, refused with :class:`InvalidInput`
while the caller can still fix them.
"""

from __future__ import annotations

import math
from numbers import Real

import requests
from keystoneauth1 import session as ks_session

from reportclient._wire.ambient import GLOBAL_REQUEST_ID
from reportclient.errors import InvalidInput

__all__ = [
    "DEFAULT_POOL_SIZE",
    "DEFAULT_TIMEOUT",
    "size_pool",
    "validate_request_id",
    "validate_timeout",
]

#: (connect, read) seconds. A stalled server must not hold a scheduler
#: thread forever; the read timeout is generous because a write that times
#: out reading leaves its outcome unknown and costs a read to settle.
DEFAULT_TIMEOUT: tuple[float, float] = (5.0, 30.0)

#: Connections kept per host. requests' default (10) makes a burst of 64
#: threads sharing one client open 54 throwaway connections ("pool is full").
DEFAULT_POOL_SIZE = 64


def size_pool(session: requests.Session, size: int) -> None:
    """Mount keystoneauth's keep-alive adapter with a pool of ``size`` on ``session``.

    :raises InvalidInput: unless ``size`` is an int of at least 1.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidInput(f"pool_size must be an int >= 1, got {size!r}")
    for scheme in ("http://", "https://"):
        session.mount(scheme, ks_session.TCPKeepAliveAdapter(pool_maxsize=size))


def _positive(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def validate_timeout(value: object) -> tuple[float, float]:
    """Return ``value`` as a (connect, read) pair of seconds.

    :param value: a positive number (for both) or a pair of them.
    :raises InvalidInput: for anything else; no timeout is not an option.
    """
    pair = value if isinstance(value, tuple | list) else (value, value)
    if len(pair) == 2:
        connect, read = _positive(pair[0]), _positive(pair[1])
        if connect is not None and read is not None:
            return connect, read
    raise InvalidInput(
        f"timeout must be a positive number of seconds or a (connect, read) pair, got {value!r}"
    )


def validate_request_id(value: str | None) -> str | None:
    """Return ``value`` if it is None or a ``req-<uuid4>`` global request id.

    :raises InvalidInput: otherwise; Placement would silently ignore it.
    """
    if value is not None and (not isinstance(value, str) or not GLOBAL_REQUEST_ID.fullmatch(value)):
        raise InvalidInput(f"global_request_id must look like req-<uuid4>, got {value!r}")
    return value
