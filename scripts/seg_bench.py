"""Segmented-scan targets on a CUDA GPU (issue: segmented look-back with fallback).

Usage: python scripts/seg_bench.py [LOG2N] [opencl]   (opencl: the segmented tile sweep there)
Times, with jitscan.bench's device timer (CUDA events, median, spin kernel before runs):
  - segmented fallback, int32 values + uint8 head flags, mean segment lengths 10 and 1000,
    against the memcpy-equivalent rate for the bytes it moves (9 per element vs memcpy's 8);
  - the same scans with CSR offsets (heads marked in-kernel; 8 bytes per element);
  - segmented_reduce's kernels (offsets in, one total per segment out; the tile pre-pass
    included) against CUB's segmented reduce (cuda.compute) on the same offsets;
  - cumsum(x, axis=-1) of a (2^14, 2^14) float32 array against the flat scan of as many elements,
    both as cumsum runs it (rows of whole tiles) and with heads from the row length.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace

try:
    import cupy
except ImportError:  # the opencl sweep needs no CuPy
    cupy = None
import numpy as np

from jitscan import bench, execute, tuning
from jitscan.dtypes import lookup
from jitscan.monoid import resolve


def spec(timer, variant, dtype, n, segmented="", kind="inclusive", **knobs):
    return tuning.spec_for(
        timer.info,
        variant=variant,
        kind=kind,
        dtype=lookup(dtype),
        monoid=resolve("add"),
        n=n,
        segmented=segmented,
        **knobs,
    )


#: tile shapes tried for the segmented kernel (threads, vectors, min_blocks)
SHAPES = [(128, 4, 8), (256, 4, 4), (256, 4, 3), (128, 8, 4), (256, 8, 2), (512, 4, 2), (128, 16, 3)]


#: tile shapes tried for rts's segmented reduction (no waiting: registers are cheaper)
RTS_SHAPES = [(256, 8, 2), (256, 8, 3), (128, 16, 4), (128, 16, 2), (512, 4, 3), (1024, 2, 2)]


def sweep(
    timer, x, y, n, mode="flags", dtype="int32", kind="inclusive", variant="fallback", shapes=None, **run_args
):
    """Time each tile shape (default: SHAPES, or RTS_SHAPES for rts); mode "" is the flat scan."""
    b, q = timer.backend, timer.queue
    for threads, vectors, mb in shapes or (RTS_SHAPES if variant == "rts" else SHAPES):
        alt = spec(timer, variant, dtype, n, mode, kind, threads=threads, vectors=vectors, min_blocks=mb)
        t = timer.time(lambda i, alt=alt: execute.run(b, q, alt, x, y, n, check=False, **run_args), 10)[0]
        line = (
            f"  {variant} {mode or 'flat'} {kind} shape {threads}x{vectors} mb={mb}: {n / t / 1e9:.1f} Ge/s"
        )
        if timer.name == "cupy":
            entry = "js_rts_reduce" if variant == "rts" else "js_chained"
            k = b.program(alt, q).kernels[entry].attributes
            line += f" regs={k['num_regs']} local={k['local_size_bytes']}B shared={k['shared_size_bytes']}B"
        print(line, flush=True)


def random_offsets(rng, n, mean):
    """CSR offsets of geometric segment lengths with the given mean, covering 0..n."""
    off = np.concatenate([[0], np.cumsum(rng.geometric(1.0 / mean, size=n // mean * 2))])
    return np.concatenate([off[off < n], [n]]).astype(np.int64)


def heads_from_offsets(off, n):
    """uint8 head flags of CSR offsets (empty segments share a head)."""
    heads = np.zeros(n, np.uint8)
    heads[off[:-1][off[:-1] < n]] = 1
    return heads


def cub_segmented_reduce(x, off):
    """CUB's segmented sum over ``off`` (cuda.compute) as ``fn(i)``, and its output array."""
    import cuda.compute as cc

    starts, ends = cupy.asarray(off[:-1]), cupy.asarray(off[1:])
    nseg = off.size - 1
    dout = cupy.empty(nseg, np.int32)
    h_init = np.zeros(1, np.int32)
    args = dict(d_in=x, d_out=dout, start_offsets_in=starts, end_offsets_in=ends, op=cc.OpKind.PLUS)
    red = cc.make_segmented_reduce(h_init=h_init, **args)
    nbytes = red(temp_storage=None, num_segments=nseg, h_init=h_init, **args)
    tmp = cupy.empty(max(int(nbytes), 1), np.uint8)
    return (lambda i: red(temp_storage=tmp, num_segments=nseg, h_init=h_init, **args)), dout


def interleaved(timer, fns, rounds=6, reps=10):
    """Median seconds of each ``fn(i)``, timed in alternating rounds (order flipped each round).

    Two close contenders timed one after the other differed by 3-4% between runs; timing
    them in turns spreads clock and thermal drift over both.
    """
    samples = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            samples[name] += timer.time(fns[name], reps)[2]
    return {name: statistics.median(ts) for name, ts in samples.items()}


#: segmented shapes for OpenCL (threads, vectors, min_blocks: .minnctapersm on NVIDIA)
OPENCL_SHAPES = [(128, 4, 0), (128, 4, 8), (256, 4, 4), (64, 8, 0), (64, 8, 16), (128, 8, 4), (256, 8, 2)]


