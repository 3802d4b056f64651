"""jitscan: portable GPU prefix scans, generated at run time for CUDA and OpenCL.

>>> import numpy as np, jitscan
>>> jitscan.cumsum(np.arange(5, dtype=np.int32))
array([ 0,  1,  3,  6, 10], dtype=int32)
"""

from __future__ import annotations

from . import backends
from .api import cummax, cummin, cumprod, cumsum, memcpy, reduce, scan, source
from .errors import BackendUnavailableError, CompileError, DeadlockError, JitscanError
from .monoid import BUILTIN as BUILTIN_OPS
from .monoid import Monoid
from .segmented import segmented_cumsum, segmented_reduce, segmented_scan
from .spec import KINDS, VARIANTS, ScanSpec

__version__ = "0.1.0"

__all__ = [
    "BUILTIN_OPS",
    "KINDS",
    "VARIANTS",
    "BackendUnavailableError",
    "CompileError",
    "DeadlockError",
    "JitscanError",
    "Monoid",
    "ScanSpec",
    "backends",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "memcpy",
    "reduce",
    "scan",
    "segmented_cumsum",
    "segmented_reduce",
    "segmented_scan",
    "source",
]
