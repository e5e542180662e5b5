"""Every microversion this client knows, named for what it enables, and their spelling.

One place for all of them: a route's or a field's minimum version is a
constant here with a comment saying what it brings. Choosing the version in
use, and spelling one on the wire, is the wire's
(:mod:`reportclient._wire.negotiation`).
"""

from __future__ import annotations

__all__ = [
    "ANY_TRAIT_VERSION",
    "CONSUMER_GENERATION_VERSION",
    "CONSUMER_TYPE_VERSION",
    "FORBIDDEN_AGGREGATES_VERSION",
    "IN_TREE_VERSION",
    "LEAN_VERSION",
    "MAPPINGS_VERSION",
    "MAX_VERSION",
    "REPARENT_VERSION",
    "RESHAPER_VERSION",
    "ROOT_REQUIRED_VERSION",
    "SAME_SUBTREE_VERSION",
    "USAGES_BY_TYPE_VERSION",
    "VERBOSE_SUFFIX_VERSION",
    "Microversion",
]

Microversion = tuple[int, int]

#: Consumer generations on PUT/POST /allocations; the floor we accept.
CONSUMER_GENERATION_VERSION: Microversion = (1, 28)
#: ``POST /reshaper`` exists.
RESHAPER_VERSION: Microversion = (1, 30)
#: ``in_tree`` and ``in_tree<S>``: only providers of one tree.
IN_TREE_VERSION: Microversion = (1, 31)
#: ``member_of=!in:...``: forbidden aggregates.
FORBIDDEN_AGGREGATES_VERSION: Microversion = (1, 32)
#: Group suffixes may be any ``[a-zA-Z0-9_-]{1,64}``, not only numbers.
VERBOSE_SUFFIX_VERSION: Microversion = (1, 33)
#: Allocation requests carry ``mappings``; allocation writes accept them.
MAPPINGS_VERSION: Microversion = (1, 34)
#: ``root_required``: traits the root provider of each candidate must (not) have.
ROOT_REQUIRED_VERSION: Microversion = (1, 35)
#: ``same_subtree``, and suffixed groups without resources (only traits).
SAME_SUBTREE_VERSION: Microversion = (1, 36)
#: A provider's parent may be changed or removed (earlier: set once, at creation).
REPARENT_VERSION: Microversion = (1, 37)
#: ``consumer_type`` becomes required on allocation writes.
CONSUMER_TYPE_VERSION: Microversion = (1, 38)
#: The version for a consumer's reads and writes that set no consumer type
#: and send no mappings: the lowest that carries generations, as nova's
#: client sends them. Measured on Placement 16 over MariaDB (4 workers,
#: ``python -m bench run --placement mariadb`` and the same requests alone): from
#: 1.38 every allocation read and write loads the whole consumer_types table
#: (its cache lives one request), 16% more Placement CPU per request with 16
#: writers on one consumer; and 1.37 costs 6-9% more per GET, PUT and
#: conflicting PUT than 1.28 even without types. A write that sets a type goes
#: at the version in use, one with mappings at ``MAPPINGS_VERSION``.
LEAN_VERSION: Microversion = CONSUMER_GENERATION_VERSION
#: ``GET /usages`` groups by consumer type and takes ``consumer_type=``.
USAGES_BY_TYPE_VERSION: Microversion = CONSUMER_TYPE_VERSION
#: ``required=in:A,B`` (any of) and ``required`` given more than once.
ANY_TRAIT_VERSION: Microversion = (1, 39)
#: The newest version this client knows (openstack-placement 16.0.0).
MAX_VERSION: Microversion = (1, 39)
