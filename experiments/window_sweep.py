"""Look-back window widths against CUB on a CUDA GPU, timed in turns.

Usage: python experiments/window_sweep.py [DTYPE,...] [LOG2N ...]   (default int32 16 18 20 21 22 23 24 28)
At each size the default tile shape runs with windows of 32 to 256 predecessors (one to
eight 32-lane subgroups, up to the workgroup) beside CUB, in alternating rounds
(jitscan.bench.studies.interleaved); every window's result is checked against NumPy
first. Then the segmented scan (uint8 flags, mean segment lengths 100 and 50000) at
2^20-2^24 with windows of 32 and 128. Prints Ge/s and each contender over the first one.
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from jitscan import bench
from jitscan.bench import studies
from jitscan.variants import Segments


def line(label: str, n: int, t: dict) -> str:
    base = next(iter(t.values()))
    return f"{label}: " + " | ".join(f"{k} {n / s / 1e9:.1f} ({base / s:.3f}x)" for k, s in t.items())


def flat(timer: bench.Timer, dtype: str, e: int, rng: np.random.Generator) -> str:
    n = 1 << e
    ins = timer.inputs(n, dtype, rng)
    out = cupy.empty(n, dtype)
    host = cupy.asnumpy(ins[0])
    want = np.cumsum(host, dtype=np.float64 if host.dtype.kind == "f" else host.dtype)
    slack = 1e-5 * np.cumsum(np.abs(host), dtype=np.float64) if host.dtype.kind == "f" else 0
    # the default program of n's size class: its tile shape, and the window it picks
    default = studies.bound(studies.plan_for(timer, "fallback", dtype), timer, n).spec
    threads = default.threads
    # that shape, given explicitly: a prepared scan checks its knobs against every size class,
    # and a window wider than the large inputs' workgroup is valid only for this one
    shape = dict(threads=threads, vectors=default.vectors, min_blocks=default.min_blocks)
    fns = {"CUB": studies.cub_launcher("inclusive", ins, out, n)}
    for width in (w for w in (32, 64, 128, 256) if w <= threads):
        scan = studies.plan_for(timer, "fallback", dtype, lookback_width=width, **shape)
        scan.launch(ins[0], out, n, queue=timer.queue)
        assert np.all(np.abs(cupy.asnumpy(out) - want) <= slack), f"window {width} gave a wrong scan"
        fns[f"w{width}"] = studies.launcher(scan, timer, ins, out, n)
    label = f"{dtype} 2^{e} ({threads} threads, default w{default.lookback_width})"
    return line(label, n, studies.interleaved(timer, fns, 6, 15))


def segmented(timer: bench.Timer, e: int, mean: int, rng: np.random.Generator) -> str:
    n = 1 << e
    x = cupy.asarray(rng.integers(-1000, 1000, n, dtype=np.int32))
    y = cupy.empty(n, np.int32)
    heads = cupy.asarray(studies.heads_from_offsets(studies.random_offsets(rng, n, mean), n))
    fns = {}
    for width in (32, 128):
        scan = studies.plan_for(timer, "fallback", "int32", "flags", lookback_width=width)
        fns[f"w{width}"] = studies.launcher(scan, timer, x, y, n, Segments(heads=heads))
    return line(f"segmented flags 2^{e} mean {mean}", n, studies.interleaved(timer, fns, 6, 15))


def main() -> None:
    args = sys.argv[1:]
    dtypes = args.pop(0).split(",") if args and not args[0].isdigit() else ["int32"]
    exps = [int(a) for a in args] or [16, 18, 20, 21, 22, 23, 24, 28]
    timer = bench.Timer("cupy")
    rng = np.random.default_rng(11)
    for dtype in dtypes:
        for e in exps:
            print(flat(timer, dtype, e, rng), flush=True)
    for e in (20, 22, 24):
        for mean in (100, 50_000):
            print(segmented(timer, e, mean, rng), flush=True)


if __name__ == "__main__":
    main()
