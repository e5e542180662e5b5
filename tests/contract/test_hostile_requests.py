"""Hostile headers, paths, queries and bodies (issue 39's fuzz findings): fake as real.

Where Placement 16.0.0 answers 500 (an unhandled exception) the fake answers
the declared 400 instead (README, *placement-500*); each such test pins the
500 on the real service and the 400 on the fake.
"""

from __future__ import annotations

import json
import uuid

import pytest
import requests

from . import BAD_REQUEST, CONFLICT, NOT_FOUND, Backend, body, detail, new_uuid

VERSION = {"OpenStack-API-Version": "placement 1.39"}
JSON = "application/json"


def _raw(backend: Backend, method: str, path: str, data: str, ctype: str) -> requests.Response:
    headers = {**VERSION, "Content-Type": ctype, "Accept": "application/json"}
    return backend.session.request(method, backend.url + path, data=data, headers=headers)


def _declared_500(backend: Backend, response: requests.Response) -> None:
    assert response.status_code == (500 if backend.fake is None else 400)


@pytest.mark.parametrize(
    ("accept", "status"),
    [
        ("application/json; charset=utf-8", 406),
        ("application", 200),
        ("*", 200),
        ("application/json;q=0.5", 200),
        ("text/html, application/json", 200),
    ],
)
def test_accept_is_judged_as_webob_judges_it(backend: Backend, accept: str, status: int) -> None:
    rp = backend.create_provider()
    response = backend.request("GET", f"/resource_providers/{rp}", headers={"Accept": accept})
    assert response.status_code == status


def test_a_reader_asking_for_two_projects_is_refused(backend: Backend) -> None:
    reader = {"X-Auth-Token": "alice:alice", "X-Roles": "reader"}
    own = backend.request("GET", "/usages?project_id=alice", headers=reader)
    both = backend.request("GET", "/usages?project_id=alice&project_id=bob", headers=reader)
    assert own.status_code == 200
    assert both.status_code == 403
    assert "Policy does not allow placement:usages" in detail(both)


@pytest.mark.parametrize("roles", ["ADMIN", "Admin", "Service"])
def test_roles_match_whatever_their_case(backend: Backend, roles: str) -> None:
    headers = {"X-Auth-Token": "bob", "X-Roles": roles}
    assert backend.request("GET", "/resource_providers", headers=headers).status_code == 200


def test_a_reader_role_matches_whatever_its_case(backend: Backend) -> None:
    headers = {"X-Auth-Token": "alice:alice", "X-Roles": "Reader"}
    assert backend.request("GET", "/usages?project_id=alice", headers=headers).status_code == 200


def test_an_encoded_question_mark_is_part_of_the_path(backend: Backend) -> None:
    rp = backend.create_provider()
    response = backend.request("DELETE", f"/resource_providers/{rp}%3Fa=b")
    assert response.status_code == 404
    assert f"No resource provider with uuid {rp}?a=b found" in detail(response)
    assert backend.request("GET", f"/resource_providers/{rp}").status_code == 200


def test_a_content_type_with_a_space_before_its_parameters_is_refused(backend: Backend) -> None:
    rp = backend.create_provider()
    doc = json.dumps({"name": f"n-{new_uuid()}"})
    response = _raw(backend, "PUT", f"/resource_providers/{rp}", doc, "application/json ; a=b")
    assert response.status_code == 415
    assert detail(response) == (
        "The request media type application/json ; a=b is not supported by this server. "
        "\n\n The media type application/json  is not supported, use application/json"
    )


def test_a_refused_media_type_is_quoted_whole_then_bare(backend: Backend) -> None:
    rp = backend.create_provider()
    response = _raw(backend, "PUT", f"/resource_providers/{rp}", "{}", "text/plain; charset=x")
    assert response.status_code == 415
    assert detail(response) == (
        "The request media type text/plain; charset=x is not supported by this server. "
        "\n\n The media type text/plain is not supported, use application/json"
    )


@pytest.mark.parametrize("version", ["1.2", "1.6"])
def test_renaming_a_class_to_its_own_name_is_a_success(backend: Backend, version: str) -> None:
    name = f"CUSTOM_SELF_{uuid.uuid4().hex[:10].upper()}"
    assert backend.request("POST", "/resource_classes", {"name": name}, version).ok
    response = backend.request("PUT", f"/resource_classes/{name}", {"name": name}, version)
    assert response.status_code == 200
    assert response.json()["name"] == name


