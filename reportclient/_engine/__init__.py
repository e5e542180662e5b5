"""The engine: every generation-guarded write on one attempt skeleton, and its caches.

:mod:`.fate` decides what a lost answer proves (pure, no I/O);
:mod:`.guarded_write` is the attempt skeleton (read, plan, send, settle)
and the loop that runs it under a retry policy; the writes built on it are
one consumer (:mod:`.consumer_write`), several in one POST
(:mod:`.batch_write`), a provider field (:mod:`.field_write`) and a reshape
(:mod:`.reshape_write`); moves are plans over a batch write
(:mod:`.moves`); reconcile drives field writes over a tree
(:mod:`.reconcile`). The engine talks to Placement through the gateway
(:mod:`reportclient._gateway`) and never sees HTTP.
"""
