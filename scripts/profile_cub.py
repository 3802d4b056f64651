"""CUB's inclusive scan (cuda.compute) a few times, for ncu: python scripts/profile_cub.py LOG2N [DTYPE]."""

from __future__ import annotations

import sys

import cuda.compute as cc
import cupy
import numpy as np

n = 1 << int(sys.argv[1])
dtype = sys.argv[2] if len(sys.argv) > 2 else "int32"
x = cupy.random.default_rng(0).integers(-1000, 1000, n).astype(dtype)
y = cupy.empty_like(x)
scan = cc.make_inclusive_scan(d_in=x, d_out=y, op=cc.OpKind.PLUS)
tmp = cupy.empty(
    max(int(scan(temp_storage=None, d_in=x, d_out=y, op=cc.OpKind.PLUS, init_value=None, num_items=n)), 1),
    np.uint8,
)
for _ in range(3):
    scan(temp_storage=tmp, d_in=x, d_out=y, op=cc.OpKind.PLUS, init_value=None, num_items=n)
cupy.cuda.Device().synchronize()