def test_the_reshaper_stores_reserved_above_total(backend: Backend) -> None:
    rp = backend.create_provider()
    doc = {
        "inventories": {
            rp: {
                "resource_provider_generation": 0,
                "inventories": {"VCPU": {"total": 4, "reserved": 8}},
            }
        },
        "allocations": {},
    }
    service = {"X-Roles": "admin,service"}
    response = backend.request("POST", "/reshaper", doc, headers=service)
    assert response.status_code == 204
    stored = backend.request("GET", f"/resource_providers/{rp}/inventories/VCPU")
    assert (stored.json()["total"], stored.json()["reserved"]) == (4, 8)


# -- where Placement answers 500, the fake answers the declared 400 --------------------
def test_a_repeated_limit_with_a_bad_first_value(backend: Backend) -> None:
    response = backend.request("GET", "/allocation_candidates?resources=VCPU:1&limit=x&limit=1")
    _declared_500(backend, response)


@pytest.mark.parametrize("doc", ["[" * 500 + "]" * 500, '{"name":' * 500 + '"x"' + "}" * 500])
def test_json_nested_five_hundred_deep(backend: Backend, doc: str) -> None:
    response = _raw(backend, "POST", "/resource_providers", doc, "application/json")
    _declared_500(backend, response)


@pytest.mark.parametrize(
    "doc",
    [
        '{"name": ' + "[" * 1000 + "]" * 1000 + "}",
        '{"name":' * 1000 + '"x"' + "}" * 1000,
    ],
)
def test_json_nested_past_the_recursion_limit(backend: Backend, doc: str) -> None:
    # Deep enough that json.loads itself gives up (at 500 the schema check does):
    # Placement answers 500, the fake must still answer, with the declared 400.
    response = _raw(backend, "POST", "/resource_classes", doc, "application/json")
    _declared_500(backend, response)
    if backend.fake is not None:
        assert detail(response).endswith("Malformed JSON: nested too deeply  ")


@pytest.mark.parametrize("generation", [0, 7], ids=["current", "stale"])
@pytest.mark.parametrize("record", ['"not-an-object"', "3", '["x"]'])
def test_an_inventory_record_dict_update_refuses(
    backend: Backend, generation: int, record: str
) -> None:
    # Under a key that is no class name the schema lets any record through;
    # Placement merges it into its defaults (dict.update) before comparing the
    # generation, so even a stale one is its 500, not a 409 (the fuzzer's
    # 1,500-sequence run found it).
    rp = backend.create_provider()
    doc = f'{{"resource_provider_generation": {generation}, "inventories": {{"vcpu": {record}}}}}'
    response = _raw(backend, "PUT", f"/resource_providers/{rp}/inventories", doc, JSON)
    _declared_500(backend, response)


@pytest.mark.parametrize(
    ("record", "generation", "status", "text"),
    [
        ("[]", 7, 409, "resource provider generation conflict"),
        ('[["total", 4]]', 7, 409, "resource provider generation conflict"),
        ('[["total", 4]]', 0, 400, "Unknown resource class in inventory"),
    ],
)
def test_an_inventory_record_dict_update_takes(
    backend: Backend, record: str, generation: int, status: int, text: str
) -> None:
    # What dict.update takes goes on as a record: the generation, then the class.
    # (An empty one at the current generation has no total: Placement's 500.)
    rp = backend.create_provider()
    doc = f'{{"resource_provider_generation": {generation}, "inventories": {{"vcpu": {record}}}}}'
    response = _raw(backend, "PUT", f"/resource_providers/{rp}/inventories", doc, JSON)
    assert response.status_code == status
    assert text in detail(response)


def test_a_lone_surrogate_in_a_name(backend: Backend) -> None:
    doc = '{"name": "a\\ud800b"}'
    response = _raw(backend, "POST", "/resource_providers", doc, "application/json")
    _declared_500(backend, response)


@pytest.mark.parametrize("route", ["/resource_providers", "/traits", "/allocation_candidates"])
def test_invalid_utf8_in_a_query_is_refused(backend: Backend, route: str) -> None:
    response = backend.request("GET", f"{route}?name=%ff%fe")
    assert response.status_code == 400
    assert detail(response).endswith(
        "Invalid query string parameters: 'utf-8' codec can't decode byte 0xff in "
        "position 0: invalid start byte  "
    )


