"""Where segmented_reduce (rts, by offsets) spends its time: each launch timed on its own.

Usage: python scripts/seg_reduce_parts.py [LOG2N] [MEAN]
Runs the launches of execute.run's rts segmented reduction one at a time (the tile
pre-pass, the tile pass, the spine scan, the fix-up) with jitscan.bench's CUDA-event
timer, then the whole call, then CUB's segmented reduce on the same offsets, so that
the gap to CUB can be placed in one launch.
"""

from __future__ import annotations

import sys

import cupy
import numpy as np
from seg_bench import cub_segmented_reduce, interleaved, random_offsets
from seg_bench import spec as default_spec

from jitscan import bench, execute
from jitscan.kernels import SEG_FIRST


def main() -> None:
    e = int(sys.argv[1]) if len(sys.argv) > 1 else 28
    mean = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    n = 1 << e
    timer = bench.Timer("cupy")
    b, q = timer.backend, timer.queue
    rng = np.random.default_rng(7)
    x = cupy.asarray(rng.integers(-1000, 1000, n, dtype=np.int32))
    off = random_offsets(rng, n, mean)
    offs = cupy.asarray(off.astype(np.uint64))
    nseg = off.size - 1
    out = cupy.empty(nseg, np.int32)
    spec = default_spec(timer, "rts", "int32", n, "offsets", "reduce")
    execute.run(b, q, spec, x, out, n, check=False, offsets=offs)  # allocates the scratch
    prog = b.program(spec, q)
    tiles = -(-n // spec.tile)
    first = b.scratch((tiles + 1) * 8, q, "seg-first")[0]
    spine = b.scratch(tiles * spec.element_bytes, q, "spine")[0]
    carry = b.scratch(tiles * 4, q, "carry")[0]
    seg = [offs, first, nseg]
    parts = {
        "tile pre-pass (js_seg_first)": lambda i: prog.launch(
            SEG_FIRST, -(-(tiles + 1) // spec.threads), [offs, nseg, n, first]
        ),
        "tile pass (js_rts_reduce)": lambda i: prog.launch(
            "js_rts_reduce", tiles, [x, 0, n, spine, out, 0, carry, *seg]
        ),
        "spine scan (js_rts_spine)": lambda i: prog.launch(
            "js_rts_spine", 1, [spine, tiles, out, 0, spec.kind_code]
        ),
        "fix-up (js_rts_seg_fixup)": lambda i: prog.launch(
            "js_rts_seg_fixup", -(-tiles // spec.threads), [spine, carry, out, 0, tiles, first]
        ),
        "whole call (execute.run)": lambda i: execute.run(b, q, spec, x, out, n, check=False, offsets=offs),
    }
    plain = default_spec(timer, "rts", "int32", n, kind="reduce")
    total = cupy.empty(1, np.int32)
    parts["plain reduce, no segments (rts)"] = lambda i: execute.run(b, q, plain, x, total, n, check=False)
    # the spine's cost per pass and without segments: is it the passes or the pairs?
    parts["segmented spine, one pass"] = lambda i: prog.launch(
        "js_rts_spine", 1, [spine, spec.tile, out, 0, spec.kind_code]
    )
    plain_prog = b.program(plain, q)
    plain_spine = cupy.zeros(tiles, np.int32)
    parts["plain spine, same length"] = lambda i: plain_prog.launch(
        "js_rts_spine", 1, [plain_spine, tiles, total, 0, plain.kind_code]
    )
    print(f"2^{e} int32, mean segment length {mean}, {nseg} segments, {tiles} tiles of {spec.tile}")
    for name, fn in parts.items():
        t = timer.time(fn, 30)[0]
        print(f"  {name:32s} {t * 1e6:8.1f} us  ({n / t / 1e9:.1f} Ge/s over n)")
    cub, dout = cub_segmented_reduce(x, off)
    t = interleaved(timer, {"jitscan": parts["whole call (execute.run)"], "cub": cub})
    execute.run(b, q, spec, x, out, n, check=False, offsets=offs)
    ok = bool((out == dout).all())
    t_cub = t["cub"]
    print(f"  {'CUB segmented reduce':32s} {t_cub * 1e6:8.1f} us  ({n / t_cub / 1e9:.1f} Ge/s), equal: {ok}")
    print(f"  in turns with CUB: jitscan {t['jitscan'] * 1e6:.1f} us = {t['cub'] / t['jitscan']:.3f}x CUB")


if __name__ == "__main__":
    main()
