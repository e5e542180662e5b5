"""The fake-Placement example README.rst shows, run as written."""

from __future__ import annotations

import pathlib
import textwrap

from reportclient.fixture import make_client

README = pathlib.Path(__file__).resolve().parents[2] / "README.rst"


# --- README example starts here ---
def test_unshelve_survives_shelve_offload(fake_placement):
    rp = fake_placement.create_provider(inventory={"VCPU": 8})
    vm = "6f1c1a3e-5b7d-4c2e-9a4f-0d2b8e1c7a55"
    client = make_client(fake_placement, microversion="1.39", cache_ttl=60)
    client.claim(vm, {rp: {"VCPU": 1}}, project_id="p", user_id="u")
    # shelve-offload: another service empties the consumer, deleting it
    fake_placement.put_allocations(vm, {}, project_id="p", user_id="u")
    fake_placement.reset_requests()
    state = client.claim(vm, {rp: {"VCPU": 1}}, project_id="p", user_id="u")
    assert state.generation == 1
    assert [r.status for r in fake_placement.requests] == [409, 200, 204]


# --- README example ends here ---


def test_readme_shows_the_example_verbatim_and_short():
    source = pathlib.Path(__file__).read_text()
    example = source.split("# --- README example starts here ---\n")[1]
    example = example.split("# --- README example ends here ---")[0].rstrip()
    assert len(example.splitlines()) < 15
    assert textwrap.indent(example, "    ") in README.read_text()
