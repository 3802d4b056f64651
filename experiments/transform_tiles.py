"""Device time of a transform's one pass against its tile's vectors, on a CUDA GPU.

Usage: python experiments/transform_tiles.py [LOG2N ...]   (default 24 28)

A transform's rules run once every element's reads of the tile are loaded (tile.h), so a
thread holds its reads beside its scanned values, and the vectors a thread holds
(``plan/transformed.GPU_VECTORS``) trade registers and occupancy against the work of a tile.
Per size, int32, pipelined (an event, 10 calls back to back, an event; the median of 7
rounds taken in turns), through :class:`jitscan.ScanKernel` into arrays made once:
- compaction: half of a mask kept at random (reads the mask and x, writes the kept x and
  the count), beside CuPy's copy of as many bytes as it moves (7n/2 read and written);
- unique runs with counts: runs of mean length 8 (reads the keys, writes each run's key and
  start), beside the copy of its bytes (4n read, n/8 * 12 written: 2.75n copied).
"""

from __future__ import annotations

import statistics
import sys

import cupy
import numpy as np

import jitscan
from jitscan import Write
from jitscan.bench.studies import piped, selection_cases

VECTORS = (4, 8)


def kernels(p: int) -> tuple[jitscan.ScanKernel, jitscan.ScanKernel]:
    keep = jitscan.ScanKernel(
        reads=[("c", "bool"), ("x", "int32")], item="c != 0", writes=[("y", "int32"), ("count", "int64")],
        rules=[Write("y", "v", "x", "item"), Write("count", "0", "v + item", "i == n - 1")],
        dtype="int32", kind="exclusive", name="keep", vectors=p,
    )  # fmt: skip
    runs = jitscan.ScanKernel(
        reads=[("k", "int32")], item="i == 0 || k != k[i - 1]",
        writes=[("u", "int32"), ("starts", "int64"), ("count", "int64")],
        rules=[Write("u", "v - 1", "k", "item"), Write("starts", "v - 1", "i", "item"),
               Write("count", "0", "v", "i == n - 1")],
        dtype="int32", kind="inclusive", name="runs", vectors=p,
    )  # fmt: skip
    return keep, runs


def one_size(log2n: int) -> list[tuple[str, float]]:
    n = 1 << log2n
    x_h, mask_h, keys_h = selection_cases(log2n)
    x, mask, k = cupy.asarray(x_h), cupy.asarray(mask_h), cupy.asarray(keys_h)
    y, u = cupy.empty(n, np.int32), cupy.empty(n, np.int32)
    starts, count = cupy.empty(n, np.int64), cupy.empty(1, np.int64)
    yard = {w: cupy.empty(int(n * w), np.uint8) for w in (3.5, 2.75)}
    yard2 = {w: cupy.empty_like(a) for w, a in yard.items()}
    calls = {}
    for p in VECTORS:
        keep, runs = kernels(p)
        calls[f"compaction P={p}"] = lambda keep=keep: keep(c=mask, x=x, y=y, count=count)
        calls[f"unique runs P={p}"] = lambda runs=runs: runs(k=k, u=u, starts=starts, count=count)
    calls["copy 3.5n bytes (compaction's)"] = lambda: yard2[3.5].__setitem__(Ellipsis, yard[3.5])
    calls["copy 2.75n bytes (runs')"] = lambda: yard2[2.75].__setitem__(Ellipsis, yard[2.75])
    # right first
    want = cupy.asnumpy(x)[cupy.asnumpy(mask)]
    head = np.r_[True, keys_h[1:] != keys_h[:-1]]
    for p in VECTORS:
        calls[f"compaction P={p}"]()
        got = int(count.get()[0])
        assert got == want.size and np.array_equal(y[:got].get(), want), p
        calls[f"unique runs P={p}"]()
        got = int(count.get()[0])
        assert got == head.sum() and np.array_equal(u[:got].get(), keys_h[head]), p
    times: dict[str, list[float]] = {name: [] for name in calls}
    for fn in calls.values():
        fn()
    cupy.cuda.runtime.deviceSynchronize()
    for _ in range(7):
        for name, fn in calls.items():
            times[name].append(piped(fn))
    return [(name, statistics.median(t)) for name, t in times.items()]


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [24, 28]
    print("| 2^k | call | µs a call, pipelined | of the copy's speed |\n|---|---|---|---|")
    for log2n in sizes:
        med = dict(one_size(log2n))
        for name, us in med.items():
            which = "3.5n bytes (compaction's)" if "compaction" in name else "2.75n bytes (runs')"
            copy = med[f"copy {which}"]
            print(f"| {log2n} | {name} | {us:.1f} | {copy / us:.2f} |")
    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"\njitscan {jitscan.__version__}, CuPy {cupy.__version__}, {gpu}")


if __name__ == "__main__":
    main()
