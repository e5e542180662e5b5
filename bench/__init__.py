"""reportclient's benchmarks, one tool: ``python -m bench <subcommand> [options]``.

Run from the repository root (``python -m bench --help`` lists the subcommands; each has its
own ``--help``). The entries are the modules named after their subcommand; the rest is
grouped by what it is:

* ``support/``: machine facts, statistics, request counting, the SQLite Placement server;
* ``drivers/``: the clients a workload drives (reportclient, the bare floors, nova);
* ``workloads/``: ``run``'s workloads 1-7 against one SQLite Placement, and their table;
* ``cells/``: the production shape (gunicorn workers over MariaDB or PostgreSQL, Galera).

The library is reached through its public API and ``reportclient.testing``; the two
exceptions (``memory`` measures the consumer cache itself, ``model`` runs the engine's own
contention windows) say why in their docstrings.
"""
