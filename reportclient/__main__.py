"""``python -m reportclient demo``."""

import sys

from reportclient._cli import main

sys.exit(main())