def test_invalid_utf8_in_a_query_for_usages(backend: Backend) -> None:
    _declared_500(backend, backend.request("GET", "/usages?project_id=%ff"))


@pytest.mark.parametrize("route", ["/resource_providers", "/traits", "/allocation_candidates"])
def test_the_policy_is_checked_before_an_undecodable_query(backend: Backend, route: str) -> None:
    # These routes check their policy before they read the query (the fuzzer's
    # 4,000-sequence run: a reader got the fake's 400 where Placement says 403).
    reader = {"X-Auth-Token": "alice:alice", "X-Roles": "reader"}
    response = backend.request("GET", f"{route}?name=%ff%fe", headers=reader)
    assert response.status_code == 403
    assert "Policy does not allow placement:" in detail(response)


def test_usages_read_an_undecodable_query_before_the_policy(backend: Backend) -> None:
    # GET /usages reads the query for its policy's target first: 500 whoever asks.
    reader = {"X-Auth-Token": "alice:alice", "X-Roles": "reader"}
    response = backend.request("GET", "/usages?project_id=%ff", headers=reader)
    _declared_500(backend, response)


def _name_of(backend: Backend, rp: str) -> str:
    name: str = backend.request("GET", f"/resource_providers/{rp}").json()["name"]
    return name


def test_a_semicolon_separates_query_parameters(backend: Backend) -> None:
    # webob's parse_qsl_text splits on "&" and ";" alike: the last name wins.
    rp = backend.create_provider()
    name = _name_of(backend, rp)
    response = backend.request("GET", f"/resource_providers?name=nope;name={name}")
    assert response.status_code == 200
    assert [p["uuid"] for p in response.json()["resource_providers"]] == [rp]
    response = backend.request("GET", f"/resource_providers?name=x;uuid={rp}")
    assert response.json() == {"resource_providers": []}


def test_a_parameter_after_a_semicolon_is_checked_by_the_schema(backend: Backend) -> None:
    rp = backend.create_provider()
    response = backend.request("GET", f"/resource_providers?name={_name_of(backend, rp)};x=1")
    assert response.status_code == 400
    assert detail(response).startswith(
        BAD_REQUEST.format(
            "Invalid query string parameters: Additional properties are not allowed "
            "('x' was unexpected)"
        ).rstrip()
    )
    response = backend.request("GET", "/resource_providers?name=a;uuid=x")
    assert "Invalid query string parameters: 'x' is not a 'uuid'" in detail(response)


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("name={name};;&;", True),  # empty pairs are dropped
        # A bare name is an empty value (the last one wins): an empty name filters nothing.
        ("name=nope&name", True),
        ("name", True),
        ("name=nope;name=", True),
        ("name=nope&;name={name}", True),
    ],
)
def test_query_pairs_are_split_as_webob_splits_them(
    backend: Backend, query: str, found: bool
) -> None:
    rp = backend.create_provider()
    response = backend.request(
        "GET", "/resource_providers?" + query.format(name=_name_of(backend, rp))
    )
    assert response.status_code == 200
    assert (rp in [p["uuid"] for p in response.json()["resource_providers"]]) is found


def test_a_semicolon_separates_parameters_on_every_query_route(backend: Backend) -> None:
    response = backend.request("GET", "/traits?name=startswith:CUSTOM;associated=maybe")
    assert response.status_code == 400
    assert 'The query parameter "associated" only accepts "true" or "false"' in detail(response)
    response = backend.request("GET", "/allocation_candidates?resources=VCPU:1;limit=x")
    assert response.status_code == 400
    assert "Invalid query string parameters: 'x' does not match" in detail(response)
    response = backend.request("GET", "/usages?project_id=a;consumer_type=")
    assert response.status_code == 400
    response = backend.request("GET", "/usages?project_id=a;user_id=")
    assert response.status_code == 400
    assert "Invalid query string parameters: '' should be non-empty" in detail(response)


def test_unknown_traits_are_named_in_placements_order(backend: Backend) -> None:
    rp = backend.create_provider()
    sent = [f"CUSTOM_{c}{uuid.uuid4().hex[:6].upper()}" for c in "ZYXWVA"] + ["HW_CPU_X86_AVX"]
    doc = {"traits": sent, "resource_provider_generation": 0}
    response = backend.request("PUT", f"/resource_providers/{rp}/traits", doc)
    assert response.status_code == 400
    # Placement joins a set difference: the order of this process's string hashes.
    named = ", ".join(set(sent) - {"HW_CPU_X86_AVX"})
    assert detail(response).endswith(f"No such trait {named}  ")


