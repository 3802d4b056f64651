"""Host time of the reductions that run in stages (rts past 64 MiB): one CUDA graph or four launches.

Usage: [JITSCAN_GRAPHS=0] python experiments/stages_host.py [LOG2N ...]   (default 25 28)
       python experiments/stages_host.py ...   (the four launches)

Per size, int32: ``segmented_reduce(x, offsets=o)`` of segments of mean length 100 on
device offsets, and ``reduce(x2d, axis=1)`` of 64 rows; the host µs of a warm call (median
of 400, a synchronization every 20, not timed) and the isolated call (event, call, event,
median of 50). Run the two ways in turns, each in a process of its own.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import cupy
import numpy as np

import jitscan
from jitscan.bench import studies


def host(fn) -> float:
    times = []
    for i in range(400):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if i % 20 == 19:
            cupy.cuda.Device().synchronize()
    cupy.cuda.Device().synchronize()
    return statistics.median(times) * 1e6


def isolated(fn) -> float:
    return statistics.median(studies.isolated(fn) for _ in range(50))


def main() -> None:
    how = "four launches" if os.environ.get("JITSCAN_GRAPHS", "1") == "0" else "graph"
    rng = np.random.default_rng(0)
    for e in [int(a) for a in sys.argv[1:]] or [25, 28]:
        n = 1 << e
        hx = rng.integers(0, 9, n, dtype=np.int32)
        x = cupy.asarray(hx)
        cuts = np.unique(rng.integers(1, n, n // 100))
        o = cupy.asarray(np.r_[0, cuts, n].astype(np.int64))
        x2 = x.reshape(64, -1)
        calls = {
            "segmented_reduce": lambda x=x, o=o: jitscan.segmented_reduce(x, offsets=o),
            "reduce axis=1": lambda x2=x2: jitscan.reduce(x2, axis=1),
        }
        wants = {
            "segmented_reduce": np.add.reduceat(hx, np.r_[0, cuts]),
            "reduce axis=1": hx.reshape(64, -1).sum(axis=1, dtype=np.int64),
        }
        for name, fn in calls.items():
            fn()
            fn()
            ok = bool(np.array_equal(cupy.asnumpy(fn()), wants[name]))
            print(f"| {how} | 2^{e} | {name} | {host(fn):.2f} | {isolated(fn):.1f} | {ok} |", flush=True)


if __name__ == "__main__":
    main()
