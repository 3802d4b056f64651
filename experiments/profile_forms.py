"""Where the host time of each call form goes on CUDA: cProfile of warm calls on CuPy arrays.

Usage: python experiments/profile_forms.py [LOG2N]

For each form (flat, segmented by flags and offsets, segmented reduce, tuple values, an axis
scan, initial=), 2,000 warm calls under cProfile, then the 12 functions of most own time,
and the host µs a call without the profiler (perf_counter around 2,000 calls).
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time

import cupy
import numpy as np

import jitscan
from jitscan.bench.operators import affine

n = 1 << int(sys.argv[1] if len(sys.argv) > 1 else 10)
rng = np.random.default_rng(1)
x = cupy.asarray(rng.integers(0, 9, n).astype(np.int32))
y = cupy.empty_like(x)
off = cupy.asarray(np.r_[0, np.sort(rng.choice(np.arange(1, n), n // 16, replace=False)), n].astype(np.int64))
flags = cupy.zeros(n, np.uint8)
flags[off[:-1]] = 1
r = cupy.empty(off.size - 1, np.int32)
a = cupy.asarray(rng.random(n, np.float32))
b = cupy.asarray(rng.random(n, np.float32))
h = cupy.empty_like(b)
x2 = cupy.asarray(rng.random((64, n // 64), np.float32))
y2 = cupy.empty_like(x2)
forms = {
    "flat": lambda: jitscan.cumsum(x, out=y),
    "flags": lambda: jitscan.segmented_cumsum(x, flags=flags, out=y),
    "offsets": lambda: jitscan.segmented_cumsum(x, offsets=off, out=y),
    "segmented_reduce": lambda: jitscan.segmented_reduce(x, offsets=off),
    "tuple": lambda: jitscan.scan((a, b), op=affine, output=1, out=h),
    "axis": lambda: jitscan.cumsum(x2, axis=1, out=y2),
    "initial": lambda: jitscan.scan(x, initial=1, out=y),
}
for name, fn in forms.items():
    for _ in range(50):
        fn()
    cupy.cuda.runtime.deviceSynchronize()
    t = time.perf_counter()
    for _ in range(2000):
        fn()
    us = (time.perf_counter() - t) / 2000 * 1e6
    cupy.cuda.runtime.deviceSynchronize()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(2000):
        fn()
    pr.disable()
    cupy.cuda.runtime.deviceSynchronize()
    print(f"\n=== {name}: {us:.2f} us a call (no profiler)")
    pstats.Stats(pr).sort_stats("tottime").print_stats(12)
