"""Run pytest with every standard module green: ``python -m tests.support.eventlet_run ARGS``.

nova-compute and the services built on oslo.service's eventlet backend call
``eventlet.monkey_patch()`` before anything imports ``threading`` or ``socket``; the client then
shares one ``PlacementClient`` between green threads, its locks, events and keystoneauth's
sockets all eventlet's. Patching from a pytest plugin or a conftest would come after pytest has
imported ``threading``, so this module patches first and starts pytest second (``tox -e
eventlet``). The patch runs at import, outside the ``__main__`` guard, so that a process spawned
by ``multiprocessing`` (which imports this module as ``__mp_main__``) is patched the same way.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    # eventlet 0.36+ warns at import that it is deprecated (its own Warning subclass, not a
    # DeprecationWarning); nova still runs on it.
    warnings.filterwarnings("ignore", message="\nEventlet is deprecated", category=Warning)
    import eventlet

eventlet.monkey_patch()

import sys  # noqa: E402 - after the patch, as nova's own entry points do

import pytest  # noqa: E402


def patched() -> bool:
    """Whether this process runs green: sockets, threads and sleeps are eventlet's."""
    return all(eventlet.patcher.is_monkey_patched(name) for name in ("socket", "thread", "time"))


if __name__ == "__main__":
    if not patched():
        sys.exit("eventlet.monkey_patch() did not patch socket, thread and time")
    sys.exit(pytest.main(sys.argv[1:]))
