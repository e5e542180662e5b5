"""One Placement on SQLite serving one request at a time, in this process or in a child.

- :class:`EmbeddedPlacement` (``embedded``): a daemon thread in this process on in-memory
  SQLite; fast, and it records every request and Placement's own log lines.
- :class:`PlacementServer` (``process``): a child process (``serve``) on a SQLite file in a
  temporary directory; it can be killed (a real crash) and restarted on the same port with the
  same data.

Both run ``wsgi``'s single-threaded loopback server, because SQLite allows one writer.
Needs the ``placement`` extra (``openstack-placement``); no OS package, no database server.
``serve`` is the child's ``__main__`` and is not imported here, so that ``python -m`` runs it
fresh.
"""

from reportclient.testing._server.embedded import EmbeddedPlacement
from reportclient.testing._server.process import PlacementServer
from reportclient.testing._server.wsgi import LogLine, RequestRecord

__all__ = [
    "EmbeddedPlacement",
    "LogLine",
    "PlacementServer",
    "RequestRecord",
]
