"""The one number check both the model and the public retry module need.

Apart from :mod:`reportclient._model.validation` because ``reportclient.retry``
(through ``_budget``) may not import the model.
"""

from __future__ import annotations

import math
from typing import TypeGuard

__all__ = ["is_non_negative_number"]


def is_non_negative_number(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is a finite int or float >= 0 (a bool is not a number here)."""
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value >= 0
    )
