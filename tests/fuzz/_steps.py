"""What a differential sequence is made of: steps drawn by hypothesis, built into requests.

A :class:`Step` is plain data (a route, a microversion and the choices for
its body and query), so hypothesis can shrink it and print it. It becomes a
:class:`~tests.fuzz._backends.Request` only when run, because some choices
name "the current generation", which :class:`Context` reads from the real
service just before sending; the fake then gets the very same body, so a
fake whose generation drifted answers 409 where Placement answers 200.

Every name a step uses comes from small fixed pools (three providers, three
consumers, two custom classes and traits, two aggregates), so sequences
collide on purpose: the second write meets the first one's state. The
tables are emptied between sequences, so the pools can be constants and
every uuid in an answer is either one of ours or one a server made up.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.fuzz._backends import Answer, Request

__all__ = ["PROLOGUES", "READ_BACK", "ROUTES", "Context", "Step", "steps"]

RPS = (
    "11111111-1111-4111-8111-111111111111",
    "22222222-2222-4222-8222-222222222222",
    "33333333-3333-4333-8333-333333333333",
)
#: in the pool but never created by the prologue: a provider a sequence makes itself
FRESH_RP = "44444444-4444-4444-8444-444444444444"
MISSING_RP = "99999999-9999-4999-8999-999999999999"
CONSUMERS = (
    "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
    "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb",
    "cccccccc-cccc-4ccc-8ccc-cccccccccccc",
)
AGGREGATES = ("dddddddd-dddd-4ddd-8ddd-dddddddddddd", "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee")
CHOSEN = frozenset((*RPS, FRESH_RP, MISSING_RP, *CONSUMERS, *AGGREGATES))
CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB", "CUSTOM_A", "CUSTOM_B")
BAD_CLASSES = ("vcpu", "CUSTOM_", "NOT_A_CLASS", "CUSTOM_NEVER_MADE")
SHARES = "MISC_SHARES_VIA_AGGREGATE"
TRAITS = ("HW_CPU_X86_AVX", "HW_CPU_X86_SSE", "CUSTOM_T1", "CUSTOM_T2", SHARES)
BAD_TRAITS = ("NOT_A_TRAIT", "lower_case", "CUSTOM_NEVER_MADE")
NAMES = ("rp-a", "rp-b", "", "x" * 201)
VERSIONS = tuple(f"1.{minor}" for minor in range(40))

CURRENT = "current"  # a generation choice: read it from the real service first


def _prologue() -> tuple[Request, ...]:
    """A small world most sequences start from: a tree, a sharing-ish root, classes, traits."""

    def make(method: str, path: str, doc: Any = None) -> Request:
        return Request.make(method, path, route="(prologue)", microversion="1.39", json_body=doc)

    def inventory(rp: str, totals: dict[str, int]) -> Request:
        doc = {
            "inventories": {rc: {"total": n} for rc, n in totals.items()},
            "resource_provider_generation": 0,
        }
        return make("PUT", f"/resource_providers/{rp}/inventories", doc)

    return (
        make("POST", "/resource_providers", {"name": "rp-a", "uuid": RPS[0]}),
        make(
            "POST",
            "/resource_providers",
            {"name": "rp-b", "uuid": RPS[1], "parent_provider_uuid": RPS[0]},
        ),
        make("POST", "/resource_providers", {"name": "rp-c", "uuid": RPS[2]}),
        make("PUT", "/resource_classes/CUSTOM_A"),
        make("PUT", "/traits/CUSTOM_T1"),
        inventory(RPS[0], {"VCPU": 8, "MEMORY_MB": 1024}),
        inventory(RPS[1], {"DISK_GB": 100, "CUSTOM_A": 4}),
        inventory(RPS[2], {"VCPU": 4}),
        make(
            "PUT",
            f"/resource_providers/{RPS[0]}/traits",
            {"traits": ["HW_CPU_X86_AVX"], "resource_provider_generation": 1},
        ),
        make(
            "PUT",
            f"/resource_providers/{RPS[2]}/aggregates",
            {"aggregates": [AGGREGATES[0]], "resource_provider_generation": 1},
        ),
    )


def _hostile_uuid(rp: str) -> str:
    return rp.replace("-", "")


@dataclass
class Context:
    """What building a step may ask of the run: the real service's current generations."""

    real_send: Callable[[Request], Answer]

    def _read(self, path: str) -> Any:
        answer = self.real_send(Request.make("GET", path, route="(read)", microversion="1.39"))
        return answer.json() if answer.status == 200 else None

    def provider_generation(self, rp: str) -> int | None:
        """The provider's generation, or None when it does not exist."""
        doc = self._read(f"/resource_providers/{rp}")
        return None if doc is None else int(doc["generation"])

    def consumer_generation(self, consumer: str) -> int | None:
        """The consumer's generation, or None when Placement has no record of it."""
        doc = self._read(f"/allocations/{consumer}")
        return None if doc is None else doc.get("consumer_generation")


