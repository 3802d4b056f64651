"""Public functions: the NumPy-like entry points, each a cached prepared scan."""

from __future__ import annotations

from .cache import clear as clear_cache
from .conventions import AxisError
from .flat import memcpy, reduce, scan, source
from .partition import stable_partition
from .running import cummax, cummin, cumprod, cumsum, cumulative_prod, cumulative_sum, nancumprod, nancumsum
from .runs import reduce_by_key, scan_by_key, unique_consecutive
from .segmented import check_offsets, segmented_cumsum, segmented_reduce, segmented_scan
from .selection import compress, copy_if, extract, flatnonzero, nonzero
from .transforms import ScanKernel, Write

__all__ = [
    "AxisError",
    "ScanKernel",
    "Write",
    "compress",
    "copy_if",
    "extract",
    "flatnonzero",
    "nonzero",
    "reduce_by_key",
    "scan_by_key",
    "stable_partition",
    "unique_consecutive",
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