# -- numbers by type, as Placement writes them ----------------------------------------
def test_an_inventory_write_echoes_numbers_as_sent_and_reads_back_stored(
    backend: Backend,
) -> None:
    rp = backend.create_provider({"VCPU": {"total": 4}})
    doc = {"total": 8.0, "allocation_ratio": 2, "resource_provider_generation": 1}
    put = backend.request("PUT", f"/resource_providers/{rp}/inventories/VCPU", doc)
    assert put.status_code == 200
    assert repr((put.json()["total"], put.json()["allocation_ratio"])) == "(8.0, 2)"
    got = backend.request("GET", f"/resource_providers/{rp}/inventories/VCPU").json()
    assert repr((got["total"], got["allocation_ratio"])) == "(8, 2.0)"


def test_an_inventories_write_echoes_numbers_as_sent(backend: Backend) -> None:
    rp = backend.create_provider()
    inv = {"VCPU": {"total": 8.0, "allocation_ratio": 2, "reserved": 1.0}}
    doc = {"inventories": inv, "resource_provider_generation": 0}
    put = backend.request("PUT", f"/resource_providers/{rp}/inventories", doc)
    assert put.status_code == 200
    echoed = put.json()["inventories"]["VCPU"]
    assert repr([echoed[k] for k in ("total", "allocation_ratio", "reserved")]) == "[8.0, 2, 1.0]"
    post = backend.request(
        "POST",
        f"/resource_providers/{rp}/inventories",
        {"resource_class": "DISK_GB", "total": 10.0, "allocation_ratio": 1},
    )
    assert post.status_code == 201
    assert repr((post.json()["total"], post.json()["allocation_ratio"])) == "(10.0, 1)"


# -- wordings ----------------------------------------------------------------------------
@pytest.mark.parametrize("accept", [None, "application/json", "text/html", "text/plain", "*"])
def test_no_token_is_webobs_page_for_the_accept(backend: Backend, accept: str | None) -> None:
    session = requests.Session()
    if backend.fake is not None:
        session.mount(backend.url, backend.fake.transport_adapter())
    headers = {"Accept": accept} if accept else {}
    response = session.get(f"{backend.url}/resource_providers", headers=headers)
    assert response.status_code == 401
    kinds = {
        None: "application/json",
        "application/json": "application/json",
        "text/plain": "text/plain; charset=UTF-8",
    }
    assert response.headers["content-type"] == kinds.get(accept, "text/html; charset=UTF-8")
    assert b"This server could not verify that you are authorized" in response.content


def test_a_system_scoped_token_is_refused_by_rule_name(backend: Backend) -> None:
    response = backend.request(
        "GET", "/resource_providers", headers={"OpenStack-System-Scope": "all"}
    )
    assert response.status_code == 403
    assert detail(response) == (
        "Access was denied to this resource.\n\n placement:resource_providers:list  "
    )


def test_deleting_inventories_in_use_names_them_without_update_conflict(
    backend: Backend,
) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}})
    consumer = new_uuid()
    doc = body({rp: {"VCPU": 1, "MEMORY_MB": 8}})
    assert backend.request("PUT", f"/allocations/{consumer}", doc).ok
    response = backend.request("DELETE", f"/resource_providers/{rp}/inventories")
    assert response.status_code == 409
    assert detail(response) == (
        "There was a conflict when trying to complete your request.\n\n "
        f"Inventory for 'VCPU, MEMORY_MB' on resource provider '{rp}' in use.  "
    )


def test_a_lone_surrogate_where_the_schema_refuses_first(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}})
    doc = '{"name": "a\\ud800b"}'
    response = _raw(backend, "PUT", f"/resource_providers/{rp}/inventories/VCPU", doc, JSON)
    assert response.status_code == 400
    assert "'total' is a required property" in detail(response)


def test_a_lone_surrogate_in_a_project_id(backend: Backend) -> None:
    rp = backend.create_provider({"VCPU": {"total": 8}})
    doc = json.dumps(body({rp: {"VCPU": 1}})).replace("project-a", "p\\ud800")
    response = _raw(backend, "PUT", f"/allocations/{new_uuid()}", doc, JSON)
    _declared_500(backend, response)


