"""Every input rule of the library, each written once.

Each malformed value is refused here with
:class:`~reportclient.errors.InvalidInput` before a request is built: uuids,
owners, consumer types, resource class and trait names, allocations. The
value model's types and the engine call these; nothing else re-checks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard
from urllib.parse import urlsplit

from reportclient.errors import InvalidInput

__all__ = [
    "MAX_INT",
    "MAX_PROVIDER_NAME",
    "is_uuid",
    "is_valid_name",
    "normalize_allocations",
    "validate_consumer_type",
    "validate_custom_name",
    "validate_method",
    "validate_name_prefix",
    "validate_names",
    "validate_owner",
    "validate_path",
    "validate_provider_name",
    "validate_standard_name",
    "validate_uuid",
    "validate_uuids",
]

# Matched with fullmatch: "$" would also accept a trailing newline.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Placement's pattern for both resource class names and consumer types.
_NAME = re.compile(r"[A-Z0-9_]+")
_MAX_ID_LEN = 255
# consumer_types.name is a 255-character column.
_MAX_TYPE_LEN = 255
# Keys of one provider's entry in Placement's allocations documents.
_ENTRY_KEYS = frozenset({"resources", "generation"})
#: The largest integer Placement stores (amounts, inventory fields): a signed 32-bit column.
MAX_INT = 2**31 - 1
#: The longest provider name Placement accepts (``maxLength`` in its
#: ``placement/schemas/resource_provider.py``, POST and PUT alike).
MAX_PROVIDER_NAME = 200


def is_uuid(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a 36-character UUID string (any case)."""
    return isinstance(value, str) and _UUID.fullmatch(value) is not None


def validate_uuid(value: object, what: str = "consumer_uuid") -> str:
    """Return ``value`` in lower case if it is a 36-character UUID string.

    Lower case is the one spelling Placement returns, so a caller's
    upper-case uuid must not become a second key for the same provider (on
    MariaDB's case-insensitive collation it would even become a second row).

    :raises InvalidInput: for anything else.
    """
    if not isinstance(value, str) or not _UUID.fullmatch(value):
        raise InvalidInput(f"{what} must be a 36-character UUID string, got {value!r}")
    return value.lower()


def validate_owner(project_id: object, user_id: object) -> None:
    """Check project and user ids as Placement's schema would.

    :raises InvalidInput: when either is not a 1-255 character string.
    """
    for name, value in (("project_id", project_id), ("user_id", user_id)):
        if not isinstance(value, str) or not value or len(value) > _MAX_ID_LEN:
            raise InvalidInput(f"{name} must be a string of 1 to 255 characters, got {value!r}")


def is_valid_name(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a valid resource class name or consumer type."""
    return isinstance(value, str) and bool(_NAME.fullmatch(value))


def validate_consumer_type(value: object) -> str:
    """Return ``value`` if it is a valid consumer type (``^[A-Z0-9_]+$``, at most 255).

    :raises InvalidInput: otherwise.
    """
    if not is_valid_name(value) or len(value) > _MAX_TYPE_LEN:
        raise InvalidInput(
            f"consumer_type must match ^[A-Z0-9_]+$ and be at most {_MAX_TYPE_LEN} "
            f"characters, got {value!r}"
        )
    return value


def validate_max_staleness(value: object) -> float | None:
    """Return ``value`` if it is None or a finite number of seconds >= 0.

    :raises InvalidInput: otherwise (a bool, a string, NaN, a negative number).
    """
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise InvalidInput(f"max_staleness must be None or seconds >= 0, got {value!r}")
    return float(value)


def validate_generation(value: object, what: str = "generation") -> int:
    """Return ``value`` if it is a provider generation: an int >= 0 (never a bool).

    :raises InvalidInput: otherwise, before anything is sent.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{what} must be an int >= 0, got {value!r}")
    return value


def normalize_allocations(allocations: object) -> dict[str, dict[str, int]]:
    """Validate ``allocations`` and return a fresh plain-dict copy.

    Takes ``{provider: {resource class: amount}}`` and also Placement's own
    shape, ``{provider: {"resources": {...}}}`` (what a GET or an allocation
    candidate returns); no resource class can be called ``resources``, so
    the two cannot be confused. Provider uuids come back in lower case.

    :raises InvalidInput: for a malformed provider uuid, a provider given
        twice (in two spellings), a malformed resource class, an amount that
        is not an int from 1 to 2**31-1, or a provider without any resources.
    """
    if not isinstance(allocations, Mapping):
        raise InvalidInput(f"allocations must be a mapping, got {type(allocations).__name__}")
    result: dict[str, dict[str, int]] = {}
    for given_uuid, given in allocations.items():
        rp_uuid = validate_uuid(given_uuid, "resource provider uuid")
        if rp_uuid in result:
            raise InvalidInput(f"resource provider {rp_uuid} is given twice")
        resources = given.get("resources") if _is_placement_entry(given) else given
        if not isinstance(resources, Mapping) or not resources:
            raise InvalidInput(
                f"resources for provider {rp_uuid} must be a non-empty mapping, got {resources!r}"
            )
        clean: dict[str, int] = {}
        for rc, amount in resources.items():
            if not is_valid_name(rc):
                raise InvalidInput(f"resource class must match ^[A-Z0-9_]+$, got {rc!r}")
            # bool is an int subclass; True is not a meaningful amount.
            if isinstance(amount, bool) or not isinstance(amount, int):
                raise InvalidInput(f"amount of {rc} on {rp_uuid} must be an int, got {amount!r}")
            if amount < 1 or amount > MAX_INT:
                raise InvalidInput(
                    f"amount of {rc} on {rp_uuid} must be between 1 and {MAX_INT}, got {amount}"
                )
            clean[rc] = amount
        result[rp_uuid] = clean
    return result


def _is_placement_entry(value: object) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping) and "resources" in value and set(value) <= _ENTRY_KEYS


