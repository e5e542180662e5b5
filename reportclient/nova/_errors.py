"""nova's exception types, raised only when nova is importable.

Every failure the adapter reports starts as one of reportclient's typed
errors (:mod:`reportclient.errors`). Inside nova it is raised as the
``nova.exception`` type nova's ``SchedulerReportClient`` raises for the
same case, with the typed error as its ``__cause__``, so nova's callers
keep their ``except`` clauses. Without nova (a tool or test using the
adapter on its own) the typed error itself is raised: the table of which
is which is in doc/source/nova_adapter.rst. nova is looked up when an error
is raised, never when this module is imported.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, NoReturn

from reportclient.errors import PlacementError

__all__ = ["fail", "nova_exceptions"]


def nova_exceptions() -> ModuleType | None:
    """``nova.exception`` if nova is installed, else None."""
    try:
        return importlib.import_module("nova.exception")
    except ImportError:
        return None


def fail(name: str, cause: PlacementError, /, *args: Any, **kwargs: Any) -> NoReturn:
    """Raise nova's ``exception.<name>(*args, **kwargs)`` from ``cause``, or ``cause`` without nova.

    :raises PlacementError: ``cause``, when nova is not importable.
    """
    module = nova_exceptions()
    kind = getattr(module, name, None) if module is not None else None
    if kind is None:
        raise cause
    raise kind(*args, **kwargs) from cause