# -- error details as Placement words them (issue 50) ---------------------------------
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_a_percent_encoded_trait_name_is_decoded_as_latin1(backend: Backend, method: str) -> None:
    # WSGI's PATH_INFO carries the path's bytes as Latin-1: UTF-8 "é" reads "Ã©".
    response = backend.request(method, "/traits/CUSTOM_%C3%A9")
    if method == "PUT":
        assert response.status_code == 400
        assert "The trait is invalid." in detail(response)
    else:
        assert response.status_code == 404
        assert detail(response) == NOT_FOUND.format("No such trait(s): CUSTOM_\u00c3\u00a9.")


@pytest.mark.parametrize(
    "query",
    [
        "/resource_providers?required={a},{b},{c}",
        "/resource_providers?required=!{a},!{b},!{c}",
        "/allocation_candidates?resources=VCPU:1&required={a},{b},{c}",
        "/allocation_candidates?resources=VCPU:1&required=!{a},!{b},!{c}",
        "/allocation_candidates?resources=VCPU:1&required=in:{a},{b},{c}",
        "/allocation_candidates?resources=VCPU:1&root_required={a},{b},{c}",
    ],
)
def test_several_unknown_traits_are_refused_naming_one(backend: Backend, query: str) -> None:
    # Placement looks the names up from a set and stops at the first unknown one:
    # which it names follows string hashing; the fake names the alphabetically first.
    tag = uuid.uuid4().hex[:8].upper()
    names = [f"CUSTOM_NOPE{i}_{tag}" for i in (3, 1, 2)]
    response = backend.request("GET", query.format(a=names[0], b=names[1], c=names[2]))
    assert response.status_code == 400
    prefix = 'Invalid trait(s) in "required" parameter: ' if "/resource_p" in query else ""
    named = [
        n
        for n in names
        if detail(response) == BAD_REQUEST.format(f"{prefix}No such trait(s): {n}.")
    ]
    assert len(named) == 1
    if backend.fake is not None:
        assert named == [min(names)]


def test_usages_name_the_pattern_an_empty_consumer_type_fails(backend: Backend) -> None:
    response = backend.request("GET", "/usages?project_id=p&consumer_type=")
    assert response.status_code == 400
    assert detail(response).startswith(
        BAD_REQUEST.format(
            "Invalid query string parameters: '' does not match '^[A-Z0-9_]+$|^all|^unknown$'"
        ).rstrip()
    )


@pytest.mark.parametrize(
    "path",
    [
        "/traits?zzz=1&bogus=2",
        "/traits?zzz=1;bogus=2",
        "/resource_providers?zzz=1;bogus=2",
        "/usages?project_id=p&zzz=1&bogus=2",
    ],
)
def test_two_unexpected_parameters_were_unexpected(backend: Backend, path: str) -> None:
    response = backend.request("GET", path)
    assert response.status_code == 400
    assert (
        "Invalid query string parameters: Additional properties are not allowed "
        "('bogus', 'zzz' were unexpected)"
    ) in detail(response)


@pytest.mark.parametrize(
    ("doc", "said"),
    [
        ([], "[] is not of type 'object'"),
        ({"inventories": [], "allocations": {}}, "[] is not of type 'object'"),
        ({"inventories": {}, "allocations": {}}, "{} should be non-empty"),
        (
            {"inventories": {"x": {}}, "allocations": {}},
            "'x' does not match any of the regexes: '^[0-9a-fA-F-]{36}$'",
        ),
    ],
)
def test_reshaper_body_errors_are_jsonschemas(backend: Backend, doc: object, said: str) -> None:
    response = backend.request("POST", "/reshaper", doc, headers={"X-Roles": "service"})
    assert response.status_code == 400
    text = detail(response)
    assert text.startswith(BAD_REQUEST.format(f"JSON does not validate: {said}").rstrip())
    assert "(at " not in text


def test_missing_inventory_names_classes_in_placements_set_order(backend: Backend) -> None:
    # Placement joins a set of class ids (os-resource-classes order for the
    # standard ones): for these small ids that is id order, not request order.
    rp = backend.create_provider({"IPV4_ADDRESS": {"total": 8}})
    doc = body({rp: {"DISK_GB": 1, "MEMORY_MB": 1, "VCPU": 1}})
    response = backend.request("PUT", f"/allocations/{new_uuid()}", doc)
    assert response.status_code == 409
    assert detail(response) == CONFLICT.format(
        "Unable to allocate inventory: Inventory for 'VCPU, MEMORY_MB, DISK_GB' on "
        f"resource provider '{rp}' invalid."
    )
