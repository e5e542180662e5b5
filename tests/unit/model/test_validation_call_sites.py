"""Every public call that takes a value applies that value's one rule, before the wire.

The rules themselves are tabled in ``test_validation_rules.py``; here each call that takes
an owner, a name, an amount, a trait filter or a generation is shown refusing a value the
rule refuses, with nothing sent (requests-mock records no request).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import requests_mock

import reportclient
from reportclient import CandidatesQuery, ProviderSpec
from tests.support.wire import PROJECT, URL, USER, new_uuid

RP = new_uuid()
NUL = "x\x00y"
LONG_CLASS = "CUSTOM_" + "X" * 249

Call = Callable[[reportclient.PlacementClient], Any]

CALLS: list[tuple[str, Call, str]] = [
    (
        "claim-project-nul",
        lambda c: c.claim(new_uuid(), {RP: {"VCPU": 1}}, project_id=NUL, user_id=USER),
        "project_id must not contain a NUL",
    ),
    (
        "put_allocations-user-nul",
        lambda c: c.put_allocations(
            new_uuid(), {RP: {"VCPU": 1}}, consumer_generation=None, project_id=PROJECT, user_id=NUL
        ),
        "user_id must not contain a NUL",
    ),
    (
        "put_allocations-generation-2**31",
        lambda c: c.put_allocations(
            new_uuid(),
            {RP: {"VCPU": 1}},
            consumer_generation=2**31,
            project_id=PROJECT,
            user_id=USER,
        ),
        "consumer_generation",
    ),
    (
        "claim-class-256",
        lambda c: c.claim(new_uuid(), {RP: {LONG_CLASS: 1}}, project_id=PROJECT, user_id=USER),
        "resource class.*255",
    ),
    (
        "usages-project-nul",
        lambda c: c.get_usages(NUL),
        "project_id must not contain a NUL",
    ),
    (
        "candidates-class-256",
        lambda c: c.get_allocation_candidates(CandidatesQuery(resources={LONG_CLASS: 1})),
        "resource class.*255",
    ),
    (
        "create_provider-nul",
        lambda c: c.providers.create_provider(NUL),
        "provider name must not contain a NUL",
    ),
    (
        "update_provider-nul",
        lambda c: c.providers.update_provider(RP, name=NUL),
        "provider name must not contain a NUL",
    ),
    (
        "reconcile-nul",
        lambda c: c.providers.reconcile([ProviderSpec(RP, NUL)]),
        "provider name must not contain a NUL",
    ),
    (
        "list_providers-name-nul",
        lambda c: c.providers.list_providers(name=NUL),
        "name must not contain a NUL",
    ),
    (
        "list_providers-required-string",
        lambda c: c.providers.list_providers(required="HW_CPU_X86_AVX2"),
        "required must be an iterable",
    ),
    (
        "list_providers-required-and-forbidden",
        lambda c: c.providers.list_providers(required=["HW_CPU_X86_AVX2", "!HW_CPU_X86_AVX2"]),
        "both requires and forbids",
    ),
    (
        "list_providers-amount-2**63",
        lambda c: c.providers.list_providers(resources={"VCPU": 2**63}),
        "amount of VCPU in resources",
    ),
    (
        "list_providers-class-256",
        lambda c: c.providers.list_providers(resources={LONG_CLASS: 1}),
        "resource class.*255",
    ),
    (
        "list_providers-member_of-string",
        lambda c: c.providers.list_providers(member_of=RP),
        "member_of aggregates must be an iterable",
    ),
    (
        "list_providers-member_of-empty",
        lambda c: c.providers.list_providers(member_of=[]),
        "member_of needs at least one",
    ),
    (
        "list_providers-in_tree",
        lambda c: c.providers.list_providers(in_tree="x" * 36),
        "in_tree",
    ),
    (
        "set_inventory-total-0",
        lambda c: c.providers.set_inventory(RP, "VCPU", {"total": 0}),
        "total",
    ),
    (
        "set_inventory-reserved-above-total",
        lambda c: c.providers.set_inventory(RP, "VCPU", {"total": 4, "reserved": 5}),
        "reserved",
    ),
    (
        "set_inventories-step_size-0",
        lambda c: c.providers.set_inventories(RP, {"VCPU": {"total": 4, "step_size": 0}}),
        "step_size",
    ),
    (
        "set_traits-256",
        lambda c: c.providers.set_traits(RP, ["T" * 256]),
        "trait",
    ),
]


@pytest.mark.parametrize(("call", "refused"), [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
def test_the_call_refuses_before_any_request(
    wire: requests_mock.Mocker, client: reportclient.PlacementClient, call: Call, refused: str
) -> None:
    with pytest.raises(reportclient.InvalidInput, match=refused):
        call(client)
    assert wire.request_history == []


def test_list_providers_sends_each_filter_once_checked(
    wire: requests_mock.Mocker, client: reportclient.PlacementClient
) -> None:
    wire.get(f"{URL}/resource_providers", json={"resource_providers": []})
    aggregate = new_uuid()

    client.providers.list_providers(
        required=["!HW_CPU_X86_SSE", "HW_CPU_X86_AVX2"],
        resources={"VCPU": 2, "MEMORY_MB": 512},
        member_of=[aggregate.upper()],
    )

    query = wire.request_history[-1].qs
    assert query["required"] == ["!hw_cpu_x86_sse,hw_cpu_x86_avx2"]
    assert query["resources"] == ["vcpu:2,memory_mb:512"]
    assert query["member_of"] == [f"in:{aggregate}"]
