"""The ``with`` protocol every server, cluster and proxy of the harness shares.

Each one is started by the test and must be stopped whatever the test did, so each is a
context manager whose exit stops it; one base says so instead of six copies, and says
once what asking a stopped one for its port, process or directory raises.
"""

from __future__ import annotations

import abc
from typing import TypeVar

from reportclient._compat import Self

__all__ = ["Started"]

T = TypeVar("T")


class Started(abc.ABC):
    """Something a test starts and stops: ``with`` starts it and stops it, also on error."""

    @abc.abstractmethod
    def start(self) -> Self:
        """Start, wait until ready and return ``self``."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop and clean up; safe to call twice and after a failed :meth:`start`."""

    def __enter__(self) -> Self:
        """Start."""
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        """Stop, also when the body raised."""
        self.stop()

    def _started(self, value: T | None) -> T:
        """``value``, which only a started instance has (a port, a process, a directory).

        :raises RuntimeError: ``value`` is None or 0: not started, or stopped since.
        """
        if value is None or value == 0:
            raise RuntimeError(f"{type(self).__name__} is not running (not started, or stopped)")
        return value
