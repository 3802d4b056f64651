"""What an OpenCL launch and a flag's copy cost below PyOpenCL: the driver's own calls,
reached through ctypes with no event asked for, beside PyOpenCL's calls of the same.

Usage: python experiments/ocl_raw_enqueue.py [CALLS]

On the default OpenCL device, a kernel of three buffers and two scalars (as a flat scan's
launch sets them), back to back, µs a call (min of 5 rounds of CALLS, default 3000):
- ``pyopencl``: the kernel's arguments set once, then ``enqueue_nd_range_kernel`` (an event
  object made for each);
- ``pyopencl set+enqueue``: the two buffers and the last scalar set again, then enqueued,
  as jitscan's setter does in a loop;
- ``ctypes enqueue``: ``clEnqueueNDRangeKernel`` with no event (ctypes' own call costs a
  part of it: the figure bounds the driver's from above);
- ``ctypes set+enqueue``: three ``clSetKernelArg`` and the enqueue;
- a 4-byte read into pinned memory, non-blocking: PyOpenCL's ``enqueue_copy`` and
  ``clEnqueueReadBuffer`` with no event;
- ``ctypes empty call``: a ctypes call of a C function that does nothing (``clFlush`` of
  an idle queue is close enough), ctypes' own part.
If the driver's enqueue is much cheaper than PyOpenCL's, a compiled launch (C that calls
the driver's entry points) would take that difference off every OpenCL call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import time

import numpy as np
import pyopencl as cl

import jitscan

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
queue = jitscan.backends.get("opencl").default_queue()  # jitscan's default device
ctx = queue.context
dev = queue.device
print(dev.name, "|", dev.platform.version, "|", dev.driver_version, "| PyOpenCL", cl.VERSION_TEXT)
src = """
__kernel void k(__global const int *a, __global int *b, __global uint *f, uint n, uint epoch) {
    size_t i = get_global_id(0);
    if (i < n) b[i] = a[i] + (int)epoch;
    if (i == 0 && epoch == 0xffffffffu) f[0] = 1u;
}
"""
prog = cl.Program(ctx, src).build()
kern = prog.k
n = 1024
mf = cl.mem_flags
a = cl.Buffer(ctx, mf.READ_WRITE, 4 * n)
b = cl.Buffer(ctx, mf.READ_WRITE, 4 * n)
flag = cl.Buffer(ctx, mf.READ_WRITE, 16)
cl.enqueue_fill_buffer(queue, flag, np.uint32(0), 0, 16)
kern.set_args(a, b, flag, np.uint32(n), np.uint32(0))
pinned_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.ALLOC_HOST_PTR, 16)
rw = cl.map_flags.READ | cl.map_flags.WRITE
pinned, _ = cl.enqueue_map_buffer(queue, pinned_buf, rw, 0, (4,), np.uint32)
queue.finish()

# the ICD loader PyOpenCL uses is already in the process: any loader dispatches through
# the object's own table, so the system's finds the same driver
path = ctypes.util.find_library("OpenCL") or "libOpenCL.so.1"
lib = ctypes.CDLL(path)
vp, u32, sz = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t
lib.clEnqueueNDRangeKernel.argtypes = [vp, vp, u32, vp, vp, vp, u32, vp, vp]
lib.clEnqueueNDRangeKernel.restype = ctypes.c_int32
lib.clSetKernelArg.argtypes = [vp, u32, sz, vp]
lib.clSetKernelArg.restype = ctypes.c_int32
lib.clEnqueueReadBuffer.argtypes = [vp, vp, u32, sz, sz, vp, u32, vp, vp]
lib.clEnqueueReadBuffer.restype = ctypes.c_int32
lib.clFlush.argtypes = [vp]
lib.clFlush.restype = ctypes.c_int32
q_ptr, k_ptr = queue.int_ptr, kern.int_ptr
gsize = (sz * 1)(n)
lsize = (sz * 1)(128)
a_h, b_h, f_h = (vp(m.int_ptr) for m in (a, b, flag))
epoch = u32(0)
host_ptr = pinned.ctypes.data


def pyopencl_enqueue() -> None:
    cl.enqueue_nd_range_kernel(queue, kern, (n,), (128,))


def pyopencl_set() -> None:
    kern.set_arg(0, a)
    kern.set_arg(1, b)
    kern.set_arg(4, np.uint32(0))
    cl.enqueue_nd_range_kernel(queue, kern, (n,), (128,))


def raw_enqueue() -> None:
    lib.clEnqueueNDRangeKernel(q_ptr, k_ptr, 1, None, gsize, lsize, 0, None, None)


def raw_set() -> None:
    lib.clSetKernelArg(k_ptr, 0, 8, ctypes.byref(a_h))
    lib.clSetKernelArg(k_ptr, 1, 8, ctypes.byref(b_h))
    lib.clSetKernelArg(k_ptr, 4, 4, ctypes.byref(epoch))
    lib.clEnqueueNDRangeKernel(q_ptr, k_ptr, 1, None, gsize, lsize, 0, None, None)


def pyopencl_read() -> None:
    cl.enqueue_copy(queue, pinned, flag, is_blocking=False)


def raw_read() -> None:
    lib.clEnqueueReadBuffer(q_ptr, f_h, 0, 0, 4, host_ptr, 0, None, None)


def ctypes_only() -> None:
    lib.clFlush(q_ptr)


cases = {
    "pyopencl enqueue": pyopencl_enqueue,
    "pyopencl set+enqueue": pyopencl_set,
    "ctypes enqueue": raw_enqueue,
    "ctypes set+enqueue": raw_set,
    "pyopencl read (pinned)": pyopencl_read,
    "ctypes read (pinned)": raw_read,
    "ctypes empty call (clFlush)": ctypes_only,
}
best = {k: float("inf") for k in cases}
for _ in range(5):  # in turns
    for name, fn in cases.items():
        for _ in range(100):
            fn()
        queue.finish()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best[name] = min(best[name], (time.perf_counter() - t) / calls * 1e6)
        queue.finish()
print("| call | µs a call (min of 5 rounds) |\n|---|---|")
for name, us in best.items():
    print(f"| {name} | {us:.2f} |")
