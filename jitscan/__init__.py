"""jitscan: portable GPU prefix scans, generated at run time for CUDA and OpenCL.

>>> import numpy as np, jitscan
>>> jitscan.cumsum(np.arange(5, dtype=np.int32))       # as numpy.cumsum: int64
array([ 0,  1,  3,  6, 10])
>>> jitscan.cumsum(np.arange(5, dtype=np.int32), dtype=np.int32)
array([ 0,  1,  3,  6, 10], dtype=int32)

To scan in a loop, prepare the scan once:

>>> scan = jitscan.plan("int32", "add")
>>> scan(np.arange(5, dtype=np.int32))
array([ 0,  1,  3,  6, 10], dtype=int32)
"""

from __future__ import annotations

from . import backends
from .api import (
    AxisError,
    cummax,
    cummin,
    cumprod,
    cumsum,
    cumulative_prod,
    cumulative_sum,
    memcpy,
    nancumprod,
    nancumsum,
    reduce,
    scan,
    segmented_cumsum,
    segmented_reduce,
    segmented_scan,
    source,
)
from .api.tuples import Index, index
from .errors import BackendUnavailableError, CompileError, DeadlockError, JitscanError
from .kernels.spec import KINDS, LaunchArgs, ScanSpec
from .operators import BUILTIN as BUILTIN_OPS
from .operators import Monoid, Operator, operator
from .plan import PreparedScan, plan
from .variants import VARIANTS

__version__ = "0.1.0"

__all__ = [
    "AxisError",
    "BUILTIN_OPS",
    "KINDS",
    "VARIANTS",
    "BackendUnavailableError",
    "CompileError",
    "DeadlockError",
    "Index",
    "JitscanError",
    "LaunchArgs",
    "Monoid",
    "Operator",
    "PreparedScan",
    "ScanSpec",
    "backends",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "cumulative_prod",
    "cumulative_sum",
    "index",
    "memcpy",
    "nancumprod",
    "nancumsum",
    "operator",
    "plan",
    "reduce",
    "scan",
    "segmented_cumsum",
    "segmented_reduce",
    "segmented_scan",
    "source",
]
