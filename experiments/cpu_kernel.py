"""The scan on a CPU OpenCL device (PoCL) without NumPy in or out: the kernels' own speed.

Usage: python experiments/cpu_kernel.py [LOG2N ...]   (default 16 20 24)

Prepared scans of pyopencl arrays (no conversion, no result allocated: ``scan(x, y)``),
the default variant and ``memcpy`` through the same loads and stores, against
``numpy.cumsum`` with ``dtype=x.dtype``; then int32 segmented scans by CSR offsets, uint8
head flags and rows of 1024 (segments of mean length 1000 for the first two, all on the
device); M elements/s, best of 7 rounds of 5 calls.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np
import pyopencl.array as cla

import jitscan
from jitscan import backends


def best_rate(fn: Callable[[], object], n: int, finish: Callable[[], object]) -> float:
    """M elements/s of the best of 7 rounds of 5 calls."""
    fn()
    finish()
    best = float("inf")
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(5):
            fn()
        finish()
        best = min(best, (time.perf_counter() - t) / 5)
    return n / best / 1e6


def main() -> None:
    exps = [int(a) for a in sys.argv[1:]] or [16, 20, 24]
    b = backends.get("opencl")
    q = b.default_queue()
    print(f"device: {b.device_info(q).name}; NumPy {np.__version__}")
    print("n | dtype | memcpy | scan | numpy.cumsum | scan / memcpy")
    for e in exps:
        n = 1 << e
        for dt in ("int32", "float32", "int64"):
            x = cla.to_device(q, np.ones(n, dt))
            y = cla.empty_like(x)
            rates = []
            for variant in ("memcpy", "fallback"):
                scan = jitscan.plan(dt, "add", variant=variant, backend="opencl")
                rates.append(best_rate(lambda scan=scan, x=x, y=y: scan(x, y), n, q.finish))
            host = np.ones(n, dt)
            rates.append(best_rate(lambda h=host, dt=dt: np.cumsum(h, dtype=dt), n, lambda: None))
            cells = " | ".join(f"{r:.0f}" for r in rates)
            print(f"2^{e} | {dt} | {cells} | {rates[1] / rates[0]:.2f}", flush=True)
        segmented(q, n)


def segmented(q: object, n: int) -> None:
    """int32 segmented scans of the three kinds of segments, on the device."""
    rng = np.random.default_rng(0)
    x = cla.to_device(q, rng.integers(-50, 50, n).astype(np.int32))
    y = cla.empty_like(x)
    ends = np.cumsum(rng.integers(1, 2000, n // 1000 + 2))
    off = np.concatenate([[0], ends[ends < n], [n]]).astype(np.int64)
    flags = np.zeros(n, np.uint8)
    flags[off[:-1][off[:-1] < n]] = 1
    given = {"offsets": cla.to_device(q, off), "flags": cla.to_device(q, flags), "row_len": 1024}
    cells = []
    for mode, seg in given.items():
        scan = jitscan.plan("int32", segmented="rows" if mode == "row_len" else mode, backend="opencl")
        rate = best_rate(lambda scan=scan, mode=mode, seg=seg: scan(x, y, **{mode: seg}), n, q.finish)
        cells.append(f"{mode} {rate:.0f}")
    print(f"2^{int(np.log2(n))} | int32 segmented | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
