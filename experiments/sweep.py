"""Tile-shape sweep on a CUDA GPU: fallback throughput per (threads, vectors, min_blocks).

Usage: python experiments/sweep.py DTYPE LOG2N [LOG2N ...]
Prints Ge/s of our memcpy kernel and of fallback per shape, with the kernel's
registers and spills, so that a shape that spills is visible. What is not swept keeps
the large-input defaults at every size, as this sweep always did: memcpy runs the
large-input tile shape, fallback the one-subgroup look-back window (size classes would
give mid sizes other ones). A development tool: device time per run, CUDA events,
median of 20 after a spin kernel (jitscan.bench.Timer).
"""

from __future__ import annotations

import sys

import cupy

from jitscan import bench
from jitscan.bench import studies
from jitscan.dtypes import lookup
from jitscan.plan import tuning
from jitscan.variants.chained import KERNEL

SHAPES = [
    (128, 16, 3),
    (128, 16, 0),
    (128, 8, 4),
    (64, 16, 6),
    (64, 32, 3),
    (256, 8, 2),
    (128, 32, 2),
    (256, 4, 0),
]


def main() -> None:
    dtype, *exps = sys.argv[1:]
    timer = bench.Timer("cupy")
    for e in map(int, exps):
        n = 1 << e
        x = cupy.random.default_rng(e).integers(-1000, 1000, n).astype(dtype)
        y = cupy.empty_like(x)
        large = tuning.geometry(timer.info, lookup(dtype))  # n unknown: the large-input shape
        shape = {k: large[k] for k in ("threads", "vectors", "min_blocks")}
        mem = studies.plan_for(timer, "memcpy", dtype, **shape)
        t_mem = timer.time(studies.launcher(mem, timer, x, y, n), 20)[0]
        for threads, vectors, mb in SHAPES:
            width = tuning.lookback_window(timer.info, threads)
            knobs = dict(threads=threads, vectors=vectors, min_blocks=mb, lookback_width=width)
            scan = studies.plan_for(timer, "fallback", dtype, **knobs)
            t = timer.time(studies.launcher(scan, timer, x, y, n), 20)[0]
            bound = studies.bound(scan, timer, n)
            regs = studies.resources(bound, KERNEL)
            print(
                f"{dtype} 2^{e} t={threads:4d} p={vectors:2d} mb={mb} tile={bound.spec.tile:6d}: "
                f"{n / t / 1e9:6.1f} Ge/s = {100 * t_mem / t:5.1f}% of memcpy ({n / t_mem / 1e9:.0f}) {regs}",
                flush=True,
            )


if __name__ == "__main__":
    main()
