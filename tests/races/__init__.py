"""Production-shaped race and chaos suite: real Placement, 4 gunicorn workers, MariaDB and
PostgreSQL, many client processes; every test ends with invariants read back from Placement."""
