"""The value model: what Placement holds and what callers ask for, typed and validated.

Frozen values (consumers, providers, candidates, usages, reshapes, provider
trees), every input rule once (:mod:`.validation`) and every microversion
once (:mod:`.microversions`). Nothing here does I/O or knows HTTP; the
engine and the clients build on it.
"""
