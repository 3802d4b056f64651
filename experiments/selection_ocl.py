"""Compaction, partition and unique runs on an OpenCL device, beside PyOpenCL's algorithm module.

Usage: python experiments/selection_ocl.py [LOG2N ...]   (default 20 24; the default OpenCL device,
PYOPENCL_CTX picks another)

int32, the median of 7 rounds taken in turns of each call with the queue finished after it
(the whole call as a user waits for it): ``jitscan.copy_if(x, "x > 0")`` and
``pyopencl.algorithm.copy_if(x, "ary[i] > 0")``; ``jitscan.stable_partition`` and
``pyopencl.algorithm.partition``; ``jitscan.unique_consecutive`` and
``pyopencl.algorithm.unique`` of runs of mean length 8. Then the ratios (PyOpenCL's time over
jitscan's: above 1 jitscan is faster).
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.algorithm as algorithm
import pyopencl.array as cla

import jitscan


def timed(fn, queue) -> float:
    queue.finish()
    t = time.perf_counter()
    fn()
    queue.finish()
    return (time.perf_counter() - t) * 1e6


def pairs_for(x, k, queue) -> dict:
    """(jitscan's call, PyOpenCL's) by name."""
    return {
        "copy_if x > 0": (
            lambda: jitscan.copy_if(x, "x > 0"),
            lambda: algorithm.copy_if(x, "ary[i] > 0", queue=queue),
        ),
        "stable_partition x > 0": (
            lambda: jitscan.stable_partition(x, "x > 0"),
            lambda: algorithm.partition(x, "ary[i] > 0", queue=queue),
        ),
        "unique runs": (
            lambda: jitscan.unique_consecutive(k),
            lambda: algorithm.unique(k, queue=queue),
        ),
    }


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [20, 24]
    queue = jitscan.backends.get("opencl").queue_of(None)
    print(f"device: {queue.device.name} ({queue.device.platform.name})\n")
    print("| 2^k | call | jitscan µs | PyOpenCL µs | PyOpenCL / jitscan |\n|---|---|---|---|---|")
    for log2n in sizes:
        n = 1 << log2n
        rng = np.random.default_rng(log2n)
        xh = rng.integers(-1000, 1000, n, dtype=np.int32)
        lengths = rng.geometric(1 / 8, n // 4)
        kh = np.repeat(np.arange(lengths.size, dtype=np.int32) % 1000, lengths)[:n]
        x, k = cla.to_device(queue, xh), cla.to_device(queue, kh)
        pairs = pairs_for(x, k, queue)
        # right first: the same kept values and runs
        assert np.array_equal(jitscan.copy_if(x, "x > 0").get(), xh[xh > 0])
        out, count, _ = algorithm.copy_if(x, "ary[i] > 0", queue=queue)
        assert np.array_equal(out.get()[: int(count.get())], xh[xh > 0])
        times = {name: ([], []) for name in pairs}
        for mine, theirs in pairs.values():  # compiled, pools grown
            mine(), theirs()
        for _ in range(7):
            for name, (mine, theirs) in pairs.items():
                times[name][0].append(timed(mine, queue))
                times[name][1].append(timed(theirs, queue))
        for name, (a, b) in times.items():
            ma, mb = statistics.median(a), statistics.median(b)
            print(f"| {log2n} | {name} | {ma:.1f} | {mb:.1f} | {mb / ma:.2f} |")
    print(f"\njitscan {jitscan.__version__}, PyOpenCL {cl.VERSION_TEXT}")


if __name__ == "__main__":
    main()
