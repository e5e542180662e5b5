"""Every input rule of the library, each written once.

Each malformed value is refused here with
:class:`~reportclient.errors.InvalidInput` before a request is built: uuids,
owners, consumer types, resource class and trait names, amounts,
generations, allocations. The value model's types and the engine call
these; nothing else re-checks.

Each rule is drawn from Placement 16.0.0: its JSON schemas
(``placement/schemas/*.py``) and its database columns
(``placement/db/sqlalchemy/models.py``), where an ``Integer`` is a signed
32-bit column on MariaDB and PostgreSQL and a ``String(n)`` holds at most
``n`` characters. Text is also refused when it holds a NUL character:
PostgreSQL stores no NUL in a text column, so Placement on it answers 500
(and a write would be reported as perhaps landed), while MariaDB and SQLite
keep it; a value one of Placement's databases cannot hold is refused on all.
``tests/unit/model/test_validation_rules.py`` tables every rule with its source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard
from urllib.parse import unquote, urlsplit

from reportclient._numbers import is_non_negative_number
from reportclient.errors import InvalidInput

__all__ = [
    "MAX_INT",
    "MAX_NAME",
    "MAX_PROVIDER_NAME",
    "is_uuid",
    "is_valid_name",
    "members",
    "normalize_allocations",
    "validate_amount",
    "validate_consumer_type",
    "validate_custom_name",
    "validate_generation",
    "validate_method",
    "validate_name_prefix",
    "validate_names",
    "validate_owner",
    "validate_path",
    "validate_provider_name",
    "validate_resources",
    "validate_standard_name",
    "validate_trait_filter",
    "validate_uuid",
    "validate_uuids",
]

# Matched with fullmatch: "$" would also accept a trailing newline.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# projects.external_id and users.external_id are String(255), and the
# allocation schemas say maxLength 255 (minLength 1).
_MAX_ID_LEN = 255
#: The longest resource class, trait or consumer type name: ``resource_classes.name``,
#: ``traits.name`` and ``consumer_types.name`` are String(255).
MAX_NAME = 255
# Placement's RC_PATTERN (also its trait and consumer type pattern), at most MAX_NAME long.
_STANDARD_NAME = re.compile(rf"[A-Z0-9_]{{1,{MAX_NAME}}}")
# CUSTOM_RC_PATTERN / CUSTOM_TRAIT_PATTERN: the only names a client may create.
_CUSTOM = re.compile(rf"CUSTOM_[A-Z0-9_]{{1,{MAX_NAME - len('CUSTOM_')}}}")
# Keys of one provider's entry in Placement's allocations documents.
_ENTRY_KEYS = frozenset({"resources", "generation"})
#: The largest integer Placement stores (amounts, inventory fields, generations): its
#: ``Integer`` columns are signed 32-bit, and the inventory schema's ``maximum`` is
#: ``placement/db/constants.py`` ``MAX_INT`` (0x7FFFFFFF).
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


def _shown(value: object) -> str:
    """``value`` for a message: a long string cut to 40 characters, with its length."""
    if isinstance(value, str) and len(value) > 40:
        return f"{value[:40]!r}... ({len(value)} characters)"
    return repr(value)


def validate_text(value: object, what: str, longest: int) -> str:
    """Return ``value`` if it is a string of 1 to ``longest`` characters with no NUL.

    :param what: the field's name, for the message.
    :raises InvalidInput: otherwise. A NUL is refused because Placement on
        PostgreSQL answers it with a 500 (PostgreSQL stores no NUL in text).
    """
    if not isinstance(value, str) or not 1 <= len(value) <= longest:
        raise InvalidInput(
            f"{what} must be a string of 1-{longest} characters, got {_shown(value)}"
        )
    if "\x00" in value:
        raise InvalidInput(
            f"{what} must not contain a NUL character (Placement on PostgreSQL cannot "
            f"store it), got {_shown(value)}"
        )
    return value


def validate_owner(project_id: object, user_id: object) -> None:
    """Check project and user ids as Placement's schema and database would.

    The allocation schemas take 1-255 characters; the ids are stored in
    ``projects.external_id`` / ``users.external_id`` (String(255)), where
    PostgreSQL refuses a NUL.

    :raises InvalidInput: when either is not a 1-255 character string
        without NUL, naming ``project_id`` or ``user_id``.
    """
    validate_text(project_id, "project_id", _MAX_ID_LEN)
    validate_text(user_id, "user_id", _MAX_ID_LEN)


def validate_amount(amount: object, what: str) -> int:
    """Return ``amount`` if it is an int from 1 to :data:`MAX_INT`.

    The allocation schemas say ``minimum: 1``; ``allocations.used`` is an
    ``Integer`` column, so no amount above :data:`MAX_INT` can be held, and
    no provider can offer one in a single allocation (``max_unit`` is at
    most :data:`MAX_INT`). On a query (``resources=``) Placement answers a
    larger amount with an empty list, or a 500 from 2**63: refused here, as
    it can match nothing.

    :param what: the field, for the message (``"amount of VCPU on <rp>"``).
    :raises InvalidInput: otherwise (a bool, a float, a string, 0, 2**31).
    """
    # bool is an int subclass; True is not a meaningful amount.
    if isinstance(amount, bool) or not isinstance(amount, int) or not 1 <= amount <= MAX_INT:
        raise InvalidInput(f"{what} must be an int from 1 to {MAX_INT}, got {amount!r}")
    return amount


def validate_generation(value: object, what: str = "generation") -> int:
    """Return ``value`` if it is a generation Placement can hold: an int from 0 to :data:`MAX_INT`.

    Provider and consumer generations are ``Integer`` columns
    (``resource_providers.generation``, ``consumers.generation``); the
    schemas only say ``integer``.

    :raises InvalidInput: otherwise (a bool, a string, a negative number).
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
        raise InvalidInput(f"{what} must be an int from 0 to {MAX_INT}, got {value!r}")
    return value