@dataclass(frozen=True)
class Step:
    """One request to make, as data: a route key, a microversion and named choices."""

    route: str
    microversion: str | None
    choices: tuple[tuple[str, Any], ...] = field(default=())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.choices)
        return f"{self.route} @{self.microversion} ({args})"

    def get(self, key: str, default: Any = None) -> Any:
        """A choice by name."""
        return dict(self.choices).get(key, default)

    def build(self, ctx: Context) -> Request:
        """The request, with symbolic generations resolved against the real service."""
        return ROUTES[self.route][1](self, ctx)


def _gen(step: Step, ctx: Context, key: str, rp: str) -> Any:
    value = step.get(key)
    if value == CURRENT:
        return ctx.provider_generation(rp) or 0
    return value


def _cgen(step: Step, ctx: Context, consumer: str) -> Any:
    value = step.get("cgen")
    if value == CURRENT:
        return ctx.consumer_generation(consumer)
    return value


def _req(step: Step, method: str, path: str, **kw: Any) -> Request:
    headers = {**dict(step.get("headers") or ()), **kw.pop("headers", {})}
    return Request.make(
        method, path, route=step.route, microversion=step.microversion, headers=headers, **kw
    )


def _sharing_prologue() -> tuple[Request, ...]:
    """The tree world plus a sharing provider: rp-c shares DISK_GB with rp-a's aggregate."""

    def make(method: str, path: str, doc: Any = None) -> Request:
        return Request.make(method, path, route="(prologue)", microversion="1.39", json_body=doc)

    return (
        *_prologue(),
        make(
            "PUT",
            f"/resource_providers/{RPS[2]}/inventories",
            {"inventories": {"DISK_GB": {"total": 200}}, "resource_provider_generation": 2},
        ),
        make(
            "PUT",
            f"/resource_providers/{RPS[2]}/traits",
            {"traits": [SHARES], "resource_provider_generation": 3},
        ),
        make(
            "PUT",
            f"/resource_providers/{RPS[0]}/aggregates",
            {"aggregates": [AGGREGATES[0]], "resource_provider_generation": 2},
        ),
    )


#: The worlds a sequence may start from: nothing, a small tree, the tree with a sharing provider.
PROLOGUES: dict[str, tuple[Request, ...]] = {
    "none": (),
    "tree": _prologue(),
    "sharing": _sharing_prologue(),
}


def _read_back() -> tuple[Request, ...]:
    """Every read that shows the whole state, at the latest microversion."""

    def read(path: str) -> Request:
        return Request.make("GET", path, route="(read back)", microversion="1.39")

    out = [read("/resource_providers"), read("/resource_classes"), read("/traits")]
    for rp in (*RPS, FRESH_RP):
        out.append(read(f"/resource_providers/{rp}"))
        for sub in ("inventories", "traits", "aggregates", "usages", "allocations"):
            out.append(read(f"/resource_providers/{rp}/{sub}"))
    out += [read(f"/allocations/{c}") for c in CONSUMERS]
    out.append(read("/usages?project_id=project-a"))
    return tuple(out)


#: Sent to both sides after every sequence: the final states must read back alike.
READ_BACK = _read_back()


# -- builders, one per route key ----------------------------------------------------------
def _root(step: Step, ctx: Context) -> Request:
    return _req(step, "GET", "/")


