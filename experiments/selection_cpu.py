"""Compaction, unique runs and reduce by key on a CPU through PoCL, NumPy in and out, beside NumPy.

Usage: python experiments/selection_cpu.py [LOG2N ...]   (default 20 22 24)

int32, half kept at random, keys in runs of mean length 8; the median of 7 calls of each,
in turns: ``jitscan.extract(mask, x)`` against ``x[mask]``; ``unique_consecutive(k,
return_counts=True)`` against NumPy's run-length encoding (``k[1:] != k[:-1]``, flatnonzero,
diff); ``reduce_by_key(k, v)`` against ``np.add.reduceat`` at the runs' starts.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import jitscan


def numpy_rle(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return k[starts], np.diff(np.r_[starts, k.size])


def numpy_reduce_by_key(k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return k[starts], np.add.reduceat(v, starts)


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [20, 22, 24]
    print("| 2^k | call | jitscan ms | NumPy ms | NumPy / jitscan |\n|---|---|---|---|---|")
    for log2n in sizes:
        one_size(log2n)
    b = jitscan.backends.get("opencl")
    print(f"\n{b.device_info(b.default_queue()).name}, NumPy {np.__version__}, jitscan {jitscan.__version__}")


def one_size(log2n: int) -> None:
    n = 1 << log2n
    rng = np.random.default_rng(log2n)
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    mask = rng.random(n) < 0.5
    lengths = rng.geometric(1 / 8, n // 4)
    k = np.repeat(np.arange(lengths.size, dtype=np.int32) % 1000, lengths)[:n]
    pairs = {
        "extract": (lambda: jitscan.extract(mask, x), lambda: x[mask]),
        "unique_consecutive(counts)": (
            lambda: jitscan.unique_consecutive(k, return_counts=True),
            lambda: numpy_rle(k),
        ),
        "reduce_by_key": (lambda: jitscan.reduce_by_key(k, x), lambda: numpy_reduce_by_key(k, x)),
    }
    for name, (ours, theirs) in pairs.items():
        a, b = ours(), theirs()  # warm, and right
        for got, want in zip(
            a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,), strict=False
        ):
            assert np.array_equal(got, want), name
        t_ours, t_theirs = [], []
        for _ in range(7):
            t = time.perf_counter()
            ours()
            t_ours.append(time.perf_counter() - t)
            t = time.perf_counter()
            theirs()
            t_theirs.append(time.perf_counter() - t)
        mo, mt = statistics.median(t_ours) * 1e3, statistics.median(t_theirs) * 1e3
        print(f"| {log2n} | {name} | {mo:.2f} | {mt:.2f} | {mt / mo:.2f} |")


if __name__ == "__main__":
    main()
