"""Run one fallback scan a few times, for ncu.

Usage: python experiments/profile_scan.py DTYPE LOG2N [knob=value ...]
"""

from __future__ import annotations

import sys

import cupy

import jitscan

dtype, e, *kv = sys.argv[1:]
knobs = {k: int(v) for k, v in (a.split("=") for a in kv)}
x = cupy.random.default_rng(0).integers(-1000, 1000, 1 << int(e)).astype(dtype)
for _ in range(3):
    jitscan.cumsum(x, **knobs)
cupy.cuda.Device().synchronize()
