"""Where the host time of each call form goes: cProfile of warm calls, on CuPy or PyOpenCL arrays.

Usage: python experiments/profile_forms.py [--opencl] [--top K] [LOG2N ...] [FORM ...]

For each size and form (flat, initial=, tuple values, segmented by flags and offsets,
segmented reduce, an axis scan and reduction), the host µs a call without the profiler
(perf_counter around 2,000 warm calls), then 500 calls under cProfile and the K functions
of most own time. With --opencl the arrays are PyOpenCL's on the default device, and a
last table gives what PyOpenCL's own primitives cost there (a kernel enqueue with its
arguments set, a copy back without waiting, an event's status, a fill), the pieces the
forms' calls are made of.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

import numpy as np

import jitscan
from jitscan.bench.operators import affine

args = sys.argv[1:]
opencl = "--opencl" in args
top = 12
if "--top" in args:
    top = int(args[args.index("--top") + 1])
    del args[args.index("--top") : args.index("--top") + 2]
sizes = [int(a) for a in args if a.isdigit()] or [10]
only = [a for a in args if not a.isdigit() and not a.startswith("--")]

if opencl:
    import pyopencl as cl
    import pyopencl.array as cla

    queue = jitscan.backends.get("opencl").default_queue()
    put = lambda h: cla.to_device(queue, h)  # noqa: E731
    empty = lambda shape, dt: cla.empty(queue, shape, dt)  # noqa: E731
    sync = queue.finish
else:
    import cupy

    put = cupy.asarray
    empty = cupy.empty
    sync = cupy.cuda.runtime.deviceSynchronize


def forms(n: int) -> dict:
    rng = np.random.default_rng(1)
    x = put(rng.integers(0, 9, n).astype(np.int32))
    y = empty((n,), np.int32)
    host_off = np.r_[0, np.sort(rng.choice(np.arange(1, n), n // 100, replace=False)), n].astype(np.int64)
    off = put(host_off)
    fl = np.zeros(n, np.uint8)
    fl[host_off[:-1]] = 1
    flags = put(fl)
    a = put(rng.random(n).astype(np.float32))
    b = put(rng.random(n).astype(np.float32))
    h = empty((n,), np.float32)
    rows = min(64, n)
    x2 = put(rng.integers(0, 9, (rows, n // rows)).astype(np.int32))
    y2 = empty((rows, n // rows), np.int32)
    return {
        "flat": lambda: jitscan.cumsum(x, out=y),
        "initial": lambda: jitscan.scan(x, initial=1, out=y),
        "tuple": lambda: jitscan.scan((a, b), op=affine, output=1, out=h),
        "flags": lambda: jitscan.segmented_cumsum(x, flags=flags, out=y),
        "offsets": lambda: jitscan.segmented_cumsum(x, offsets=off, out=y),
        "segmented_reduce": lambda: jitscan.segmented_reduce(x, offsets=off),
        "axis": lambda: jitscan.cumsum(x2, axis=1, out=y2),
        "axis_reduce": lambda: jitscan.reduce(x2, axis=1),
    }


def host_us(fn, calls: int = 2000) -> float:
    for _ in range(50):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    us = (time.perf_counter() - t) / calls * 1e6
    sync()
    return us


def main() -> None:
    summary = []
    for log2n in sizes:
        for name, fn in forms(1 << log2n).items():
            if only and name not in only:
                continue
            us = host_us(fn)
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(500):
                fn()
            pr.disable()
            sync()
            text = io.StringIO()
            pstats.Stats(pr, stream=text).sort_stats("tottime").print_stats(top)
            body = text.getvalue()
            print(f"\n=== 2^{log2n} {name}: {us:.2f} us a call (no profiler)\n{body[body.find('ncalls') :]}")
            summary.append((log2n, name, us))

    if opencl:
        # PyOpenCL's pieces on this device, each alone, warm
        ctx = queue.context
        prg = cl.Program(
            ctx, "__kernel void k(__global int *a, ulong n, uint e) { if (get_global_id(0) < n) a[0] = e; }"
        ).build()
        k = prg.k
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
        host = np.zeros(1, np.uint32)
        k.set_args(buf, np.uint64(1), np.uint32(0))
        pieces = {
            "enqueue_nd_range_kernel (arguments set before)": lambda: cl.enqueue_nd_range_kernel(
                queue, k, (64,), (64,)
            ),
            "k(queue, ...) with its arguments": lambda: k(
                queue, (64,), (64,), buf, np.uint64(1), np.uint32(0)
            ),
            "enqueue_copy to host, not waiting": lambda: cl.enqueue_copy(queue, host, buf, is_blocking=False),
            "enqueue_fill_buffer 4 bytes": lambda: cl.enqueue_fill_buffer(queue, buf, np.uint32(0), 0, 4),
        }
        pinned = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, 16)
        rw = cl.map_flags.READ | cl.map_flags.WRITE
        mapped, _ = cl.enqueue_map_buffer(queue, pinned, rw, 0, (4,), np.uint32)
        into = mapped[:1]
        pieces["_enqueue_read_buffer to pinned, not waiting"] = lambda: cl._cl._enqueue_read_buffer(
            queue, buf, into, 0, None, False
        )
        pieces["_enqueue_read_buffer to pageable, not waiting"] = lambda: cl._cl._enqueue_read_buffer(
            queue, buf, host, 0, None, False
        )
        backend = jitscan.backends.get("opencl")
        pieces["backend.empty(64 int32) (PyOpenCL's fast constructor)"] = lambda: backend.empty(
            (64,), np.dtype(np.int32), queue
        )
        ev = cl.enqueue_marker(queue)
        sync()
        pieces["event.command_execution_status"] = lambda: ev.command_execution_status
        pieces["cla.empty(64 int32) from a pool"] = None
        from pyopencl.tools import DeferredAllocator, MemoryPool

        pool = MemoryPool(DeferredAllocator(ctx))
        pieces["cla.empty(64 int32) from a pool"] = lambda: cla.empty(queue, (64,), np.int32, allocator=pool)
        print("\n| PyOpenCL piece | µs a call |\n|---|---|")
        for what, fn in pieces.items():
            print(f"| {what} | {host_us(fn, 5000):.2f} |")

    print("\n| 2^k | form | host µs a call |\n|---|---|---|")
    for log2n, name, us in summary:
        print(f"| {log2n} | {name} | {us:.2f} |")


if __name__ == "__main__":
    main()
