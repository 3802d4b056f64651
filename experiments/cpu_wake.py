"""What a host call on a CPU device costs after the process did something else, or nothing.

Usage: python experiments/cpu_wake.py [LOG2N]   (default 20)

A prepared int32 scan of NumPy arrays with ``out=`` on the default OpenCL device (PoCL's
threaded driver as pip installs it; ``POCL_DEVICES="pthread basic"`` for the in-thread
one), 40 calls each after: nothing (calls back to back), 200 µs of busy Python, a sleep
of 200 µs, a sleep of 5 ms, and ``np.copyto`` of the same array. Prints the minimum and
the median in µs. The threaded driver's workers sleep between launches; on a virtual
machine a sleeping core may take long to wake, and the calls of a benchmark that times
several functions in turns each start after the others.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

import jitscan


def spin(us: float) -> None:
    t = time.perf_counter()
    while time.perf_counter() - t < us * 1e-6:
        pass


def main() -> None:
    n = 1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 20)
    x = np.random.default_rng(0).integers(-100, 100, n).astype(np.int32)
    z, y = np.empty_like(x), np.empty_like(x)
    scan = jitscan.plan("int32", backend="opencl")
    scan(x, z)
    print(f"device: {scan.backend.device_info(scan.backend.default_queue()).name}; n = {n}")
    befores: dict[str, Callable[[], object]] = {
        "back to back": lambda: None,
        "after 200 us busy": lambda: spin(200),
        "after a 200 us sleep": lambda: time.sleep(2e-4),
        "after a 5 ms sleep": lambda: time.sleep(5e-3),
        "after np.copyto": lambda: np.copyto(y, x),
    }
    for label, before in befores.items():
        ts = []
        for _ in range(40):
            before()
            t = time.perf_counter()
            scan(x, z)
            ts.append(time.perf_counter() - t)
        ts.sort()
        print(f"{label}: min {ts[0] * 1e6:.0f} µs, median {ts[len(ts) // 2] * 1e6:.0f} µs", flush=True)


if __name__ == "__main__":
    main()
