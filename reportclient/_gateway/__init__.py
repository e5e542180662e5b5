"""The gateway: every Placement route, and the only code that updates a cache.

Between the engine and the wire. :mod:`.gateway` sends every request and
tells the caches what each answer (or lost answer) proved; :mod:`.routes`
spells every path; :mod:`.ordering` is the one rule for answers that
overlap (pure, table-tested); :mod:`.consumer_cache` and
:mod:`.provider_cache` hold what it stored; :mod:`.wire` is the transport
protocol it needs.
"""
