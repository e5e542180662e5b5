"""Test code the suites share: the fault proxy, mutants, waiting, neighbours' options."""
