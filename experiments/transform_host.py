"""The host's part of the no-stall calls on a GPU: µs a call, and where they go.

Usage: python experiments/transform_host.py [--opencl] [--ab] [LOG2N]   (default 10)

CuPy arrays (with --opencl PyOpenCL's, on the default device), int32, half kept: the host
time of 2000 calls back to back (the device waited for once at the end) of
``jitscan.extract(mask, x, size=n)``, unique runs, reduce_by_key, scan_by_key and
stable_partition (each the form that never waits), ``jitscan.cumsum(x, out=y)`` and CuPy's
``x[mask]`` beside them; then cProfile's top functions of each jitscan call by own time.
With ``--ab`` (and ``BASE=DIR`` on PYTHONPATH holding an older tree as ``jitscan_base``, its
extension built there): both trees' calls in one process, in alternating rounds, medians,
and no profile.
"""

from __future__ import annotations

import cProfile
import importlib
import pstats
import statistics
import sys
import time

import numpy as np

import jitscan

OPENCL = "--opencl" in sys.argv
if OPENCL:
    import pyopencl.array as cla

    queue = jitscan.backends.get("opencl").default_queue()
    put = lambda h: cla.to_device(queue, h)  # noqa: E731
    sync = queue.finish
else:
    import cupy

    from jitscan.bench.studies import host_block

    put, sync = cupy.asarray, cupy.cuda.runtime.deviceSynchronize


def per_call(fn, calls: int = 2000) -> float:
    for _ in range(100):  # warm: compiled, pools grown
        fn()
    sync()
    if not OPENCL:
        return host_block(fn, calls)
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    us = (time.perf_counter() - t) / calls * 1e6
    sync()
    return us


def the_calls(jitscan, n: int) -> dict:
    rng = np.random.default_rng(0)
    x = put(rng.integers(0, 100, n, dtype=np.int32))
    mask = put(rng.random(n) < 0.5)
    keys = put(np.repeat(np.arange(n // 8 + 1, dtype=np.int32), 8)[:n])
    y = put(np.zeros(n, np.int32))
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
    }
    if not OPENCL:
        calls["cupy x[mask]"] = lambda: x[mask]
    return calls


def main() -> None:
    sizes = [a for a in sys.argv[1:] if a.isdigit()]
    n = 1 << (int(sizes[0]) if sizes else 10)
    calls = the_calls(jitscan, n)
    if "--ab" in sys.argv:
        base = the_calls(importlib.import_module("jitscan_base"), n)
        times: dict[str, tuple[list, list]] = {name: ([], []) for name in calls}
        for _ in range(3):
            for name in calls:
                times[name][0].append(per_call(calls[name]))
                times[name][1].append(per_call(base[name]))
        print("| call | this tree µs | base µs | base / this |\n|---|---|---|---|")
        for name, (now, was) in times.items():
            a, b = statistics.median(now), statistics.median(was)
            print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f} |")
        return
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
        sync()
        print(f"\n=== {name}")
        pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
