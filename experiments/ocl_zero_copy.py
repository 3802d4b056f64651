"""Does a kernel's write to a buffer the driver allocates on the host (CL_MEM_ALLOC_HOST_PTR)
reach the host's mapping of it without a copy or a new map? If it does on a device, the
offsets alarm's flag there needs no copy behind each call by offsets.

Usage: python experiments/ocl_zero_copy.py

On the default OpenCL device: a 16-byte buffer made with ALLOC_HOST_PTR and mapped once;
1000 times a one-work-item kernel writes a new value into it and the host waits for the
queue (clFinish), then reads the mapping: how many of the 1000 it saw. Then 200 times
without the wait: how long, polling the mapping, the value took to show (µs, median and
the most), or that it never did within 10 ms. OpenCL promises neither: a mapping is only
sure to hold the buffer's contents after a map command that follows the write.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import pyopencl as cl

import jitscan

queue = jitscan.backends.get("opencl").default_queue()
ctx = queue.context
print(queue.device.name, "|", queue.device.platform.version, "|", queue.device.driver_version)
mf = cl.mem_flags
buf = cl.Buffer(ctx, mf.READ_WRITE | mf.ALLOC_HOST_PTR, 16)
host, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0, (4,), np.uint32)
host[:] = 0
k = cl.Program(ctx, "__kernel void k(__global volatile uint *f, uint v) { f[0] = v; }").build().k
k.set_scalar_arg_dtypes([None, np.uint32])
seen = 0
for i in range(1, 1001):
    k(queue, (1,), (1,), buf, i)
    queue.finish()
    seen += int(host[0] == i)
print(f"after clFinish, the mapping held the kernel's value {seen} times of 1000")
waits: list[float] = []
never = 0
for i in range(2001, 2201):
    queue.finish()
    k(queue, (1,), (1,), buf, i)
    t = time.perf_counter()
    while host[0] != i:
        if time.perf_counter() - t > 0.01:
            never += 1
            break
    else:
        waits.append((time.perf_counter() - t) * 1e6)
queue.finish()
if waits:
    print(
        f"without a wait: seen {len(waits)} of 200, after {statistics.median(waits):.1f} µs (median), "
        f"{max(waits):.1f} at most; never within 10 ms: {never}"
    )
else:
    print(f"without a wait: never seen within 10 ms ({never} of 200)")