def _create_rp(step: Step, ctx: Context) -> Request:
    doc: dict[str, Any] = {}
    if step.get("name") is not None:
        doc["name"] = step.get("name")
    if step.get("uuid") is not None:
        doc["uuid"] = step.get("uuid")
    if step.get("parent") is not None:
        doc["parent_provider_uuid"] = step.get("parent")
    if step.get("extra"):
        doc["extra"] = 1
    return _req(step, "POST", "/resource_providers", json_body=doc)


def _list_rps(step: Step, ctx: Context) -> Request:
    return _req(step, "GET", "/resource_providers" + (step.get("query") or ""))


def _show_rp(step: Step, ctx: Context) -> Request:
    return _req(step, step.get("method", "GET"), f"/resource_providers/{step.get('rp')}")


def _update_rp(step: Step, ctx: Context) -> Request:
    doc: dict[str, Any] = {"name": step.get("name")}
    if step.get("parent", "-") != "-":
        doc["parent_provider_uuid"] = step.get("parent")
    return _req(step, "PUT", f"/resource_providers/{step.get('rp')}", json_body=doc)


def _delete_rp(step: Step, ctx: Context) -> Request:
    return _req(step, "DELETE", f"/resource_providers/{step.get('rp')}")


def _inventory_record(step: Step) -> Any:
    rec = step.get("record")
    return dict(rec) if isinstance(rec, tuple) else rec


def _inventory_fields(step: Step) -> dict[str, Any]:
    # A single inventory's body: a record that is not an object becomes a bad total.
    rec = _inventory_record(step)
    return rec if isinstance(rec, dict) else {"total": rec}


def _put_inventories(step: Step, ctx: Context) -> Request:
    rp = step.get("rp")
    invs = {rc: _inventory_record(step) for rc in step.get("classes")}
    doc = {"inventories": invs, "resource_provider_generation": _gen(step, ctx, "gen", rp)}
    return _req(step, "PUT", f"/resource_providers/{rp}/inventories", json_body=doc)


def _post_inventory(step: Step, ctx: Context) -> Request:
    rp = step.get("rp")
    doc = {
        "resource_class": step.get("rc"),
        **_inventory_fields(step),
        "resource_provider_generation": _gen(step, ctx, "gen", rp),
    }
    return _req(step, "POST", f"/resource_providers/{rp}/inventories", json_body=doc)


def _inventories_op(step: Step, ctx: Context) -> Request:
    return _req(step, step.get("method"), f"/resource_providers/{step.get('rp')}/inventories")


def _inventory_op(step: Step, ctx: Context) -> Request:
    rp, rc = step.get("rp"), step.get("rc")
    path = f"/resource_providers/{rp}/inventories/{rc}"
    if step.get("method") == "PUT":
        doc = {
            **_inventory_fields(step),
            "resource_provider_generation": _gen(step, ctx, "gen", rp),
        }
        return _req(step, "PUT", path, json_body=doc)
    return _req(step, step.get("method"), path)


def _rp_sub_get(step: Step, ctx: Context) -> Request:
    return _req(step, "GET", f"/resource_providers/{step.get('rp')}/{step.get('sub')}")


def _put_aggregates(step: Step, ctx: Context) -> Request:
    rp = step.get("rp")
    aggs = list(step.get("aggs"))
    doc: Any = aggs
    if step.get("gen") != "old-format":
        doc = {"aggregates": aggs, "resource_provider_generation": _gen(step, ctx, "gen", rp)}
    return _req(step, "PUT", f"/resource_providers/{rp}/aggregates", json_body=doc)


def _put_rp_traits(step: Step, ctx: Context) -> Request:
    rp = step.get("rp")
    doc = {
        "traits": list(step.get("traits")),
        "resource_provider_generation": _gen(step, ctx, "gen", rp),
    }
    return _req(step, "PUT", f"/resource_providers/{rp}/traits", json_body=doc)


def _rp_traits_op(step: Step, ctx: Context) -> Request:
    return _req(step, step.get("method"), f"/resource_providers/{step.get('rp')}/traits")


def _traits(step: Step, ctx: Context) -> Request:
    return _req(step, "GET", "/traits" + (step.get("query") or ""))


def _trait_op(step: Step, ctx: Context) -> Request:
    return _req(step, step.get("method"), f"/traits/{step.get('name')}")


