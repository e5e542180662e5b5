"""A rename whose answer is lost is settled by reading the provider: the PUT is unguarded."""

from __future__ import annotations

import pytest
import requests
import requests_mock

import reportclient
from tests.support.wire import URL, new_uuid

TIMEOUT = {"exc": requests.exceptions.ReadTimeout("slow")}


def provider(uuid: str, name: str, parent: str | None = None) -> dict[str, object]:
    body = {
        "uuid": uuid,
        "name": name,
        "generation": 3,
        "parent_provider_uuid": parent,
        "root_provider_uuid": parent or uuid,
        "links": [],
    }
    return {"status_code": 200, "json": body}


def test_a_lost_rename_that_landed_is_the_provider_as_read(
    wire: requests_mock.Mocker, client: reportclient.PlacementClient
) -> None:
    rp, parent = new_uuid(), new_uuid()
    wire.put(f"{URL}/resource_providers/{rp}", [TIMEOUT])
    wire.get(f"{URL}/resource_providers/{rp}", [provider(rp, "cn-2", parent)])

    renamed = client.providers.update_provider(rp, name="cn-2", parent_provider_uuid=parent)

    assert (renamed.name, renamed.parent_provider_uuid) == ("cn-2", parent)
    assert [r.method for r in wire.request_history] == ["PUT", "GET"]


def test_a_lost_rename_not_seen_by_the_read_may_still_land(
    wire: requests_mock.Mocker, client: reportclient.PlacementClient
) -> None:
    rp = new_uuid()
    wire.put(f"{URL}/resource_providers/{rp}", [TIMEOUT])
    wire.get(f"{URL}/resource_providers/{rp}", [provider(rp, "cn-1")])

    with pytest.raises(reportclient.PlacementUnavailable) as caught:
        client.providers.update_provider(rp, name="cn-2")

    assert caught.value.outcome_unknown
    assert [r.method for r in wire.request_history] == ["PUT", "GET"]  # never re-sent
