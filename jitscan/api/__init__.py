"""Public functions: the NumPy-like entry points, each a cached prepared scan."""

from __future__ import annotations

from .cache import clear as clear_cache
from .conventions import AxisError
from .flat import memcpy, reduce, scan, source
from .running import cummax, cummin, cumprod, cumsum, cumulative_prod, cumulative_sum, nancumprod, nancumsum
from .segmented import check_offsets, segmented_cumsum, segmented_reduce, segmented_scan

__all__ = [
    "AxisError",
    "check_offsets",
    "clear_cache",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "cumulative_prod",
    "cumulative_sum",
    "memcpy",
    "nancumprod",
    "nancumsum",
    "reduce",
    "scan",
    "segmented_cumsum",
    "segmented_reduce",
    "segmented_scan",
    "source",
]
