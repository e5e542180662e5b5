"""``python -m reportclient demo``."""

import sys

from reportclient.cli import main

sys.exit(main())
