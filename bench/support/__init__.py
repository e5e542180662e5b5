"""What every benchmark shares: machine facts, statistics, request counting, the server."""