def _classes(step: Step, ctx: Context) -> Request:
    if step.get("method") == "POST":
        return _req(step, "POST", "/resource_classes", json_body={"name": step.get("name")})
    return _req(step, "GET", "/resource_classes")


def _class_op(step: Step, ctx: Context) -> Request:
    path = f"/resource_classes/{step.get('name')}"
    if step.get("method") == "PUT" and step.get("body"):
        return _req(step, "PUT", path, json_body={"name": step.get("body")})
    return _req(step, step.get("method"), path)


def _alloc_doc(step: Step, ctx: Context, consumer: str, *, post: bool) -> dict[str, Any]:
    allocs: dict[str, dict[str, int]] = {}
    for rp, rc, n in step.get("allocs"):
        allocs.setdefault(rp, {})[rc] = n
    if step.get("list_format"):
        doc: dict[str, Any] = {
            "allocations": [
                {"resource_provider": {"uuid": rp}, "resources": res} for rp, res in allocs.items()
            ]
        }
    else:
        doc = {"allocations": {rp: {"resources": res} for rp, res in allocs.items()}}
    if step.get("owner", True):
        doc["project_id"] = "project-a"
        doc["user_id"] = "user-a"
    if step.get("cgen", "-") != "-":
        doc["consumer_generation"] = _cgen(step, ctx, consumer)
    if step.get("ctype") is not None:
        doc["consumer_type"] = step.get("ctype")
    return doc


def _put_allocations(step: Step, ctx: Context) -> Request:
    consumer = step.get("consumer")
    doc = _alloc_doc(step, ctx, consumer, post=False)
    return _req(step, "PUT", f"/allocations/{consumer}", json_body=doc)


def _post_allocations(step: Step, ctx: Context) -> Request:
    doc = {}
    for consumer in step.get("consumers"):
        one = _alloc_doc(step, ctx, consumer, post=True)
        doc[consumer] = one
    return _req(step, "POST", "/allocations", json_body=doc)


def _allocations_op(step: Step, ctx: Context) -> Request:
    return _req(step, step.get("method"), f"/allocations/{step.get('consumer')}")


def _reshape(step: Step, ctx: Context) -> Request:
    inventories: dict[str, Any] = {}
    for rp, rcs in step.get("inventories"):
        key = _hostile_uuid(rp) if step.get("dashless") else rp
        inventories[key] = {
            "inventories": {rc: {"total": 8} for rc in rcs},
            "resource_provider_generation": ctx.provider_generation(rp) or 0,
        }
    allocations = {}
    for consumer in step.get("consumers"):
        doc = _alloc_doc(step, ctx, consumer, post=True)
        allocations[consumer] = doc
    return _req(
        step,
        "POST",
        "/reshaper",
        json_body={"inventories": inventories, "allocations": allocations},
        headers={"X-Roles": "admin,service"},
    )


def _usages(step: Step, ctx: Context) -> Request:
    return _req(step, "GET", "/usages" + (step.get("query") or ""))


def _candidates(step: Step, ctx: Context) -> Request:
    return _req(step, "GET", "/allocation_candidates" + (step.get("query") or ""))


def _raw(step: Step, ctx: Context) -> Request:
    body = step.get("body")
    return Request.make(
        step.get("method"),
        step.get("path"),
        route=step.route,
        microversion=step.microversion,
        raw_body=body.encode() if body is not None else None,
        headers=dict(step.get("headers") or ()),
    )


# -- strategies --------------------------------------------------------------------------
_rp = st.sampled_from((*RPS, *RPS, *RPS, FRESH_RP, MISSING_RP))
_rp_or_hostile = st.one_of(_rp, st.sampled_from((_hostile_uuid(RPS[0]), "not-a-uuid")))
_consumer = st.sampled_from(CONSUMERS)
_rc = st.sampled_from((*CLASSES, *CLASSES, *BAD_CLASSES))
_trait = st.sampled_from((*TRAITS, *TRAITS, *BAD_TRAITS))
_gen_choice = st.sampled_from((CURRENT, CURRENT, CURRENT, 0, 1, 5, None, "1"))
_record = st.one_of(
    st.builds(
        lambda total, reserved, ratio, rest: (
            ("total", total),
            ("reserved", reserved),
            ("allocation_ratio", ratio),
            *rest,
        ),
        st.sampled_from((8, 8, 1, 0, -1)),
        st.sampled_from((0, 0, 2, 8, 9)),
        st.sampled_from((1.0, 1, 2.5, 16.0, 0)),
        st.sampled_from(
            ((), (("max_unit", 4),), (("step_size", 2),), (("min_unit", 3),), (("bogus", 1),))
        ),
    ),
    st.sampled_from(((("total", 8),), (), "not-an-object", 8, None)),
)