def is_valid_name(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a valid resource class name or consumer type (see
    :func:`validate_standard_name`)."""
    return isinstance(value, str) and bool(_STANDARD_NAME.fullmatch(value))


def validate_consumer_type(value: object) -> str:
    """Return ``value`` if it is a valid consumer type.

    The 1.38 allocation schema: ``^[A-Z0-9_]+$``, 1-255 characters
    (``consumer_types.name`` is String(255)).

    :raises InvalidInput: otherwise.
    """
    return validate_standard_name(value, "consumer_type")


def validate_max_staleness(value: object) -> float | None:
    """Return ``value`` if it is None or a finite number of seconds >= 0.

    :raises InvalidInput: otherwise (a bool, a string, NaN, a negative number).
    """
    if value is None:
        return None
    if not is_non_negative_number(value):
        raise InvalidInput(f"max_staleness must be None or seconds >= 0, got {value!r}")
    return float(value)


def normalize_allocations(allocations: object) -> dict[str, dict[str, int]]:
    """Validate ``allocations`` and return a fresh plain-dict copy.

    Takes ``{provider: {resource class: amount}}`` and also Placement's own
    shape, ``{provider: {"resources": {...}}}`` (what a GET or an allocation
    candidate returns); no resource class can be called ``resources``, so
    the two cannot be confused. Provider uuids come back in lower case.

    :raises InvalidInput: for a malformed provider uuid, a provider given
        twice (in two spellings), a malformed resource class (see
        :func:`validate_standard_name`), an amount that is not an int from 1
        to 2**31-1, or a provider without any resources.
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
        clean = validate_resources(resources, f"resources of provider {rp_uuid}")
        result[rp_uuid] = clean
    return result


def _is_placement_entry(value: object) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping) and "resources" in value and set(value) <= _ENTRY_KEYS


def validate_standard_name(name: object, what: str = "resource class") -> str:
    """Return ``name`` if it is a valid resource class, trait or consumer type name.

    ``^[A-Z0-9_]+$`` (``placement/schemas/common.py`` ``RC_PATTERN``,
    ``CONSUMER_TYPE_PATTERN``), at most :data:`MAX_NAME` characters: the
    schemas for allocations and inventories give no length, but a longer
    class or trait cannot exist (its column is String(255)), so Placement
    answers 400 for it anyway.

    :raises InvalidInput: otherwise, naming ``what``.
    """
    if not isinstance(name, str) or not _STANDARD_NAME.fullmatch(name):
        raise InvalidInput(
            f"{what} must match ^[A-Z0-9_]+$ and be at most {MAX_NAME} characters, "
            f"got {_shown(name)}"
        )
    return name


