"""The examples README.rst and the testing page show, run as written."""

from __future__ import annotations

import pathlib
import re
import textwrap

from reportclient.fixture import make_client

ROOT = pathlib.Path(__file__).resolve().parents[3]
README = ROOT / "README.rst"
TESTING_PAGE = ROOT / "doc" / "source" / "testing.rst"


# --- testing page example starts here ---
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


# --- testing page example ends here ---


def test_testing_page_shows_the_example_verbatim_and_short():
    source = pathlib.Path(__file__).read_text()
    example = source.split("# --- testing page example starts here ---\n")[1]
    example = example.split("# --- testing page example ends here ---")[0].rstrip()
    assert len(example.splitlines()) < 15
    assert textwrap.indent(example, "    ") in TESTING_PAGE.read_text()


def readme_quick_start() -> str:
    """The first Python block under README's "Quick start" heading, dedented."""
    text = README.read_text()
    section = text.split("\nQuick start\n-----------\n", 1)[1]
    block = section.split("\n.. code-block:: python\n\n", 1)[1]
    # the block ends at the first line that is neither blank nor indented
    match = re.search(r"^\S", block, flags=re.MULTILINE)
    return textwrap.dedent(block[: match.start() if match else None])


def test_readme_quick_start_runs_as_written_against_the_fake():
    code = readme_quick_start()
    assert "FakePlacement()" in code  # it is the fake it runs against

    exec(compile(code, f"{README}:Quick start", "exec"), {"__name__": "readme_quick_start"})


def test_readme_gives_the_demo_and_test_commands_before_anything_else():
    text = README.read_text()
    first_section = text.index("\nWhat it is for\n")
    demo = text.index("\n    python3 -m pip install tox && tox -e demo\n")
    suite = text.index("\n    python3 -m pip install tox && tox\n")
    assert demo < suite < first_section
