"""Row scans through shared memory against row scans by shuffles, with CUB, in turns, on a CUDA GPU.

Usage: python experiments/smem_rows.py [DTYPE,...] [LOG2N ...]   (default four dtypes, 16:28 even)
A tile's rows (one vector of every lane) were each scanned across the subgroup by
shuffles; ScanSpec.rows_in_smem passes them through shared memory instead, so that each
lane scans consecutive ones and the subgroup scans once. Each size times CUB and both
forms of jitscan's default scan (fallback, inclusive sum) in alternating rounds
(jitscan.bench.studies.interleaved) and prints the medians in 10^9 elements/s.
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from jitscan import bench
from jitscan.bench import studies
from jitscan.plan import tuning


def contenders(timer: bench.Timer, n: int, dtype: str, rng: np.random.Generator) -> dict:
    """CUB, and the default tile shape with its rows scanned by shuffles and through shared
    memory (tuning.rows_in_smem overruled both ways), as ``fn(i)``."""
    ins = timer.inputs(n, dtype, rng)
    out = cupy.empty(n, dtype)
    forms = {"CUB": studies.cub_launcher("inclusive", ins, out, n)}
    rule = tuning.rows_in_smem
    for name, forced in (("shuffles", False), ("smem", True)):
        # wherever ScanSpec takes it: a tile of several threads and rows on a GPU
        tuning.rows_in_smem = lambda spec, nbytes, forced=forced: forced
        try:  # the launcher compiles before it returns
            forms[name] = studies.launcher(studies.plan_for(timer, "fallback", dtype), timer, ins, out, n)
        finally:
            tuning.rows_in_smem = rule
    return forms


def main() -> None:
    args = sys.argv[1:]
    dtypes = (args.pop(0) if args and not args[0].isdigit() else "int32,float32,int64,float64").split(",")
    exps = [int(a) for a in args] or list(range(16, 29, 2))
    timer = bench.Timer("cupy")
    rng = np.random.default_rng(11)
    print("dtype | n | CUB | shuffles | smem | smem / shuffles | smem / CUB", flush=True)
    for dtype in dtypes:
        for e in exps:
            n = 1 << e
            t = studies.interleaved(timer, contenders(timer, n, dtype, rng), rounds=8, reps=15)
            r = {k: n / v / 1e9 for k, v in t.items()}
            print(
                f"{dtype} | 2^{e} | {r['CUB']:.1f} | {r['shuffles']:.1f} | {r['smem']:.1f} | "
                f"{r['smem'] / r['shuffles']:.3f} | {r['smem'] / r['CUB']:.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
