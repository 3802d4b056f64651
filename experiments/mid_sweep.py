"""Mid-size tile shapes against CUB on a CUDA GPU, with jitscan.bench's rotating inputs.

Usage: python experiments/mid_sweep.py [DTYPE] [LOG2N ...]   (default int32 18 20 22)
Tile shapes and look-back windows of the fallback scan (inclusive sum) against CUB.
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from jitscan import bench
from jitscan.bench import studies

#: (threads, vectors, min_blocks, look-back window); the window is how many predecessors
#: one look-back step reads (one subgroup is walked by shuffles; wider windows by several
#: subgroups in parallel): at mid sizes most tiles start together, so tile i may walk i
#: predecessors before any is INCLUSIVE
SHAPES = [
    (128, 16, 3, 32),
    (128, 16, 3, 128),
    (128, 16, 2, 32),
    (256, 8, 2, 32),
    (256, 8, 2, 128),
    (128, 8, 4, 128),
    (256, 4, 0, 128),
    (256, 4, 4, 128),
    (512, 4, 2, 128),
    (512, 4, 2, 256),
    (512, 4, 2, 512),
    (256, 8, 2, 256),
    (512, 2, 4, 128),
    (256, 8, 3, 128),
]


def row(timer: bench.Timer, e: int, rng: np.random.Generator, dtype: str) -> str:
    n = 1 << e
    ins = timer.inputs(n, dtype, rng)
    out = cupy.empty(n, dtype)
    t_cub = timer.time(studies.cub_launcher("inclusive", ins, out, n), 30)[0]
    line = [f"2^{e}: CUB {n / t_cub / 1e9:.1f}"]
    for threads, vectors, mb, width in SHAPES:
        knobs = dict(threads=threads, vectors=vectors, min_blocks=mb, lookback_width=width)
        scan = studies.plan_for(timer, "fallback", dtype, **knobs)
        t = timer.time(studies.launcher(scan, timer, ins, out, n), 30)[0]
        line.append(f"{threads}x{vectors}/{mb} w{width} {n / t / 1e9:.1f}")
    # how far the default shape's tiles (for this n) walk back, and how often they wait
    counting = studies.plan_for(timer, "fallback", dtype, stats=True)
    st = studies.launcher(counting, timer, ins, out, n)(0)
    tiles = st["tiles"]
    steps, spins = st["lookback_steps"] / tiles, st["spins"] / tiles
    line.append(f"default: {tiles} tiles, {steps:.1f} steps/tile, {spins:.2f} spins/tile")
    return " | ".join(line)


def main() -> None:
    args = sys.argv[1:]
    dtype = args.pop(0) if args and not args[0].isdigit() else "int32"
    exps = [int(a) for a in args] or [18, 20, 22]
    timer = bench.Timer("cupy")
    rng = np.random.default_rng(5)
    for e in exps:
        print(f"{dtype} " + row(timer, e, rng, dtype), flush=True)


if __name__ == "__main__":
    main()
