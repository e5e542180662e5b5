"""The demo narrates the shelve race and exits 0 only when the library recovered."""

from __future__ import annotations

import io
import re

from reportclient import _cli as cli
from reportclient._demo import run_demo


def test_demo_on_the_fake_recovers_and_shows_the_failure_without_retries():
    out = io.StringIO()

    status = run_demo("fake", out=out)

    text = out.getvalue()
    assert status == 0
    assert "RECOVERED" in text
    assert "FAILED after 1 attempt(s)" in text
    # the recovering claim: PUT 409, GET (missing), PUT 204 with null
    recovery = re.search(
        r"PUT /allocations/\S+ -> 409 .*expected null but got 1\n"
        r".*GET /allocations/\S+ -> 200  saw generation null \(consumer does not exist\)\n"
        r".*PUT /allocations/\S+ -> 204  sent allocations with generation null\n",
        text,
    )
    assert recovery is not None, text


def test_cli_demo_on_the_fake_exits_zero(capsys):
    assert cli.main(["demo", "--placement", "fake"]) == 0
    assert "OK: reportclient recovered" in capsys.readouterr().out
