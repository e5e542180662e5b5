"""The model checkers: the write machine and the concurrent machine, each with its model."""
