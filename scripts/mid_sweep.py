"""Mid-size tile shapes against CUB on a CUDA GPU, with jitscan.bench's rotating inputs.

Usage: python scripts/mid_sweep.py [LOG2N ...]   (default 18 20 22)
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from jitscan import bench, execute, tuning
from jitscan.dtypes import lookup
from jitscan.monoid import resolve

SHAPES = [(128, 16, 3), (128, 8, 4), (128, 8, 0), (256, 4, 0), (256, 8, 2), (64, 8, 0), (128, 4, 0)]


def row(timer: bench.Timer, e: int, rng: np.random.Generator) -> str:
    import cuda.compute as cc

    b, q = timer.backend, timer.queue
    n = 1 << e
    ins = timer.inputs(n, "int32", rng)
    out = cupy.empty(n, np.int32)
    scan = cc.make_inclusive_scan(d_in=ins[0], d_out=out, op=cc.OpKind.PLUS)
    kw = dict(d_out=out, op=cc.OpKind.PLUS, init_value=None, num_items=n)
    tmp = cupy.empty(max(int(scan(temp_storage=None, d_in=ins[0], **kw)), 1), np.uint8)
    t_cub = timer.time(lambda i: scan(temp_storage=tmp, d_in=ins[i % len(ins)], **kw), 30)[0]
    line = [f"2^{e}: CUB {n / t_cub / 1e9:.1f}"]
    for threads, vectors, mb in SHAPES:
        spec = tuning.spec_for(
            timer.info,
            variant="fallback",
            kind="inclusive",
            dtype=lookup("int32"),
            monoid=resolve("add"),
            threads=threads,
            vectors=vectors,
            min_blocks=mb,
        )
        t = timer.time(
            lambda i, spec=spec: execute.run(b, q, spec, ins[i % len(ins)], out, n, check=False), 30
        )[0]
        line.append(f"{threads}x{vectors}/{mb} {n / t / 1e9:.1f}")
    return " | ".join(line)


def main() -> None:
    exps = [int(a) for a in sys.argv[1:]] or [18, 20, 22]
    timer = bench.Timer("cupy")
    rng = np.random.default_rng(5)
    for e in exps:
        print(row(timer, e, rng), flush=True)


if __name__ == "__main__":
    main()