def validate_resources(value: object, what: str = "resources") -> dict[str, int]:
    """Return ``value`` as a plain ``{resource class: amount}`` dict, every entry checked.

    One rule for every place amounts are given: a consumer's allocations,
    a candidates query's groups, ``list_providers(resources=)``.

    :raises InvalidInput: ``value`` is not a mapping, or holds a malformed
        class (:func:`validate_standard_name`) or amount (:func:`validate_amount`).
    """
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{what} must map resource classes to amounts, got {value!r}")
    return {
        validate_standard_name(rc): validate_amount(amount, f"amount of {rc} in {what}")
        for rc, amount in value.items()
    }


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


def validate_provider_name(name: object, what: str = "a provider name") -> str:
    """Return ``name`` if it is a string of 1 to :data:`MAX_PROVIDER_NAME` characters, no NUL.

    The provider schemas say ``maxLength: 200`` (``resource_providers.name``
    is String(200)); an empty name is refused by Placement's create. The
    same rule holds for a ``name`` filter: a longer one can match nothing.

    :raises InvalidInput: otherwise (None, not a string, empty, too long, a NUL).
    """
    return validate_text(name, what, MAX_PROVIDER_NAME)


def members(values: object, what: str) -> Iterable[object]:
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


def validate_trait_filter(values: object, what: str = "required") -> tuple[str, ...]:
    """Return a traits filter's entries, sorted: each a trait name, or ``!`` and one to forbid it.

    ``GET /resource_providers?required=`` (1.18, ``!`` since 1.22) takes
    that comma-separated list; the names follow :func:`validate_standard_name`.

    :raises InvalidInput: one string instead of an iterable, a malformed
        name, or a trait both required and forbidden.
    """
    entries = set()
    for entry in members(values, what):
        if isinstance(entry, str) and entry.startswith("!"):
            entries.add("!" + validate_standard_name(entry[1:], f"a trait in {what}"))
        else:
            entries.add(validate_standard_name(entry, f"a trait in {what}"))
    both = sorted(e for e in entries if f"!{e}" in entries)
    if both:
        raise InvalidInput(f"{what} both requires and forbids {', '.join(both)}")
    return tuple(sorted(entries))


def validate_names(values: object, what: str = "trait") -> frozenset[str]:
    """Return ``values`` as a frozenset of valid trait (or resource class) names.

    :raises InvalidInput: for one string instead of an iterable of them, or
        for a member that is not a valid name.
    """
    return frozenset(validate_standard_name(v, what) for v in members(values, f"{what}s"))


def validate_uuids(values: object, what: str = "aggregate") -> frozenset[str]:
    """Return ``values`` as a frozenset of lower-case uuids.

    :raises InvalidInput: for one string instead of an iterable of them, or
        for a member that is not a uuid.
    """
    return frozenset(validate_uuid(v, what) for v in members(values, f"{what}s"))


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
    must never point them elsewhere. Nor may it hold ``.`` or ``..``
    segments: they are removed before the request is sent, so the route
    Placement sees (and the subject a write changes) would not be the one
    the caches were told of.

    :raises InvalidInput: otherwise.
    """
    if not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
        raise InvalidInput(f"path must start with a single '/', got {path!r}")
    if _UNSAFE_IN_PATH.search(path):
        raise InvalidInput(f"path must not contain whitespace or control characters: {path!r}")
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or "#" in path:
        raise InvalidInput(f"path must be relative to the Placement endpoint, got {path!r}")
    if any(unquote(segment) in (".", "..") for segment in parts.path.split("/")):
        # urllib3 removes dot segments before sending, so the route sent is not
        # the one written, and the caches would forget the wrong subject; a
        # segment spelled with escapes ("%2e%2e") is one too, as requests
        # unescapes unreserved characters before urllib3 sees the path.
        raise InvalidInput(f"path must not contain '.' or '..' segments, got {path!r}")
    return path