#: flat-scan shapes for OpenCL (threads, vectors, min_blocks: .minnctapersm on NVIDIA)
FLAT_OPENCL_SHAPES = [
    (128, 8, 0),
    (128, 16, 0),
    (128, 16, 3),
    (128, 16, 2),
    (128, 8, 4),
    (256, 8, 2),
    (64, 16, 6),
    (64, 32, 3),
]


def opencl_sweep(n: int) -> None:
    """Segmented (flags, mean length 10) tile shapes on the OpenCL backend."""
    timer = bench.Timer("opencl")
    b, q = timer.backend, timer.queue
    rng = np.random.default_rng(7)
    x = b.to_device(rng.integers(-1000, 1000, n, dtype=np.int32), q)
    y = b.empty((n,), np.int32, q)
    off = random_offsets(rng, n, 10)
    heads = b.to_device(heads_from_offsets(off, n), q)
    mem = spec(timer, "memcpy", "int32", n)
    t_mem = timer.time(lambda i: execute.run(b, q, mem, x, y, n), 10)[0]
    print(f"OpenCL memcpy int32: {n / t_mem / 1e9:.1f} Ge/s")
    sweep(timer, x, y, n, heads=heads, shapes=OPENCL_SHAPES)
    sweep(timer, x, y, n, mode="", shapes=FLAT_OPENCL_SHAPES)


def main() -> None:
    e = int(sys.argv[1]) if len(sys.argv) > 1 else 28
    n = 1 << e
    if len(sys.argv) > 2 and sys.argv[2] == "opencl":
        opencl_sweep(n)
        return
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
    by_off = spec(timer, "fallback", "int32", n, "offsets")
    red = spec(timer, "fallback", "int32", n, "offsets", "reduce")
    red_rts = spec(timer, "rts", "int32", n, "offsets", "reduce")
    rows = []
    for mean in (10, 1000):
        off = random_offsets(rng, n, mean)
        heads = cupy.asarray(heads_from_offsets(off, n))
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
        offs = cupy.asarray(off.astype(np.uint64))
        t = timer.time(lambda i, o=offs: execute.run(b, q, by_off, x, y, n, check=False, offsets=o), 20)[0]
        print(
            f"segmented fallback int32 by offsets 2^{e} mean {mean}: {n / t / 1e9:.1f} Ge/s = "
            f"{100 * t_mem / t:.1f}% of memcpy"
        )
        nseg = off.size - 1
        dsum = cupy.empty(nseg, np.int32)
        if mean == 1000:
            sweep(timer, x, dsum, n, "offsets", kind="reduce", variant="rts", offsets=offs)

        def ours(i, offs=offs, dsum=dsum):
            execute.run(b, q, red, x, dsum, n, check=False, offsets=offs)
            return dsum

        def ours_rts(i, offs=offs, dsum=dsum):
            execute.run(b, q, red_rts, x, dsum, n, check=False, offsets=offs)
            return dsum

        try:
            cub, dout = cub_segmented_reduce(x, off)
            t = interleaved(timer, {"fallback": ours, "rts": ours_rts, "cub": cub})
            t_ours, t_rts, t_cub = t["fallback"], t["rts"], t["cub"]
            ok = bool((ours(0) == dout).all()) and bool((ours_rts(0) == dout).all())
            print(
                f"segmented_reduce mean {mean}: jitscan fallback {n / t_ours / 1e9:.1f} Ge/s, "
                f"rts {n / t_rts / 1e9:.1f} Ge/s, CUB {n / t_cub / 1e9:.1f} Ge/s (results equal: {ok})"
            )
        except Exception as exc:  # noqa: BLE001
            print(f"CUB segmented reduce unavailable: {exc}")
    # batched rows: rows of whole tiles run the plain chained kernel restarting per row
    # (what cumsum(axis=-1) picks here); rows mode marks heads from the row length
    side = 1 << 14
    a = cupy.asarray(rng.standard_normal((side, side), dtype=np.float32))
    out = cupy.empty_like(a)
    flat = spec(timer, "fallback", "float32", side * side)
    rows_spec = spec(timer, "fallback", "float32", side * side, "rows")
    t_flat = timer.time(lambda i: execute.run(b, q, flat, a, out, side * side, check=False), 20)[0]
    ref = cupy.cumsum(a[:3].astype(np.float64), axis=1)
    for name, sp, args in (
        ("rows of whole tiles", replace(flat, row_tiles=True), {"row_tiles": side // flat.tile}),
        ("rows by heads", rows_spec, {"row_len": side}),
    ):
        t_rows = timer.time(
            lambda i, sp=sp, args=args: execute.run(b, q, sp, a, out, side * side, False, **args), 20
        )[0]
        err = float(cupy.abs(out[:3] - ref).max())
        print(
            f"cumsum axis=-1 (2^14, 2^14) float32, {name}: {side * side / t_rows / 1e9:.1f} Ge/s = "
            f"{100 * t_flat / t_rows:.1f}% of the flat scan ({side * side / t_flat / 1e9:.1f} Ge/s); "
            f"max err {err:.2e}"
        )


if __name__ == "__main__":
    main()
