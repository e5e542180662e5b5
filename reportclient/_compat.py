"""The typing names Python 3.10 lacks, from one place.

``Self`` and ``Unpack`` are in :mod:`typing` from 3.11; on 3.10 they come
from ``typing_extensions`` (a dependency for that version only).
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from typing import Self, Unpack
else:  # Python 3.10
    from typing_extensions import Self, Unpack

__all__ = ["Self", "Unpack"]
