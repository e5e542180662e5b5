"""Another writer acting between two of the client's requests on the fake, exactly once."""

from __future__ import annotations

from collections.abc import Callable

from reportclient.fixture import FakePlacement, RequestRecord

__all__ = ["is_get", "once_after"]


def is_get(record: RequestRecord) -> bool:
    return record.method == "GET"


def once_after(
    fake: FakePlacement,
    matches: Callable[[RequestRecord], bool],
    action: Callable[[FakePlacement], object],
) -> None:
    """Run ``action(fake)`` right after the first answered request that ``matches``."""
    done: list[bool] = []

    def hook(fake_: FakePlacement, record: RequestRecord) -> None:
        if not done and matches(record):
            done.append(True)
            action(fake_)

    fake.between_requests(hook)
