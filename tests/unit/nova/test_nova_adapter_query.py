"""nova's ResourceRequest query strings read into CandidatesQuery: the same query, validated."""

from __future__ import annotations

import pytest

from reportclient import CandidatesQuery, InvalidInput, RequestGroup, any_of
from reportclient.nova import query_from_string, query_of

AGG_A = "8d7f3d3c-1111-4111-8111-111111111111"
AGG_B = "8d7f3d3c-1111-4111-8111-111111111112"
RP = "8d7f3d3c-1111-4111-8111-111111111113"

# What nova 34's ResourceRequest.to_querystring() writes, and the query it stands for.
CASES = [
    (
        "limit=1000&resources=DISK_GB:1,MEMORY_MB:512,VCPU:1",
        CandidatesQuery(resources={"DISK_GB": 1, "MEMORY_MB": 512, "VCPU": 1}, limit=1000),
    ),
    (
        "required=HW_CPU_X86_AVX,!CUSTOM_SLOW&required=in:CUSTOM_A,CUSTOM_B&resources=VCPU:2",
        CandidatesQuery(
            resources={"VCPU": 2},
            required=("HW_CPU_X86_AVX", any_of("CUSTOM_A", "CUSTOM_B")),
            forbidden={"CUSTOM_SLOW"},
        ),
    ),
    (
        f"member_of=in:{AGG_A},{AGG_B}&member_of=!in:{AGG_B}&member_of={AGG_A}&resources=VCPU:1",
        CandidatesQuery(
            resources={"VCPU": 1},
            member_of=(any_of(AGG_A, AGG_B), AGG_A),
            not_member_of={AGG_B},
        ),
    ),
    (
        "group_policy=isolate&resources=VCPU:1"
        "&resources_port1=NET_BW_EGR_KILOBIT_PER_SEC:1000&required_port1=CUSTOM_PHYSNET_A"
        f"&in_tree_port1={RP}&same_subtree=_port1&root_required=COMPUTE_STATUS_ENABLED,!FOO",
        CandidatesQuery(
            resources={"VCPU": 1},
            groups={
                "_port1": RequestGroup(
                    resources={"NET_BW_EGR_KILOBIT_PER_SEC": 1000},
                    required=("CUSTOM_PHYSNET_A",),
                    in_tree=RP,
                )
            },
            group_policy="isolate",
            same_subtree=(("_port1",),),
            root_required={"COMPUTE_STATUS_ENABLED"},
            root_forbidden={"FOO"},
        ),
    ),
]


@pytest.mark.parametrize(("query", "expected"), CASES)
def test_novas_query_string_is_read_as_the_same_query(
    query: str, expected: CandidatesQuery
) -> None:
    assert query_from_string(query).params() == expected.params()


@pytest.mark.parametrize(
    "bad",
    [
        "resources=VCPU",  # no amount
        "resources=VCPU:1&color=blue",  # no such parameter
        "resources=VCPU:1&limit=ten",
        "resources=VCPU:1&group_policy=sometimes",
        "resources=vcpu:1",  # not a resource class name
    ],
)
def test_a_query_placement_would_refuse_is_refused_before_the_wire(bad: str) -> None:
    with pytest.raises(InvalidInput):
        query_from_string(bad)


def test_anything_without_to_querystring_is_no_resource_request() -> None:
    with pytest.raises(InvalidInput, match="ResourceRequest"):
        query_of({"resources": {"VCPU": 1}})