_STANDARD_NAME = re.compile(r"[A-Z0-9_]{1,255}")
_CUSTOM = re.compile(r"CUSTOM_[A-Z0-9_]{1,248}")


def validate_standard_name(name: object, what: str = "resource class") -> str:
    """Return ``name`` if it is a valid resource class or trait name.

    :raises InvalidInput: otherwise.
    """
    if not isinstance(name, str) or not _STANDARD_NAME.fullmatch(name):
        raise InvalidInput(f"{what} must match [A-Z0-9_]+, got {name!r}")
    return name


def validate_custom_name(name: str, what: str = "resource class") -> str:
    """Return ``name`` if it is a valid custom (``CUSTOM_``) name.

    :raises InvalidInput: otherwise; Placement only lets clients create these.
    """
    if not isinstance(name, str) or not _CUSTOM.fullmatch(name):
        raise InvalidInput(f"a custom {what} must match CUSTOM_[A-Z0-9_]+, got {name!r}")
    return name


def validate_name_prefix(prefix: object, what: str = "trait") -> str:
    """Return ``prefix`` if it can begin a trait or resource class name (``[A-Z0-9_]+``).

    :raises InvalidInput: otherwise.
    """
    if not isinstance(prefix, str) or not _STANDARD_NAME.fullmatch(prefix):
        raise InvalidInput(f"a {what} name prefix must match [A-Z0-9_]+, got {prefix!r}")
    return prefix


def validate_provider_name(name: object) -> str:
    """Return ``name`` if it is a string of 1 to :data:`MAX_PROVIDER_NAME` characters.

    :raises InvalidInput: otherwise (None, not a string, empty, too long).
    """
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_PROVIDER_NAME:
        shown = name if not isinstance(name, str) or len(name) <= 40 else f"{name[:40]}..."
        raise InvalidInput(
            f"a provider name is a string of 1-{MAX_PROVIDER_NAME} characters, got {shown!r}"
            + (f" ({len(name)} characters)" if isinstance(name, str) and name else "")
        )
    return name


def _members(values: object, what: str) -> Iterable[object]:
    """``values`` as the iterable of names it must be; one bare string is refused.

    A string is an iterable of its characters, and each letter of
    ``"HW_CPU_X86_AVX2"`` is itself a valid trait name: taken as given, it
    would silently become fifteen one-letter traits.
    """
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise InvalidInput(
            f"{what} must be an iterable of strings (a set, a list), got {type(values).__name__}"
            + (f" {values!r}" if isinstance(values, str | bytes) else "")
        )
    return values


def validate_names(values: object, what: str = "trait") -> frozenset[str]:
    """Return ``values`` as a frozenset of valid trait (or resource class) names.

    :raises InvalidInput: for one string instead of an iterable of them, or
        for a member that is not a valid name.
    """
    return frozenset(validate_standard_name(v, what) for v in _members(values, f"{what}s"))


def validate_uuids(values: object, what: str = "aggregate") -> frozenset[str]:
    """Return ``values`` as a frozenset of lower-case uuids.

    :raises InvalidInput: for one string instead of an iterable of them, or
        for a member that is not a uuid.
    """
    return frozenset(validate_uuid(v, what) for v in _members(values, f"{what}s"))


#: What ``PlacementClient.request`` may send: the methods Placement serves.
RAW_METHODS = frozenset({"GET", "HEAD", "PUT", "POST", "DELETE"})
_BODY_METHODS = frozenset({"PUT", "POST"})
# Whitespace and control characters: a path is sent as is, and one of these
# would split or smuggle a request line.
_UNSAFE_IN_PATH = re.compile(r"[\x00-\x20\x7f]")


def validate_method(method: object, has_body: bool = False) -> str:
    """Return ``method`` upper-cased if Placement serves it (and it may carry a body).

    :raises InvalidInput: for another method, or a body on a GET, HEAD or DELETE.
    """
    name = method.upper() if isinstance(method, str) else None
    if name not in RAW_METHODS:
        raise InvalidInput(f"method must be one of {sorted(RAW_METHODS)}, got {method!r}")
    if has_body and name not in _BODY_METHODS:
        raise InvalidInput(f"a {name} request carries no body; json= is for PUT and POST")
    return name


def validate_path(path: object) -> str:
    """Return ``path`` if it is a path (and query) under the Placement endpoint.

    It must start with one ``/`` and name no scheme, host or fragment: the
    client's endpoint, token and request id go with every request, so a path
    must never point them elsewhere.

    :raises InvalidInput: otherwise.
    """
    if not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
        raise InvalidInput(f"path must start with a single '/', got {path!r}")
    if _UNSAFE_IN_PATH.search(path):
        raise InvalidInput(f"path must not contain whitespace or control characters: {path!r}")
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or "#" in path:
        raise InvalidInput(f"path must be relative to the Placement endpoint, got {path!r}")
    return path
