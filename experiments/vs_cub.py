"""jitscan's default inclusive sum against CUB at every size, timed in turns, on a CUDA GPU.

Usage: python experiments/vs_cub.py [DTYPE,...] [LO:HI]   (default int32,float32 16:28)
Near 2^22 the two are within a few percent and one run of the bench, which times them
one after the other, moved by about 3% either way between runs. Here each size times
both in alternating rounds (jitscan.bench.studies.interleaved) and prints the medians
and the ratio.
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from jitscan import bench
from jitscan.bench import studies


def contenders(timer: bench.Timer, n: int, dtype: str, rng: np.random.Generator) -> dict:
    """CUB and jitscan's default scan (fallback) over the same rotating inputs, as ``fn(i)``."""
    ins = timer.inputs(n, dtype, rng)
    out = cupy.empty(n, dtype)
    default = studies.plan_for(timer, "fallback", dtype)
    return {
        "CUB": studies.cub_launcher("inclusive", ins, out, n),
        "jitscan": studies.launcher(default, timer, ins, out, n),
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
            t = studies.interleaved(timer, contenders(timer, n, dtype, rng), rounds=8, reps=15)
            cub, js = n / t["CUB"] / 1e9, n / t["jitscan"] / 1e9
            print(f"{dtype} | 2^{e} | {cub:.1f} | {js:.1f} | {js / cub:.3f}", flush=True)


if __name__ == "__main__":
    main()
