"""Run one fallback scan a few times, for ncu.

Usage: JITSCAN_LINEINFO=1 python experiments/profile_scan.py DTYPE LOG2N [knob=value ...] [mean=L]

The scan keeps the input's dtype (``dtype=x.dtype``: an int32 input scans in int32, not in
NumPy's int64). ``mean=L`` makes it a segmented scan by head flags, segments of mean
length L (geometric). ``JITSCAN_LINEINFO=1`` compiles with line information, for ncu's
source view (``--import-source yes``, then ``--page source --print-source sass``).
"""

from __future__ import annotations

import sys

import cupy

import jitscan

dtype, e, *kv = sys.argv[1:]
knobs = {k: int(v) for k, v in (a.split("=") for a in kv)}
mean = knobs.pop("mean", 0)
n = 1 << int(e)
rng = cupy.random.default_rng(0)
x = rng.integers(-1000, 1000, n).astype(dtype)
flags = (rng.random(n) < 1.0 / mean).astype(cupy.uint8) if mean else None
for _ in range(3):
    if mean:
        jitscan.segmented_cumsum(x, flags=flags, **knobs)
    else:
        jitscan.cumsum(x, dtype=x.dtype, **knobs)
cupy.cuda.Device().synchronize()
