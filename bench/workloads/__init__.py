"""``python -m bench run``'s workloads 1-7 against one SQLite Placement, and their table."""
