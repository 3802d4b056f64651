"""Where segmented_reduce (rts, by offsets) spends its time: each launch timed on its own.

Usage: python experiments/seg_reduce_parts.py [LOG2N] [MEAN]
Runs the launches of rts's segmented reduction (jitscan.variants.rts) one at a time (the
tile pre-pass, the tile pass, the spine scan, the fix-up) with jitscan.bench's CUDA-event
timer, then the whole call, then CUB's segmented reduce on the same offsets, so that
the gap to CUB can be placed in one launch.
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from jitscan import bench
from jitscan.bench import studies
from jitscan.variants import Segments
from jitscan.variants.rts import FIXUP, REDUCE, SPINE
from jitscan.variants.segments import SEG_FIRST


def main() -> None:
    e = int(sys.argv[1]) if len(sys.argv) > 1 else 28
    mean = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    n = 1 << e
    timer = bench.Timer("cupy")
    b, q = timer.backend, timer.queue
    rng = np.random.default_rng(7)
    x = cupy.asarray(rng.integers(-1000, 1000, n, dtype=np.int32))
    off = studies.random_offsets(rng, n, mean)
    offs = cupy.asarray(off.astype(np.uint64))
    nseg = off.size - 1
    out = cupy.empty(nseg, np.int32)
    scan = studies.plan_for(timer, "rts", "int32", "offsets", "reduce")
    by_offsets = Segments(offsets=offs)
    whole = studies.launcher(scan, timer, x, out, n, by_offsets)
    whole(0)  # allocates the scratch the launches below share
    bound = studies.bound(scan, timer, n)
    spec, prog, kind = bound.spec, bound.program, scan.launch_args.kind_code
    tiles = -(-n // spec.tile)
    # the scratch buffers of jitscan.variants.rts and .segments, as the whole call left them
    first = b.scratch((tiles + 1) * 8, q, "seg-first").buf
    spine = b.scratch(tiles * spec.element_bytes, q, "spine").buf
    carry = b.scratch(tiles * spec.dtype_info.itemsize, q, "carry").buf
    seg = [offs, first, nseg]
    parts = {
        f"tile pre-pass ({SEG_FIRST})": lambda i: prog.launch(
            SEG_FIRST, -(-(tiles + 1) // spec.threads), [offs, nseg, n, first], q
        ),
        f"tile pass ({REDUCE})": lambda i: prog.launch(
            REDUCE, tiles, [x, 0, n, spine, out, 0, carry, *seg], q
        ),
        f"spine scan ({SPINE})": lambda i: prog.launch(SPINE, 1, [spine, tiles, out, 0, kind], q),
        f"fix-up ({FIXUP})": lambda i: prog.launch(
            FIXUP, -(-tiles // spec.threads), [spine, carry, out, 0, tiles, first], q
        ),
        "whole call (PreparedScan.launch)": whole,
    }
    plain = studies.plan_for(timer, "rts", "int32", kind="reduce")
    total = cupy.empty(1, np.int32)
    parts["plain reduce, no segments (rts)"] = studies.launcher(plain, timer, x, total, n)
    # the spine's cost per pass and without segments: is it the passes or the pairs? (one pass
    # is a tile of pairs; never more than the spine holds, which small inputs would overrun)
    one_pass = min(spec.tile, tiles)
    parts["segmented spine, one pass"] = lambda i: prog.launch(SPINE, 1, [spine, one_pass, out, 0, kind], q)
    plain_prog, plain_kind = studies.bound(plain, timer, n).program, plain.launch_args.kind_code
    plain_spine = cupy.zeros(tiles, np.int32)
    parts["plain spine, same length"] = lambda i: plain_prog.launch(
        SPINE, 1, [plain_spine, tiles, total, 0, plain_kind], q
    )
    print(f"2^{e} int32, mean segment length {mean}, {nseg} segments, {tiles} tiles of {spec.tile}")
    for name, fn in parts.items():
        t = timer.time(fn, 30)[0]
        print(f"  {name:32s} {t * 1e6:8.1f} us  ({n / t / 1e9:.1f} Ge/s over n)")
    cub, dout = studies.cub_segmented_reduce(x, off)
    t = studies.interleaved(timer, {"jitscan": whole, "cub": cub})
    whole(0)
    ok = bool((out == dout).all())
    t_cub = t["cub"]
    print(f"  {'CUB segmented reduce':32s} {t_cub * 1e6:8.1f} us  ({n / t_cub / 1e9:.1f} Ge/s), equal: {ok}")
    print(f"  in turns with CUB: jitscan {t['jitscan'] * 1e6:.1f} us = {t['cub'] / t['jitscan']:.3f}x CUB")


if __name__ == "__main__":
    main()