def _version(low: int = 0) -> st.SearchStrategy[str | None]:
    natural = st.sampled_from(VERSIONS[low:])
    latest = st.sampled_from(("1.39", "1.38", "1.28", "1.20", "1.14", "1.12"))
    odd = st.sampled_from((None, "latest", "1.40", "2.0", "bogus", "1.01"))
    return st.one_of(latest, latest, natural, natural, odd)


def _step(route: str, low: int = 0, **choices: st.SearchStrategy[Any]) -> st.SearchStrategy[Step]:
    keys = sorted(choices)
    values = st.tuples(*(st.tuples(st.just(k), choices[k]) for k in keys))
    return st.builds(Step, st.just(route), _version(low), values)


def _query(*parts: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(*parts), max_size=3).map(
        lambda ps: ("?" + "&".join(ps)) if ps else ""
    )


_allocs = st.lists(st.tuples(_rp, _rc, st.sampled_from((1, 1, 2, 4, 0, 100))), max_size=3)
_cgen_choice = st.sampled_from((CURRENT, CURRENT, CURRENT, "-", None, 0, 1, 7))
_ctype = st.sampled_from(("INSTANCE", "INSTANCE", None, "MIGRATION", "bad type"))
_alloc_choices: dict[str, st.SearchStrategy[Any]] = {
    "allocs": _allocs,
    "list_format": st.sampled_from((False, False, False, True)),
    "owner": st.sampled_from((True, True, True, False)),
    "cgen": _cgen_choice,
    "ctype": _ctype,
}
_rp_filters = _query(
    st.sampled_from(("name=rp-a", "name=", "name=rp-b")),
    _rp_or_hostile.map(lambda u: f"uuid={u}"),
    _rp.map(lambda u: f"in_tree={u}"),
    st.sampled_from(AGGREGATES).map(lambda a: f"member_of={a}"),
    st.sampled_from(AGGREGATES).map(lambda a: f"member_of=in:{a},{AGGREGATES[0]}"),
    _trait.map(lambda t: f"required={t}"),
    _rc.map(lambda rc: f"resources={rc}:1"),
    st.sampled_from(("bogus=1", "resources=VCPU", "required=!HW_CPU_X86_AVX")),
)
_SUFFIXES = ("", "", "1", "_NET")
_group_param = st.one_of(
    st.tuples(
        st.sampled_from(_SUFFIXES),
        st.lists(
            st.tuples(_rc, st.sampled_from((1, 2, 4, 50))),
            min_size=1,
            max_size=2,
            unique_by=lambda t: t[0],
        ),
    ).map(lambda t: f"resources{t[0]}=" + ",".join(f"{rc}:{n}" for rc, n in t[1])),
    st.tuples(st.sampled_from(_SUFFIXES), _trait, st.sampled_from(("", "!", "in:"))).map(
        lambda t: f"required{t[0]}={t[2]}{t[1]}" + (f",{TRAITS[0]}" if t[2] == "in:" else "")
    ),
    st.tuples(
        st.sampled_from(_SUFFIXES), st.sampled_from(AGGREGATES), st.sampled_from(("", "!", "in:"))
    ).map(
        lambda t: f"member_of{t[0]}={t[2]}{t[1]}" + (f",{AGGREGATES[1]}" if t[2] == "in:" else "")
    ),
    st.tuples(st.sampled_from(_SUFFIXES), _rp).map(lambda t: f"in_tree{t[0]}={t[1]}"),
)
_request_wide = st.sampled_from(
    (
        "group_policy=none",
        "group_policy=isolate",
        "limit=1",
        "limit=2",
        "root_required=HW_CPU_X86_AVX",
        "root_required=!CUSTOM_T1",
        "root_required=HW_CPU_X86_AVX,!HW_CPU_X86_SSE",
        f"root_required={SHARES}",
        "same_subtree=1,_NET",
        "same_subtree=_NET",
        "same_subtree=1",
    )
)
_generated_candidates = st.lists(
    st.one_of(_group_param, _group_param, _request_wide), min_size=1, max_size=6
).map(lambda ps: "?" + "&".join(ps))
_candidate_query = st.one_of(
    _generated_candidates,
    _generated_candidates,
    _query(
        st.tuples(_rc, st.sampled_from((1, 2, 4))).map(lambda t: f"resources={t[0]}:{t[1]}"),
        st.sampled_from(
            ("resources=VCPU:1,MEMORY_MB:2", "resources=VCPU:1", "resources=DISK_GB:1")
        ),
        st.sampled_from(("resources1=VCPU:1", "group_policy=none", "group_policy=isolate")),
        st.sampled_from(("limit=1", "limit=2", "limit=0", "limit=x")),
        _trait.map(lambda t: f"required={t}"),
        _rp.map(lambda u: f"in_tree={u}"),
        st.sampled_from(AGGREGATES).map(lambda a: f"member_of={a}"),
        st.sampled_from(("root_required=HW_CPU_X86_AVX", "same_subtree=_1", "bogus=1")),
    ),
)
_usage_query = _query(
    st.sampled_from(("project_id=project-a", "project_id=project-a", "project_id=")),
    st.sampled_from(("user_id=user-a", "consumer_type=INSTANCE", "consumer_type=all", "x=1")),
)
_weird_paths = st.one_of(
    _rp.map(lambda u: f"/resource_providers/{u.replace('-', '%2D', 1)}"),
    _rp.map(lambda u: f"/resource_providers/{u}/inventories/%56CPU"),
    st.sampled_from(("/resource_provider", "/traits/", "/allocations", "/%72esource_providers")),
    _rp.map(lambda u: f"/resource_providers/{u}/"),
    _rp.map(lambda u: f"/resource_providers/{u}%3Fa=b"),
    _rp.map(lambda u: f"/resource_providers/{u}/traits%2F"),
)
#: Header sets the hostile step sends (also fed to the fake alone by the no-raise test).
RAW_HEADERS: tuple[tuple[tuple[str, str | None], ...], ...] = (
    (),
    (("Accept", "text/html"),),
    (("Accept", "text/plain"),),
    (("Accept", "application/xml"),),
    (("Accept", "application/json; charset=utf-8"),),
    (("Accept", "application"),),
    (("Accept", "*"),),
    (("Accept", "text/html, application/json;q=0.5"),),
    (("Content-Type", "text/plain"),),
    (("Content-Type", "application/json ; charset=utf-8"),),
    (("Content-Type", "application/json;charset=utf-8"),),
    (("X-Roles", "ADMIN"),),
    (("X-Roles", "reader"), ("X-Auth-Token", "user-a:project-a")),
    (("X-Auth-Token", None),),
    (("OpenStack-System-Scope", "all"),),
)
#: Paths with hostile query strings the hostile step sends.
HOSTILE_QUERIES: tuple[str, ...] = (
    "/resource_providers?name=%ff%fe",
    "/resource_providers?name=rp-a;uuid=x",
    "/resource_providers?name=nope;name=rp-a",
    "/resource_providers?name=rp-a;x=1",
    "/resource_providers?name=rp-a;;&;name",
    "/resource_providers?name=rp+a;name=rp-a",
    "/resource_providers?name=rp%-a&name=rp%2da",
    "/resource_providers?name=rp-a;zzz=1&bogus=2",
    "/traits?name=startswith:CUSTOM;associated=maybe",
    "/traits?zzz=1;bogus=2",
    "/usages?project_id=project-a;consumer_type=",
    "/usages?project_id=project-a;zzz=1&bogus=2",
    "/resource_providers?name=rp%2Da",
    "/traits?name=in:%ff",
    "/usages?project_id=project-a&project_id=project-b",
    "/usages?project_id=%ff",
    "/allocation_candidates?resources=VCPU:1&limit=x&limit=1",
    "/allocation_candidates?resources=VCPU:1&limit=1&limit=x",
    "/allocation_candidates?resources=VCPU:1;limit=1",
    "/allocation_candidates?resources=VCPU%3A1",
    "/resource_classes?",
)
#: Raw bodies the hostile step sends (None: no body).
HOSTILE_BODIES: tuple[str | None, ...] = (
    None,
    "{",
    '{"name": "x"}',
    "[]",
    "[" * 500 + "]" * 500,
    '{"name":' * 300 + '"x"' + "}" * 300,
    "[" * 2000 + "]" * 2000,
    '{"name":' * 2000 + '"x"' + "}" * 2000,
    '{"name": "a\\ud800b"}',
    '{"name": "caf\\u00e9"}',
    '{"name": 1e400}',
    '{"name": "x", "name": "y"}',
)

