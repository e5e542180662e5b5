"""The clients callers hold: :class:`.placement.PlacementClient` and its ``providers``.

They validate input, build the engine's writes and run them under the
caller's retry policy; what each write does is the engine's.
"""
