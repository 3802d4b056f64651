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

from typing import Any

from . import backends
from .api import (
    AxisError,
    ScanKernel,
    Write,
    compress,
    copy_if,
    cummax,
    cummin,
    cumprod,
    cumsum,
    cumulative_prod,
    cumulative_sum,
    extract,
    flatnonzero,
    memcpy,
    nancumprod,
    nancumsum,
    nonzero,
    reduce,
    reduce_by_key,
    scan,
    scan_by_key,
    segmented_cumsum,
    segmented_reduce,
    segmented_scan,
    source,
    stable_partition,
    unique_consecutive,
)
from .api.tuples import Index, index
from .errors import BackendUnavailableError, CompileError, DeadlockError, DeviceMemoryError, JitscanError
from .kernels.spec import KINDS, LaunchArgs, ScanSpec
from .operators import BUILTIN as BUILTIN_OPS
from .operators import Monoid, Operator, operator
from .plan import PreparedScan, plan
from .variants import VARIANTS

__version__ = "0.1.0"


def tune(backend: str | None = None, **kwargs: Any) -> Any:
    """Measure this device's best tile shapes and keep them for every later scan here.

    A coordinate search from the built-in knobs over the tunables of
    ``jitscan.plan.tuned.TUNABLES``, within a time budget; each candidate's answer is
    checked before it is timed. The table goes to the user's cache directory and is used
    without asking (``JITSCAN_TUNING=off`` ignores it). Arguments as
    :func:`jitscan.tuner.search.tune` (``dtypes``, ``ops``, ``segmented``, ``sizes``,
    ``budget`` in seconds, ``write``, ``path``, ``progress``, ``log``).

    Returns
    -------
    jitscan.tuner.Report
        Each case's kept knobs and speed-up; ``.markdown()`` prints them.
    """
    from .tuner.search import tune as search

    return search(backend, **kwargs)


__all__ = [
    "AxisError",
    "BUILTIN_OPS",
    "KINDS",
    "VARIANTS",
    "BackendUnavailableError",
    "CompileError",
    "DeadlockError",
    "DeviceMemoryError",
    "Index",
    "JitscanError",
    "LaunchArgs",
    "Monoid",
    "Operator",
    "PreparedScan",
    "ScanKernel",
    "ScanSpec",
    "Write",
    "backends",
    "compress",
    "copy_if",
    "extract",
    "flatnonzero",
    "nonzero",
    "reduce_by_key",
    "scan_by_key",
    "stable_partition",
    "unique_consecutive",
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
    "tune",
]
