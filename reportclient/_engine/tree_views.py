"""A provider-tree view: nova's ``ProviderTree`` cache, kept from what the gateway proved.

nova's resource tracker asks its report client for the compute node's tree
every period, changes it, and hands it back to be flushed. nova's client
keeps that tree in memory, hands out a copy without a request while its
association refresh window lasts, and flushes only the fields that differ
from it, each at the generation it holds. :class:`TreeViews` is that cache
on reportclient's engine, with three differences that make it safe:

* **It holds no state of its own** (:mod:`.view_state`). Which providers
  make up a tree comes from the gateway's provider records, and what each
  holds from the provider cache, so the view is invalidated by exactly the
  answers that invalidate those (a conflict, a lost answer, a raw write, a
  delete, a class renamed): what was forgotten is read again before the
  view is handed out, inside the window too.
* **Every write Placement accepts is seen within the window**
  (:mod:`.tree_proof`): past it, one listing proves what a listing can,
  and what no listing sees (aggregates set below 1.19, a custom class
  renamed) is read or proven by the class listing (:mod:`.proofs`).
* **A flush writes only what the caller changed** (:mod:`.tree_flush`),
  against the tree it handed out (:mod:`.handouts`), never against a view
  another call refreshed since: another writer's change is kept, or is a
  :class:`~reportclient.errors.ProviderChanged` (nova's
  ``ResourceProviderUpdateConflict``); a provider the caller's tree never
  saw is never removed, and a stale tree never overwrites.

What that costs, against nova's client, is in doc/source/nova_adapter.rst.
"""

from __future__ import annotations

from reportclient._engine.tree_flush import ViewFlush
from reportclient._engine.tree_proof import SHARES_VIA_AGGREGATE
from reportclient._model.tree_view import TreeView
from reportclient._model.validation import validate_uuid

__all__ = ["SHARES_VIA_AGGREGATE", "TreeViews"]


class TreeViews(ViewFlush):
    """One caller's view of provider trees (nova's ``ProviderTree`` cache): hand out, flush.

    Made by :meth:`ProviderClient.views <reportclient.ProviderClient.views>`;
    its parameters and state are :class:`~.view_state.ViewState`'s.
    """

    # -- handing the view out -------------------------------------------------------------
    def ensure(
        self,
        uuid: str,
        *,
        name: str | None = None,
        parent: str | None = None,
        request_id: str | None = None,
    ) -> TreeView:
        """Hand out every tree in view, ``uuid``'s proven within its window (created when missing).

        nova's ``get_provider_tree_and_ensure_root``: while ``uuid`` and
        every provider of its tree are within the window, no request (but
        for what the gateway forgot since); past it, one listing of the tree
        and one query for the sharing providers of its aggregates prove it
        again, reading only the fields they cannot prove.

        :raises DuplicateName: ``uuid`` is missing and ``name`` is another provider's.
        """
        uuid = validate_uuid(uuid, "uuid")
        now, window = self._clock(), self._window()
        record = self._gateway.provider_record(uuid)
        members = None
        if record is not None:
            root = record.root_provider_uuid or record.uuid
            with self._lock:
                shown = root in self._roots
            members = self._gateway.tree_members(root) if shown else None
        if members is None or self._stale([m.uuid for m in members], now, window):
            self._prove(uuid, name, parent, request_id)
        view = self.current(request_id=request_id)
        self._handouts.record(view)
        return view

    def bind(self, holder: object, view: TreeView) -> None:
        """``holder`` (what the caller was handed, nova's ``ProviderTree``) holds ``view``.

        A flush of that very object (``holder=``) then writes what it
        changed relative to ``view``, whatever the view holds by then.
        """
        self._handouts.record(view)
        self._handouts.bind(holder, view)

    def invalidate(self, uuid: str, *, keep: bool = False) -> None:
        """Make ``uuid`` stale; unless ``keep``, drop it and what hangs from it from the view.

        nova's ``invalidate_resource_provider(name_or_uuid, cacheonly)``:
        dropped, the provider is read again (listed, and its fields proven)
        the next time its tree is asked for. No request is made.
        """
        inside = {uuid}
        for rp, _sharing in self.shown():  # parents first
            if rp.parent_provider_uuid in inside:
                inside.add(rp.uuid)
        with self._lock:
            for member in inside:
                self._refreshed.pop(member, None)
            if not keep:
                self._roots.pop(uuid, None)
        if not keep:
            for member in inside:
                self._gateway.forget_provider(member)

    def clear(self) -> None:
        """Drop every tree from the view (nova's ``clear_provider_cache``).

        The next call proves each tree it asks for as if it were new: one
        listing, and every field that listing does not prove read again.
        """
        with self._lock:
            self._roots.clear()
            self._refreshed.clear()
