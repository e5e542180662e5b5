"""What a tree view handed out, so that a flush is judged against the tree its caller saw.

nova's resource tracker asks for the tree, changes the copy it got and
hands that very object back to be flushed. What the tracker changed is the
difference between its tree and the copy it was handed, not between its
tree and whatever the view holds by the time of the flush: another call of
the same client (``get_provider_traits`` on a service enable, an aggregate
read through a shared client) may have refreshed the view in between with
another writer's trait, which the tracker's unchanged tree would otherwise
"remove". So the view remembers, for each object it handed out, the
providers as handed (:meth:`Handouts.bind`), and for each provider what it
showed at each recent generation (:meth:`Handouts.handed`), for a tree that
comes back as a copy or from elsewhere and can only be judged by the
generations it carries (:func:`~.view_plan.base_of`).

A bound object is held weakly: a tracker's tree lives one period. The
object's base moves only with the flushes of that object (what they wrote,
or what a conflict made them read: the caller was told and flushes again
on purpose, as nova's callers do), never with another call's read.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Mapping

from reportclient._model.tree_view import ProviderView

__all__ = ["Handouts"]


class Handouts:
    """Thread-safe: the objects handed out with their base, and each provider's recent showings."""

    #: Generations of one provider remembered: a tracker flushes its tree within
    #: its period, while allocations on a busy node move the generation meanwhile.
    GENERATIONS = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bound: dict[int, tuple[weakref.ref[object], dict[str, ProviderView]]] = {}
        # uuid -> {generation: what was shown at it, None when two showings differed}
        self._by_generation: dict[str, dict[int, ProviderView | None]] = {}
        self._last: dict[str, ProviderView] = {}

    def record(self, providers: Iterable[ProviderView]) -> None:
        """These providers were handed out (or written by a flush) as they are."""
        with self._lock:
            for p in providers:
                shown = self._by_generation.setdefault(p.uuid, {})
                if p.generation in shown and shown[p.generation] != p:
                    # The same generation with other content: an aggregate set
                    # below 1.19 between two showings. Neither may stand for it.
                    shown[p.generation] = None
                else:
                    shown[p.generation] = p
                while len(shown) > self.GENERATIONS:
                    del shown[min(shown)]
                self._last[p.uuid] = p

    def bind(self, holder: object, providers: Iterable[ProviderView]) -> None:
        """``holder`` (the object handed out) was computed from ``providers``."""
        try:
            ref = weakref.ref(holder, self._dropper(id(holder)))
        except TypeError:
            return  # not weakly referable: judged by its generations alone
        with self._lock:
            self._bound[id(holder)] = (ref, {p.uuid: p for p in providers})

    def rebase(self, holder: object | None, providers: Iterable[ProviderView]) -> None:
        """A flush of ``holder`` left these providers so: its next flush starts from them."""
        providers = list(providers)
        self.record(providers)
        if holder is None:
            return
        with self._lock:
            found = self._bound.get(id(holder))
            if found is not None and found[0]() is holder:
                found[1].update({p.uuid: p for p in providers})
                return
        self.bind(holder, providers)

    def bound(self, holder: object | None) -> Mapping[str, ProviderView] | None:
        """The providers ``holder`` was computed from, if this view handed it out."""
        if holder is None:
            return None
        with self._lock:
            found = self._bound.get(id(holder))
            if found is None or found[0]() is not holder:
                return None
            return dict(found[1])

    def handed(self, uuid: str, generation: int) -> tuple[ProviderView | None, bool]:
        """What was shown of ``uuid`` at ``generation``, and whether two showings differed."""
        with self._lock:
            shown = self._by_generation.get(uuid, {})
            if generation not in shown:
                return None, False
            found = shown[generation]
            return found, found is None

    def last(self, uuid: str) -> ProviderView | None:
        """The provider as last handed out or flushed; None if this view never showed it."""
        with self._lock:
            return self._last.get(uuid)

    def _dropper(self, key: int) -> Callable[[weakref.ref[object]], None]:
        def drop(_ref: weakref.ref[object]) -> None:
            with self._lock:
                found = self._bound.get(key)
                if found is not None and found[0] is _ref:
                    del self._bound[key]

        return drop
