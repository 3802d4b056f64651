"""Tile-shape sweep on a CUDA GPU: fallback throughput per (threads, vectors, min_blocks).

Usage: python scripts/sweep.py DTYPE LOG2N [LOG2N ...]
Prints Ge/s of our memcpy kernel and of fallback per shape, with the kernel's
registers and spills, so that a shape that spills is visible. A development tool:
device time per run, CUDA events, median of 20 after a spin kernel (see jitscan.bench).
"""

from __future__ import annotations

import statistics
import sys

import cupy
import numpy as np

from jitscan import backends, execute, tuning
from jitscan.dtypes import lookup
from jitscan.monoid import resolve

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
SPIN = cupy.RawKernel(
    r"""extern "C" __global__ void spin(long long c) {
        long long t = clock64(); while (clock64() - t < c) { } }""",
    "spin",
)


def timed(fn, reps: int = 20) -> float:
    for _ in range(3):
        fn()
    out = []
    for _ in range(reps):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        SPIN((1,), (1,), (np.int64(200_000),))
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cupy.cuda.get_elapsed_time(a, b) / 1e3)
    return statistics.median(out)


def main() -> None:
    dtype, *exps = sys.argv[1:]
    b = backends.require("cupy")
    q = b.queue_of(None)
    info = b.device_info(q)
    for e in map(int, exps):
        n = 1 << e
        x = cupy.random.default_rng(e).integers(-1000, 1000, n).astype(dtype)
        y = cupy.empty_like(x)
        base = dict(kind="inclusive", dtype=lookup(dtype), monoid=resolve("add"))
        mem = tuning.spec_for(info, variant="memcpy", **base)
        t_mem = timed(lambda mem=mem, x=x, y=y, n=n: execute.run(b, q, mem, x, y, n))
        for threads, vectors, mb in SHAPES:
            spec = tuning.spec_for(
                info, variant="fallback", threads=threads, vectors=vectors, min_blocks=mb, **base
            )
            t = timed(lambda spec=spec, x=x, y=y, n=n: execute.run(b, q, spec, x, y, n, check=False))
            k = b.program(spec, q).kernels["js_chained"]
            regs = f"regs={k.attributes['num_regs']} local={k.attributes['local_size_bytes']}B"
            print(
                f"{dtype} 2^{e} t={threads:4d} p={vectors:2d} mb={mb} tile={spec.tile:6d}: "
                f"{n / t / 1e9:6.1f} Ge/s = {100 * t_mem / t:5.1f}% of memcpy ({n / t_mem / 1e9:.0f}) {regs}",
                flush=True,
            )


if __name__ == "__main__":
    main()
