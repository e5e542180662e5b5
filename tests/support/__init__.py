"""Test code the suites share: the fault proxy, mutants, the scripted wire and Placement's
answers, client builders, hooks, waiting, neighbours' options, input tables, the eventlet runner."""
