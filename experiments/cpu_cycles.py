"""A segmented scan on a CPU OpenCL device (PoCL) called in a loop, for ``perf``.

Usage: perf record -e cycles:u -c 1000000 python experiments/cpu_cycles.py MODE [LOG2N]
       perf report -n --sort symbol   (the kernel is ``_pocl_kernel_js_chained_workgroup``)

MODE is ``offsets``, ``flags`` or ``rows``: 60 prepared int32 scans of pyopencl arrays of
2^LOG2N elements (default 22), segments of mean length 1000 (rows of 1024). With a fixed
sampling period, the kernel's sample count is its CPU cycles in millions, which another
process on the machine changes far less than it changes wall time.
"""

from __future__ import annotations

import sys

import numpy as np
import pyopencl.array as cla

import jitscan
from jitscan import backends

mode = sys.argv[1]
n = 1 << (int(sys.argv[2]) if len(sys.argv) > 2 else 22)
b = backends.get("opencl")
q = b.queue_of(None)
rng = np.random.default_rng(0)
ends = np.cumsum(rng.integers(1, 2000, n // 1000 + 2))
off = np.concatenate([[0], ends[ends < n], [n]]).astype(np.int64)
heads = np.zeros(n, np.uint8)
heads[off[:-1]] = 1
x = cla.to_device(q, rng.integers(0, 100, n).astype(np.int32))
y = cla.empty(q, n, np.int32)
segments = {
    "offsets": {"offsets": cla.to_device(q, off.astype(np.uint64))},
    "flags": {"flags": cla.to_device(q, heads)},
    "rows": {"row_len": 1024},
}[mode]
scan = jitscan.plan("int32", segmented=mode, backend="opencl")
for _ in range(61):  # the first one compiles
    scan(x, y, **segments)
q.finish()
