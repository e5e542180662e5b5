"""The clients a workload drives: reportclient, the bare floors and nova, behind one interface."""
