"""The production-cluster suite: Placement on three Galera nodes behind HAProxy (tox -e galera)."""
