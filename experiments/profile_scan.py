"""Run one fallback scan a few times, for ncu.

Usage: JITSCAN_LINEINFO=1 python experiments/profile_scan.py DTYPE LOG2N [knob=value ...]

The scan keeps the input's dtype (``dtype=x.dtype``: an int32 input scans in int32, not in
NumPy's int64). ``JITSCAN_LINEINFO=1`` compiles with line information, for ncu's source
view (``--import-source yes``, then ``--page source --print-source sass``).
"""

from __future__ import annotations

import sys

import cupy

import jitscan

dtype, e, *kv = sys.argv[1:]
knobs = {k: int(v) for k, v in (a.split("=") for a in kv)}
x = cupy.random.default_rng(0).integers(-1000, 1000, 1 << int(e)).astype(dtype)
for _ in range(3):
    jitscan.cumsum(x, dtype=x.dtype, **knobs)
cupy.cuda.Device().synchronize()
