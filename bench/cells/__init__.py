"""The production shape: Placement behind gunicorn workers on MariaDB, PostgreSQL or Galera."""
