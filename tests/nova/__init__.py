"""nova's own functional tests run against reportclient.nova (``tox -e nova``)."""
