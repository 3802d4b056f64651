"""jitscan's default inclusive sum against CUB at every size, timed in turns, on a CUDA GPU.

Usage: python scripts/vs_cub.py [DTYPE,...] [LO:HI]   (default int32,float32 16:28)
Near 2^22 the two are within a few percent and one run of the bench, which times them
one after the other, moved by about 3% either way between runs. Here each size times
both in alternating rounds (seg_bench.interleaved) and prints the medians and the ratio.
"""

from __future__ import annotations

import sys

import cupy
import numpy as np
from seg_bench import interleaved, spec

from jitscan import bench, execute


def cub_inclusive_sum(ins: list, out, n: int):
    """CUB's inclusive sum (cuda.compute) of ``ins[i % len(ins)]`` into ``out``, as ``fn(i)``."""
    import cuda.compute as cc

    scan = cc.make_inclusive_scan(d_in=ins[0], d_out=out, op=cc.OpKind.PLUS)
    kw = dict(d_out=out, op=cc.OpKind.PLUS, init_value=None, num_items=n)
    tmp = cupy.empty(max(int(scan(temp_storage=None, d_in=ins[0], **kw)), 1), np.uint8)
    return lambda i: scan(temp_storage=tmp, d_in=ins[i % len(ins)], **kw)


def contenders(timer: bench.Timer, n: int, dtype: str, rng: np.random.Generator) -> dict:
    b, q = timer.backend, timer.queue
    ins = timer.inputs(n, dtype, rng)
    out = cupy.empty(n, dtype)
    default = spec(timer, "fallback", dtype, n)
    return {
        "CUB": cub_inclusive_sum(ins, out, n),
        "jitscan": lambda i: execute.run(b, q, default, ins[i % len(ins)], out, n, check=False),
    }


def main() -> None:
    dtypes = (sys.argv[1] if len(sys.argv) > 1 else "int32,float32").split(",")
    lo, hi = (int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "16:28").split(":"))
    timer = bench.Timer("cupy")
    rng = np.random.default_rng(3)
    print("dtype | n | CUB 10^9/s | jitscan 10^9/s | jitscan / CUB", flush=True)
    for dtype in dtypes:
        for e in range(lo, hi + 1):
            n = 1 << e
            t = interleaved(timer, contenders(timer, n, dtype, rng), rounds=8, reps=15)
            cub, js = n / t["CUB"] / 1e9, n / t["jitscan"] / 1e9
            print(f"{dtype} | 2^{e} | {cub:.1f} | {js:.1f} | {js / cub:.3f}", flush=True)


if __name__ == "__main__":
    main()
