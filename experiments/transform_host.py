"""The host's part of a compaction call on a CUDA GPU: µs a call, and where they go.

Usage: python experiments/transform_host.py [LOG2N]   (default 10)

CuPy arrays, int32, half kept: the host time of 2000 calls back to back (the device waited
for once at the end) of ``jitscan.extract(mask, x, size=n)`` (the form that never waits),
unique runs, reduce_by_key, scan_by_key and stable_partition, ``jitscan.cumsum(x, out=y)`` and
CuPy's ``x[mask]`` beside them; then cProfile's top functions of
each jitscan call by their own time. Every call here is of the form that never waits.
"""

from __future__ import annotations

import cProfile
import pstats
import sys

import cupy
import numpy as np

import jitscan
from jitscan.bench.studies import host_block


def per_call(fn, calls: int = 2000) -> float:
    for _ in range(100):  # warm: compiled, pools grown
        fn()
    cupy.cuda.runtime.deviceSynchronize()
    return host_block(fn, calls)


def main() -> None:
    n = 1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 10)
    rng = np.random.default_rng(0)
    x = cupy.asarray(rng.integers(0, 100, n, dtype=np.int32))
    mask = cupy.asarray(rng.random(n) < 0.5)
    keys = cupy.asarray(np.repeat(np.arange(n // 8 + 1, dtype=np.int32), 8)[:n])
    y = cupy.empty_like(x)
    calls = {
        "jitscan.extract(mask, x, size=n)": lambda: jitscan.extract(mask, x, size=n),
        "jitscan.unique_consecutive(k, size=n)": lambda: jitscan.unique_consecutive(keys, size=n),
        "jitscan.unique_consecutive(k, return_counts=True, size=n)": lambda: jitscan.unique_consecutive(
            keys, return_counts=True, size=n
        ),
        "jitscan.reduce_by_key(k, x, size=n)": lambda: jitscan.reduce_by_key(keys, x, size=n),
        "jitscan.scan_by_key(k, x)": lambda: jitscan.scan_by_key(keys, x),
        "jitscan.stable_partition(x, 'x > 50')": lambda: jitscan.stable_partition(x, "x > 50"),
        "jitscan.cumsum(x, out=y)": lambda: jitscan.cumsum(x, out=y),
        "jitscan.cumsum(x)": lambda: jitscan.cumsum(x),
        "cupy x[mask]": lambda: x[mask],
    }
    print("| call | host µs a call |\n|---|---|")
    for name, fn in calls.items():
        print(f"| {name} | {per_call(fn):.1f} |")
    for name, fn in calls.items():
        if not name.startswith("jitscan.") or "cumsum" in name:
            continue
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(500):
            fn()
        profile.disable()
        cupy.cuda.runtime.deviceSynchronize()
        print(f"\n=== {name}")
        pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
