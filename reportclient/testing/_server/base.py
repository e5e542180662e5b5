"""What both SQLite servers show a test, so either one serves where the other did.

:class:`~reportclient.testing.EmbeddedPlacement` and :class:`~reportclient.testing.PlacementServer`
differ in where Placement runs (a thread here, a child process) and so in how the port, the
highest microversion and the requests served are learnt; the address and the token are
the same, and live here once, as does timing a start and undoing a failed one.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable

from reportclient._compat import Self
from reportclient.testing import _app
from reportclient.testing._started import Started

__all__ = ["SQLitePlacement"]


class SQLitePlacement(Started):
    """One Placement (``noauth2``) on ``host:port`` answering one request at a time."""

    _host: str
    #: Seconds the last :meth:`start` took to answer (None before one has).
    startup_seconds: float | None = None

    @property
    @abc.abstractmethod
    def port(self) -> int:
        """The bound TCP port."""

    @property
    def url(self) -> str:
        """Endpoint URL without trailing slash, e.g. ``http://127.0.0.1:40123``."""
        return f"http://{self._host}:{self.port}"

    @property
    def token(self) -> str:
        """``X-Auth-Token`` value that ``noauth2`` maps to an admin user."""
        return _app.ADMIN_TOKEN

    def _timed_start(self, bring_up: Callable[[], None], undo: Callable[[], None]) -> Self:
        """Run ``bring_up``, timed into :attr:`startup_seconds`; on any failure ``undo`` it."""
        began = time.perf_counter()
        try:
            bring_up()
        except BaseException:
            undo()
            raise
        self.startup_seconds = time.perf_counter() - began
        return self
