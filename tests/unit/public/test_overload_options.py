"""The [placement] options of issue 37: the retry budget, and a backoff base that does what it says.

``retry_backoff_base`` was documented as the first backoff of a contended write, which
waits within the engine's window instead; it is now documented as what it is, the first
backoff after Placement did not answer (and before a read is sent again), and shown to be.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests_mock

import reportclient
from reportclient import config
from tests.support.wire import URL
from tests.unit.public.test_config import CONSUMER, make_conf

ADMIN_TOKEN_CONF = (
    f"auth_type = admin_token\nendpoint = {URL}\ntoken = admin\nmicroversion = 1.39\n"
)
PAGE_503: dict[str, Any] = {"status_code": 503, "text": "<html>503 Service Unavailable</html>"}
EMPTY: dict[str, Any] = {"status_code": 200, "json": {"allocations": {}}}


def test_retry_backoff_base_is_the_first_backoff_after_placement_did_not_answer(
    tmp_path: Any, wire: requests_mock.Mocker
) -> None:
    conf = make_conf(tmp_path, ADMIN_TOKEN_CONF + "retry_backoff_base = 0.25\n")
    wire.get(f"{URL}/allocations/{CONSUMER}", [PAGE_503, EMPTY])
    client = config.client_from_conf(conf)
    slept: list[float] = []
    client._core.retry.sleep = slept.append  # the policy the builder made, its sleep recorded

    client.get_allocations(CONSUMER)

    assert len(slept) == 1 and 0 <= slept[0] <= 0.25


def test_retry_backoff_bases_help_says_what_it_does() -> None:
    [(_, opts)] = config.list_opts()
    text = {opt.dest: opt.help for opt in opts}["retry_backoff_base"]

    assert "did not answer" in text
    assert "does not change" in text  # the contention window is the engine's


def test_the_budget_options_shape_the_clients_budget(
    tmp_path: Any, wire: requests_mock.Mocker
) -> None:
    conf = make_conf(
        tmp_path, ADMIN_TOKEN_CONF + "retry_budget_ratio = 0\nretry_budget_floor = 0\n"
    )
    wire.get(f"{URL}/allocations/{CONSUMER}", [PAGE_503, EMPTY])
    client = config.client_from_conf(conf)

    with pytest.raises(reportclient.PlacementOverloaded):
        client.get_allocations(CONSUMER)

    budget = client._core.budget
    assert budget is not None and (budget.ratio, budget.floor) == (0.0, 0.0)


def test_the_budget_options_default_to_the_librarys() -> None:
    [(_, opts)] = config.list_opts()
    own = {opt.dest: opt for opt in opts}

    assert own["retry_budget_ratio"].default == reportclient.retry.DEFAULT_BUDGET_RATIO
    assert own["retry_budget_floor"].default == reportclient.retry.DEFAULT_BUDGET_FLOOR
    assert own["retry_budget_ratio"].help and own["retry_budget_floor"].help


def test_a_budget_keyword_wins_over_the_options(tmp_path: Any) -> None:
    conf = make_conf(tmp_path, ADMIN_TOKEN_CONF + "retry_budget_ratio = 0\n")
    mine = reportclient.RetryBudget(ratio=0.5)

    assert config.client_from_conf(conf, retry_budget=mine)._core.budget is mine
