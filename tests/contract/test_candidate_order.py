"""Candidate order: ``candidate_order="stable"`` answers in Placement's order.

Placement promises no order. Its answer is a Python ``set`` of allocation
requests hashed on (provider row id, class name, amount), so with the few
providers of a fresh test database it is mostly creation order, and in
general it moves with ``PYTHONHASHSEED``. The stable fake answers in
provider creation order, the order suites written against Placement's
fixture (nova's scheduler takes the first candidate) mostly saw. Both
sides answer the same candidates; only the fake pins the order.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reportclient.fixture import FakePlacement

from . import Backend, new_uuid
from .test_sharing_and_catalogue import SHARES, _candidates, _provider


@pytest.fixture
def ordered(backend: Backend) -> Iterator[Backend]:
    """The backend; for the fake, one in ``candidate_order="stable"``."""
    if backend.fake is None:
        yield backend
        return
    fake = FakePlacement(candidate_order="stable")
    session = backend.session
    session.mount(fake.url, fake.transport_adapter())
    yield Backend(backend.name, fake.url, session, fake=fake)


def _check_order(backend: Backend, doc: dict[str, object], expected: list[list[str]]) -> None:
    requests = doc["allocation_requests"]
    assert isinstance(requests, list)
    got = [sorted(req["allocations"]) for req in requests]
    want = [sorted(providers) for providers in expected]
    assert sorted(got) == sorted(want)
    if backend.fake is not None:
        assert got == want


def test_flat_candidates_come_in_provider_creation_order(ordered: Backend) -> None:
    agg = new_uuid()
    made = [_provider(ordered, {"VCPU": 8}, aggregates=[agg]) for _ in range(5)]

    doc = _candidates(ordered, f"resources=VCPU:1&member_of={agg}")

    _check_order(ordered, doc, [[rp] for rp in made])


def test_suffixed_group_candidates_come_in_provider_creation_order(ordered: Backend) -> None:
    agg = new_uuid()
    made = [_provider(ordered, {"VCPU": 8}, aggregates=[agg]) for _ in range(4)]

    doc = _candidates(ordered, f"resources_A=VCPU:1&member_of_A={agg}&group_policy=none")

    _check_order(ordered, doc, [[rp] for rp in made])


def test_trees_with_a_sharing_provider_come_in_root_creation_order(ordered: Backend) -> None:
    agg = new_uuid()
    roots = [_provider(ordered, {"VCPU": 8}, aggregates=[agg]) for _ in range(3)]
    ss = _provider(ordered, {"DISK_GB": 100}, traits=[SHARES], aggregates=[agg])
    kids = [_provider(ordered, {"MEMORY_MB": 1024}, parent=rp) for rp in roots]

    doc = _candidates(ordered, f"resources=VCPU:1,DISK_GB:10&member_of={agg}")
    _check_order(ordered, doc, [[rp, ss] for rp in roots])

    doc = _candidates(ordered, f"resources=VCPU:1,MEMORY_MB:8&member_of={agg}")
    _check_order(ordered, doc, [[rp, kid] for rp, kid in zip(roots, kids, strict=True)])
