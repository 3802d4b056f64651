"""Segmented-scan targets on a CUDA GPU (issue: segmented look-back with fallback).

Usage: python experiments/seg_bench.py [LOG2N] [opencl]   (opencl: the segmented tile sweep there)
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

import sys
from collections.abc import Callable
from typing import Any

try:
    import cupy
except ImportError:  # the opencl sweep needs no CuPy
    cupy = None
import numpy as np

from jitscan import bench
from jitscan.bench import studies
from jitscan.variants import NONE, Segments
from jitscan.variants.chained import KERNEL as CHAINED_KERNEL
from jitscan.variants.rts import REDUCE as RTS_REDUCE

#: tile shapes tried for the segmented kernel (threads, vectors, min_blocks)
SHAPES = [(128, 4, 8), (256, 4, 4), (256, 4, 3), (128, 8, 4), (256, 8, 2), (512, 4, 2), (128, 16, 3)]


#: tile shapes tried for rts's segmented reduction (no waiting: registers are cheaper)
RTS_SHAPES = [(256, 8, 2), (256, 8, 3), (128, 16, 4), (128, 16, 2), (512, 4, 3), (1024, 2, 2)]


def sweep(
    timer: bench.Timer,
    x: Any,
    y: Any,
    n: int,
    mode: str = "flags",
    dtype: str = "int32",
    kind: str = "inclusive",
    variant: str = "fallback",
    shapes: list | None = None,
    seg: Segments = NONE,
) -> None:
    """Time each tile shape (default: SHAPES, or RTS_SHAPES for rts); mode "" is the flat scan."""
    for threads, vectors, mb in shapes or (RTS_SHAPES if variant == "rts" else SHAPES):
        knobs = dict(threads=threads, vectors=vectors, min_blocks=mb)
        alt = studies.plan_for(timer, variant, dtype, mode, kind, **knobs)
        t = timer.time(studies.launcher(alt, timer, x, y, n, seg), 10)[0]
        line = (
            f"  {variant} {mode or 'flat'} {kind} shape {threads}x{vectors} mb={mb}: {n / t / 1e9:.1f} Ge/s"
        )
        if timer.name == "cupy":
            entry = RTS_REDUCE if variant == "rts" else CHAINED_KERNEL
            line += " " + studies.resources(studies.bound(alt, timer, n, seg), entry)
        print(line, flush=True)


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
    off = studies.random_offsets(rng, n, 10)
    heads = b.to_device(studies.heads_from_offsets(off, n), q)
    mem = studies.plan_for(timer, "memcpy", "int32")
    t_mem = timer.time(studies.launcher(mem, timer, x, y, n), 10)[0]
    print(f"OpenCL memcpy int32: {n / t_mem / 1e9:.1f} Ge/s")
    sweep(timer, x, y, n, seg=Segments(heads=heads), shapes=OPENCL_SHAPES)
    sweep(timer, x, y, n, mode="", shapes=FLAT_OPENCL_SHAPES)


def main() -> None:
    e = int(sys.argv[1]) if len(sys.argv) > 1 else 28
    n = 1 << e
    if len(sys.argv) > 2 and sys.argv[2] == "opencl":
        opencl_sweep(n)
        return
    timer = bench.Timer("cupy")
    rng = np.random.default_rng(7)
    x = cupy.asarray(rng.integers(-1000, 1000, n, dtype=np.int32))
    y = cupy.empty_like(x)
    mem = studies.plan_for(timer, "memcpy", "int32")
    t_mem = timer.time(studies.launcher(mem, timer, x, y, n), 20)[0]
    print(
        f"memcpy int32 2^{e}: {n / t_mem / 1e9:.1f} Ge/s; memcpy-equivalent for 9 B/element: "
        f"{n / t_mem * 8 / 9 / 1e9:.1f} Ge/s"
    )
    by_flags = studies.plan_for(timer, "fallback", "int32", "flags")
    by_off = studies.plan_for(timer, "fallback", "int32", "offsets")
    red = studies.plan_for(timer, "fallback", "int32", "offsets", "reduce")
    red_rts = studies.plan_for(timer, "rts", "int32", "offsets", "reduce")
    for mean in (10, 1000):
        off = studies.random_offsets(rng, n, mean)
        heads = cupy.asarray(studies.heads_from_offsets(off, n))
        if mean == 10:
            sweep(timer, x, y, n, seg=Segments(heads=heads))
        t = timer.time(studies.launcher(by_flags, timer, x, y, n, Segments(heads=heads)), 20)[0]
        rate = n / t
        print(
            f"segmented fallback int32+uint8 2^{e} mean {mean}: {rate / 1e9:.1f} Ge/s = "
            f"{100 * rate / (n / t_mem * 8 / 9):.1f}% of memcpy-equivalent"
        )
        offs = cupy.asarray(off.astype(np.uint64))
        by_offsets = Segments(offsets=offs)
        t = timer.time(studies.launcher(by_off, timer, x, y, n, by_offsets), 20)[0]
        print(
            f"segmented fallback int32 by offsets 2^{e} mean {mean}: {n / t / 1e9:.1f} Ge/s = "
            f"{100 * t_mem / t:.1f}% of memcpy"
        )
        nseg = off.size - 1
        dsum = cupy.empty(nseg, np.int32)
        if mean == 1000:
            sweep(timer, x, dsum, n, "offsets", kind="reduce", variant="rts", seg=by_offsets)
        run_red = studies.launcher(red, timer, x, dsum, n, by_offsets)
        run_rts = studies.launcher(red_rts, timer, x, dsum, n, by_offsets)

        def ours(i: int, run: Callable[[int], Any] = run_red, dsum: Any = dsum) -> Any:
            run(i)
            return dsum

        def ours_rts(i: int, run: Callable[[int], Any] = run_rts, dsum: Any = dsum) -> Any:
            run(i)
            return dsum

        try:
            cub, dout = studies.cub_segmented_reduce(x, off)
            t = studies.interleaved(timer, {"fallback": ours, "rts": ours_rts, "cub": cub})
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
    total = side * side
    a = cupy.asarray(rng.standard_normal((side, side), dtype=np.float32))
    out = cupy.empty_like(a)
    flat = studies.plan_for(timer, "fallback", "float32")
    by_rows = studies.plan_for(timer, "fallback", "float32", "rows")
    t_flat = timer.time(studies.launcher(flat, timer, a, out, total), 20)[0]
    ref = cupy.cumsum(a[:3].astype(np.float64), axis=1)
    # the tile of the plain program compiled for rows of whole tiles
    tile = studies.bound(flat, timer, total, Segments(row_tiles=1)).spec.tile
    for name, scan, seg in (
        ("rows of whole tiles", flat, Segments(row_tiles=side // tile)),
        ("rows by heads", by_rows, Segments(row_len=side)),
    ):
        t_rows = timer.time(studies.launcher(scan, timer, a, out, total, seg), 20)[0]
        err = float(cupy.abs(out[:3] - ref).max())
        print(
            f"cumsum axis=-1 (2^14, 2^14) float32, {name}: {total / t_rows / 1e9:.1f} Ge/s = "
            f"{100 * t_flat / t_rows:.1f}% of the flat scan ({total / t_flat / 1e9:.1f} Ge/s); "
            f"max err {err:.2e}"
        )


if __name__ == "__main__":
    main()