_raw_headers = st.sampled_from(RAW_HEADERS)
_hostile_queries = st.sampled_from(HOSTILE_QUERIES)
_hostile_bodies = st.sampled_from(HOSTILE_BODIES)

ROUTES: dict[str, tuple[st.SearchStrategy[Step], Callable[[Step, Context], Request]]] = {
    "GET /": (_step("GET /"), _root),
    "POST /resource_providers": (
        _step(
            "POST /resource_providers",
            name=st.sampled_from((*NAMES, None, "rp-a")),
            uuid=st.sampled_from((FRESH_RP, FRESH_RP, *RPS, None, _hostile_uuid(RPS[1]), "bad")),
            parent=st.sampled_from((None, None, *RPS, MISSING_RP)),
            extra=st.sampled_from((False, False, False, True)),
        ),
        _create_rp,
    ),
    "GET /resource_providers": (_step("GET /resource_providers", query=_rp_filters), _list_rps),
    "GET /resource_providers/{u}": (
        _step(
            "GET /resource_providers/{u}",
            rp=_rp_or_hostile,
            method=st.sampled_from(("GET", "GET", "HEAD")),
        ),
        _show_rp,
    ),
    "PUT /resource_providers/{u}": (
        _step(
            "PUT /resource_providers/{u}",
            rp=_rp,
            name=st.sampled_from(NAMES),
            parent=st.sampled_from(("-", "-", None, *RPS, MISSING_RP)),
        ),
        _update_rp,
    ),
    "DELETE /resource_providers/{u}": (_step("DELETE /resource_providers/{u}", rp=_rp), _delete_rp),
    "PUT /resource_providers/{u}/inventories": (
        _step(
            "PUT /resource_providers/{u}/inventories",
            rp=_rp,
            classes=st.lists(_rc, max_size=3, unique=True),
            record=_record,
            gen=_gen_choice,
        ),
        _put_inventories,
    ),
    "POST /resource_providers/{u}/inventories": (
        _step(
            "POST /resource_providers/{u}/inventories",
            rp=_rp,
            rc=_rc,
            record=_record,
            gen=_gen_choice,
        ),
        _post_inventory,
    ),
    "GET|DELETE /resource_providers/{u}/inventories": (
        _step(
            "GET|DELETE /resource_providers/{u}/inventories",
            rp=_rp,
            method=st.sampled_from(("GET", "DELETE")),
        ),
        _inventories_op,
    ),
    "/resource_providers/{u}/inventories/{rc}": (
        _step(
            "/resource_providers/{u}/inventories/{rc}",
            rp=_rp,
            rc=_rc,
            method=st.sampled_from(("GET", "PUT", "DELETE")),
            record=_record,
            gen=_gen_choice,
        ),
        _inventory_op,
    ),
    "GET /resource_providers/{u}/{usages,allocations,aggregates,traits}": (
        _step(
            "GET /resource_providers/{u}/{usages,allocations,aggregates,traits}",
            rp=_rp,
            sub=st.sampled_from(("usages", "allocations", "aggregates", "traits")),
        ),
        _rp_sub_get,
    ),
    "PUT /resource_providers/{u}/aggregates": (
        _step(
            "PUT /resource_providers/{u}/aggregates",
            rp=_rp,
            aggs=st.lists(st.sampled_from((*AGGREGATES, "not-a-uuid")), max_size=2).map(tuple),
            gen=st.sampled_from((CURRENT, CURRENT, "old-format", 0, 3)),
        ),
        _put_aggregates,
    ),
    "PUT /resource_providers/{u}/traits": (
        _step(
            "PUT /resource_providers/{u}/traits",
            rp=_rp,
            traits=st.lists(_trait, max_size=3).map(tuple),
            gen=_gen_choice,
        ),
        _put_rp_traits,
    ),
    "DELETE /resource_providers/{u}/traits": (
        _step("DELETE /resource_providers/{u}/traits", rp=_rp, method=st.just("DELETE")),
        _rp_traits_op,
    ),
    "GET /traits": (
        _step(
            "GET /traits",
            query=_query(
                st.sampled_from(
                    (
                        "name=startswith:CUSTOM",
                        "name=in:CUSTOM_T1,HW_CPU_X86_AVX",
                        "associated=true",
                        "associated=false",
                        "name=bogus",
                        "associated=maybe",
                    )
                )
            ),
        ),
        _traits,
    ),
    "/traits/{name}": (
        _step(
            "/traits/{name}",
            name=_trait,
            method=st.sampled_from(("GET", "PUT", "PUT", "DELETE")),
        ),
        _trait_op,
    ),
    "/resource_classes": (
        _step(
            "/resource_classes",
            method=st.sampled_from(("GET", "POST", "POST")),
            name=_rc,
        ),
        _classes,
    ),
    "/resource_classes/{name}": (
        _step(
            "/resource_classes/{name}",
            name=_rc,
            method=st.sampled_from(("GET", "PUT", "PUT", "DELETE")),
            body=st.sampled_from((None, None, "CUSTOM_B", "CUSTOM_RENAMED")),
        ),
        _class_op,
    ),
    "PUT /allocations/{c}": (
        _step("PUT /allocations/{c}", consumer=_consumer, **_alloc_choices),
        _put_allocations,
    ),
    "POST /allocations": (
        _step(
            "POST /allocations",
            consumers=st.lists(_consumer, min_size=1, max_size=2, unique=True).map(tuple),
            **_alloc_choices,
        ),
        _post_allocations,
    ),
    "GET|DELETE /allocations/{c}": (
        _step(
            "GET|DELETE /allocations/{c}",
            consumer=_consumer,
            method=st.sampled_from(("GET", "DELETE")),
        ),
        _allocations_op,
    ),
    "POST /reshaper": (
        _step(
            "POST /reshaper",
            28,
            inventories=st.lists(
                st.tuples(_rp, st.lists(_rc, max_size=2, unique=True).map(tuple)), max_size=2
            ).map(tuple),
            consumers=st.lists(_consumer, max_size=2, unique=True).map(tuple),
            dashless=st.sampled_from((False, False, False, True)),
            **_alloc_choices,
        ),
        _reshape,
    ),
    "GET /usages": (_step("GET /usages", query=_usage_query), _usages),
    "GET /allocation_candidates": (
        _step("GET /allocation_candidates", query=_candidate_query),
        _candidates,
    ),
    # Hostile query strings alone (no body, usual headers), so that each is met
    # often enough to be compared at all, not only beside a body that fails first.
    "(hostile query)": (
        _step(
            "(hostile query)",
            method=st.sampled_from(("GET", "GET", "GET", "HEAD")),
            path=_hostile_queries,
            body=st.none(),
            headers=st.sampled_from(((), (), (), *RAW_HEADERS)),
        ),
        _raw,
    ),
    "(hostile)": (
        _step(
            "(hostile)",
            method=st.sampled_from(("GET", "HEAD", "PATCH", "PUT", "POST", "DELETE")),
            path=st.one_of(
                _weird_paths,
                _hostile_queries,
                st.sampled_from(("/resource_providers", "/traits", "/usages")),
            ),
            body=_hostile_bodies,
            headers=_raw_headers,
        ),
        _raw,
    ),
}


def steps() -> st.SearchStrategy[Step]:
    """Any one step; arranging writes weigh more so that sequences build some state."""
    heavy = (
        "POST /resource_providers",
        "PUT /resource_providers/{u}/inventories",
        "PUT /allocations/{c}",
        "/resource_classes",
        "/traits/{name}",
    )
    options = [ROUTES[k][0] for k in ROUTES] + [ROUTES[k][0] for k in heavy]
    return st.one_of(*options)


def _json_dump(value: Any) -> str:  # pragma: no cover - debugging aid
    return json.dumps(value, sort_keys=True)
