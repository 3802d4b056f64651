"""The isolated call of small segmented reductions and axis scans, by tile shape, beside
CUB's segmented reduce and torch's cumsum along dim 1.

Usage: python experiments/small_forms.py [LOG2N ...]   (default 10 13 16)

int32. ``segmented_reduce(x, offsets=o)`` over device offsets of geometric lengths of mean
100 (the bench's), and ``cumsum(x2d, axis=1, out=y2d)`` of a (64, n / 64) matrix, each
with the default shape and with threads x vectors in {64, 128, 256} x {1, 2, 4, 8}; per
contender, in turns: the isolated call (event, call, event; median of 200) and the device
time of one launch sequence (the pipelined time of 20 calls back to back, median of 9),
in µs. Which shape a size class should take where a launch's latency decides.
"""

from __future__ import annotations

import statistics
import sys

import cupy
import numpy as np

import jitscan
from jitscan.bench.studies import cub_segmented_reduce, isolated, piped, random_offsets

SHAPES = [(t, v) for t in (64, 128, 256) for v in (1, 2, 4, 8)]


def table(k: int, form: str, fns: dict) -> None:
    for f in fns.values():
        f()
    iso = {key: [] for key in fns}
    pip = {key: [] for key in fns}
    order = list(fns)
    for r in range(200):
        for key in order if r % 2 == 0 else order[::-1]:
            iso[key].append(isolated(fns[key]))
    for r in range(9):
        for key in order if r % 2 == 0 else order[::-1]:
            pip[key].append(piped(fns[key], 20))
    rows = sorted((statistics.median(iso[key]), statistics.median(pip[key]), key) for key in fns)
    for a, b, key in rows:
        print(f"| {k} | {form} | {key} | {a:.2f} | {b:.2f} |", flush=True)


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10, 13, 16]
    print("| 2^k | form | contender | isolated µs | pipelined µs |\n|---|---|---|---|---|")
    for k in sizes:
        one_size(k)


def one_size(k: int) -> None:
    import torch

    n = 1 << k
    rng = np.random.default_rng(k)
    host_off = random_offsets(rng, n, 100)
    x = cupy.asarray(rng.integers(0, 9, n).astype(np.int32))
    off = cupy.asarray(host_off)
    fns = {"default": lambda: jitscan.segmented_reduce(x, offsets=off)}
    for t, v in SHAPES:
        knobs = {"threads": t, "vectors": v}
        try:
            jitscan.segmented_reduce(x, offsets=off, **knobs)
        except Exception as exc:  # noqa: BLE001 - a shape that does not build
            print(f"# reduce {knobs}: {type(exc).__name__}: {str(exc)[:80]}")
            continue
        fns[f"{t}x{v}"] = lambda knobs=knobs: jitscan.segmented_reduce(x, offsets=off, **knobs)
    try:
        cub, _ = cub_segmented_reduce(x, host_off)
        fns["CUB segmented reduce"] = lambda: cub(1)
    except Exception as exc:  # noqa: BLE001
        print(f"# CUB: {exc}")
    table(k, "segmented_reduce", fns)

    rows = 64
    x2 = cupy.asarray(rng.integers(0, 9, (rows, n // rows)).astype(np.int32))
    y2 = cupy.empty_like(x2)
    t2 = torch.as_tensor(x2, device="cuda")
    o2 = torch.empty_like(t2)
    fns = {"default": lambda: jitscan.cumsum(x2, axis=1, out=y2)}
    for t, v in SHAPES:
        knobs = {"threads": t, "vectors": v}
        try:
            jitscan.cumsum(x2, axis=1, out=y2, **knobs)
        except Exception as exc:  # noqa: BLE001
            print(f"# axis {knobs}: {type(exc).__name__}: {str(exc)[:80]}")
            continue
        fns[f"{t}x{v}"] = lambda knobs=knobs: jitscan.cumsum(x2, axis=1, out=y2, **knobs)
    fns["torch.cumsum(dim=1)"] = lambda: torch.cumsum(t2, 1, out=o2)
    y1 = cupy.empty(n, cupy.int32)
    xf = x2.reshape(-1)
    fns["flat cumsum(out=)"] = lambda: jitscan.cumsum(xf, out=y1)
    table(k, "axis scan", fns)


if __name__ == "__main__":
    main()
