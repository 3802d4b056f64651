"""Mid-size tile shapes against CUB on a CUDA GPU, with jitscan.bench's rotating inputs.

Usage: python scripts/mid_sweep.py [DTYPE] [LOG2N ...]   (default int32 18 20 22)
Tile shapes and look-back windows of the fallback scan (inclusive sum) against CUB.
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from jitscan import bench, execute, tuning
from jitscan.dtypes import lookup
from jitscan.monoid import resolve

#: (threads, vectors, min_blocks, look-back window); the window is how many predecessors
#: one look-back step reads (default: one subgroup, walked in registers by shuffles; a
#: wider window is walked serially by thread 0): at mid sizes most tiles start together,
#: so tile i may walk i predecessors before any is INCLUSIVE
SHAPES = [
    (128, 16, 3, 32),
    (128, 16, 3, 64),
    (256, 8, 2, 32),
    (128, 8, 4, 32),
    (256, 4, 0, 32),
    (512, 4, 2, 32),
    (256, 8, 3, 32),
    (128, 8, 3, 32),
]


def row(timer: bench.Timer, e: int, rng: np.random.Generator, dtype: str) -> str:
    import cuda.compute as cc

    b, q = timer.backend, timer.queue
    n = 1 << e
    ins = timer.inputs(n, dtype, rng)
    out = cupy.empty(n, dtype)
    scan = cc.make_inclusive_scan(d_in=ins[0], d_out=out, op=cc.OpKind.PLUS)
    kw = dict(d_out=out, op=cc.OpKind.PLUS, init_value=None, num_items=n)
    tmp = cupy.empty(max(int(scan(temp_storage=None, d_in=ins[0], **kw)), 1), np.uint8)
    t_cub = timer.time(lambda i: scan(temp_storage=tmp, d_in=ins[i % len(ins)], **kw), 30)[0]
    line = [f"2^{e}: CUB {n / t_cub / 1e9:.1f}"]
    for threads, vectors, mb, width in SHAPES:
        spec = tuning.spec_for(
            timer.info,
            variant="fallback",
            kind="inclusive",
            dtype=lookup(dtype),
            monoid=resolve("add"),
            threads=threads,
            vectors=vectors,
            min_blocks=mb,
            lookback_width=width,
        )
        t = timer.time(
            lambda i, spec=spec: execute.run(b, q, spec, ins[i % len(ins)], out, n, check=False), 30
        )[0]
        line.append(f"{threads}x{vectors}/{mb} w{width} {n / t / 1e9:.1f}")
    # how far the default shape's tiles walk back, and how often they wait
    spec = tuning.spec_for(
        timer.info,
        variant="fallback",
        kind="inclusive",
        dtype=lookup(dtype),
        monoid=resolve("add"),
        stats=True,
    )
    st = execute.run(b, q, spec, ins[0], out, n, check=False)
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
