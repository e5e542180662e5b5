"""Waiting for a state to be reached, bounded: never a sleep to wait out a race."""

from __future__ import annotations

import threading
from collections.abc import Callable


def until(condition: Callable[[], bool], bound: float = 10.0) -> None:
    """Return once ``condition()`` holds; fail after ``bound`` seconds.

    For states another thread reaches (a writer waiting for its turn), where
    no event is offered to wait on; the wrong code fails here, it does not hang.
    """
    pause = threading.Event()
    for _ in range(int(bound / 0.001)):
        if condition():
            return
        pause.wait(0.001)
    raise AssertionError(f"condition never held within {bound} s")
