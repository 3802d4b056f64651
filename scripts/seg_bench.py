"""Segmented-scan targets on a CUDA GPU (issue: segmented look-back with fallback).

Usage: python scripts/seg_bench.py [LOG2N]
Times, with jitscan.bench's device timer (CUDA events, median, spin kernel before runs):
  - segmented fallback, int32 values + uint8 head flags, mean segment lengths 10 and 1000,
    against the memcpy-equivalent rate for the bytes it moves (9 per element vs memcpy's 8);
  - segmented_reduce's kernels against CUB's segmented reduce (cuda.compute) on the same offsets;
  - cumsum(x, axis=-1) of a (2^14, 2^14) float32 array against the flat scan of as many elements.
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from jitscan import bench, execute, tuning
from jitscan.dtypes import lookup
from jitscan.monoid import resolve
from jitscan.segmented import _heads_from_offsets


def spec(timer, variant, dtype, n, segmented="", **knobs):
    return tuning.spec_for(
        timer.info,
        variant=variant,
        kind="inclusive",
        dtype=lookup(dtype),
        monoid=resolve("add"),
        n=n,
        segmented=segmented,
        **knobs,
    )


#: tile shapes tried for the segmented kernel (threads, vectors, min_blocks)
SHAPES = [(128, 16, 3), (128, 16, 2), (128, 8, 4), (128, 8, 0), (256, 8, 2), (256, 4, 0), (512, 4, 2)]


def sweep(timer, x, y, n, mode="flags", dtype="int32", **run_args):
    b, q = timer.backend, timer.queue
    for threads, vectors, mb in SHAPES:
        alt = spec(timer, "fallback", dtype, n, mode, threads=threads, vectors=vectors, min_blocks=mb)
        t = timer.time(lambda i, alt=alt: execute.run(b, q, alt, x, y, n, check=False, **run_args), 10)[0]
        k = b.program(alt, q).kernels["js_chained"].attributes
        print(
            f"  {mode} shape {threads}x{vectors} mb={mb}: {n / t / 1e9:.1f} Ge/s "
            f"regs={k['num_regs']} local={k['local_size_bytes']}B",
            flush=True,
        )


def time_cub(timer, x, off):
    """Median seconds of CUB's segmented sum over ``off`` (cuda.compute), and its output."""
    import cuda.compute as cc

    starts, ends = cupy.asarray(off[:-1]), cupy.asarray(off[1:])
    nseg = off.size - 1
    dout = cupy.empty(nseg, np.int32)
    h_init = np.zeros(1, np.int32)
    args = dict(d_in=x, d_out=dout, start_offsets_in=starts, end_offsets_in=ends, op=cc.OpKind.PLUS)
    red = cc.make_segmented_reduce(h_init=h_init, **args)
    nbytes = red(temp_storage=None, num_segments=nseg, h_init=h_init, **args)
    tmp = cupy.empty(max(int(nbytes), 1), np.uint8)
    t = timer.time(lambda i: red(temp_storage=tmp, num_segments=nseg, h_init=h_init, **args), 10)[0]
    return t, dout


def main() -> None:
    e = int(sys.argv[1]) if len(sys.argv) > 1 else 28
    n = 1 << e
    timer = bench.Timer("cupy")
    b, q = timer.backend, timer.queue
    rng = np.random.default_rng(7)
    x = cupy.asarray(rng.integers(-1000, 1000, n, dtype=np.int32))
    y = cupy.empty_like(x)
    mem = spec(timer, "memcpy", "int32", n)
    t_mem = timer.time(lambda i: execute.run(b, q, mem, x, y, n), 20)[0]
    print(
        f"memcpy int32 2^{e}: {n / t_mem / 1e9:.1f} Ge/s; memcpy-equivalent for 9 B/element: "
        f"{n / t_mem * 8 / 9 / 1e9:.1f} Ge/s"
    )
    seg = spec(timer, "fallback", "int32", n, "flags")
    rows = []
    for mean in (10, 1000):
        lens = rng.geometric(1.0 / mean, size=n // mean * 2)
        off = np.concatenate([[0], np.cumsum(lens)])
        off = off[off < n]
        off = np.concatenate([off, [n]]).astype(np.int64)
        heads = cupy.asarray(_heads_from_offsets(off, n))
        if mean == 10:
            sweep(timer, x, y, n, heads=heads)
        t = timer.time(lambda i, heads=heads: execute.run(b, q, seg, x, y, n, check=False, heads=heads), 20)[
            0
        ]
        rate = n / t
        rows.append((mean, rate))
        print(
            f"segmented fallback int32+uint8 2^{e} mean {mean}: {rate / 1e9:.1f} Ge/s = "
            f"{100 * rate / (n / t_mem * 8 / 9):.1f}% of memcpy-equivalent"
        )
        # segmented_reduce = segmented scan + gather of segment ends, vs CUB segmented reduce
        last = cupy.asarray(np.where(off[1:] > off[:-1], off[1:] - 1, n))
        ybig = cupy.empty(n + 1, np.int32)
        ybig[n] = 0

        def ours(i, heads=heads, last=last, ybig=ybig):
            execute.run(b, q, seg, x, ybig, n, check=False, heads=heads)
            return ybig[last]

        t_ours = timer.time(ours, 10)[0]
        try:
            t_cub, dout = time_cub(timer, x, off)
            ok = bool((ours(0) == dout).all())
            print(
                f"segmented_reduce mean {mean}: jitscan {n / t_ours / 1e9:.1f} Ge/s, "
                f"CUB {n / t_cub / 1e9:.1f} Ge/s (results equal: {ok})"
            )
        except Exception as exc:  # noqa: BLE001
            print(f"CUB segmented reduce unavailable: {exc}")
    # batched rows
    side = 1 << 14
    a = cupy.asarray(rng.standard_normal((side, side), dtype=np.float32))
    out = cupy.empty_like(a)
    flat = spec(timer, "fallback", "float32", side * side)
    rows_spec = spec(timer, "fallback", "float32", side * side, "rows")
    t_flat = timer.time(lambda i: execute.run(b, q, flat, a, out, side * side, check=False), 20)[0]
    sweep(timer, a, out, side * side, "rows", "float32", row_len=side)
    t_rows = timer.time(
        lambda i: execute.run(b, q, rows_spec, a, out, side * side, check=False, row_len=side), 20
    )[0]
    ref = cupy.cumsum(a[:3].astype(np.float64), axis=1)
    err = float(cupy.abs(out[:3] - ref).max())
    print(
        f"cumsum axis=-1 (2^14, 2^14) float32: {side * side / t_rows / 1e9:.1f} Ge/s = "
        f"{100 * t_flat / t_rows:.1f}% of the flat scan ({side * side / t_flat / 1e9:.1f} Ge/s); "
        f"max err {err:.2e}"
    )


if __name__ == "__main__":
    main()
