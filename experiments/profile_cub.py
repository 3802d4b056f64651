"""CUB's inclusive scan (cuda.compute) a few times, for ncu.

Usage: python experiments/profile_cub.py LOG2N [DTYPE]
"""

from __future__ import annotations

import sys

import cupy

from jitscan.bench.cub import cub_call

n = 1 << int(sys.argv[1])
dtype = sys.argv[2] if len(sys.argv) > 2 else "int32"
x = cupy.random.default_rng(0).integers(-1000, 1000, n).astype(dtype)
y = cupy.empty_like(x)
scan = cub_call("inclusive", x, y, num_items=n)
for _ in range(3):
    scan(x)
cupy.cuda.Device().synchronize()
