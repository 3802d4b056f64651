"""What setting a kernel's arguments costs a call through PyOpenCL, on the default OpenCL device.

Usage: python experiments/opencl_args.py

Takes the chained scan's kernel object and arguments from one prepared int32 call of 1,024
elements (one tile), then times, in blocks of 200 calls in 15 rounds taking turns:
``kernel(queue, ...)`` with all twelve arguments (PyOpenCL's generated invoker sets them and
enqueues), ``enqueue_nd_range_kernel`` alone (arguments already set), one argument set
through the public ``Kernel.set_arg`` and through the private ``_set_arg_buf_pack_multi``
that the invokers use, and the seven arguments a call changes (the arrays, their offsets,
the size, the kind and the epoch) through the private setters before the enqueue. Medians
in microseconds a call. The kernels run with one epoch over and over: their results are
not checked.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import jitscan
from jitscan.backends import opencl_programs

CALLS = 200
ROUNDS = 15
EPOCH = 7  # the chained kernel's arguments: src, off, dst, off, n, scratch, kind, epoch, ...


def captured() -> tuple[Any, Any, tuple, tuple, tuple]:
    """The chained kernel of one prepared call, with its queue, sizes and arguments."""
    got: dict[str, tuple] = {}
    real = opencl_programs.CLProgram._kernel

    def spy(self: Any, entry: str) -> Any:
        kernel = real(self, entry)
        if entry != "js_chained":
            return kernel

        def call(queue: Any, g: tuple, local: tuple, *args: Any) -> Any:
            got["call"] = (kernel, queue, g, local, args)
            return kernel(queue, g, local, *args)

        return call

    opencl_programs.CLProgram._kernel = spy
    try:
        p = jitscan.plan("int32", backend="opencl")
        queue = p.backend.queue_for(None)
        x = cla.to_device(queue, np.ones(1024, np.int32))
        p(x, out=cla.empty_like(x))
        queue.finish()
    finally:
        opencl_programs.CLProgram._kernel = real
    return got["call"]


def main() -> None:
    kernel, queue, g, local, args = captured()
    epoch = int(args[EPOCH])
    as_u32 = np.uint32(epoch)
    found: dict[str, Callable[[], object]] = {
        "kernel(...), all 12 arguments": lambda: kernel(queue, g, local, *args),
        "enqueue_nd_range_kernel alone": lambda: cl.enqueue_nd_range_kernel(queue, kernel, g, local),
        "Kernel.set_arg, one uint32": lambda: kernel.set_arg(EPOCH, as_u32),
        "_set_arg_buf_pack_multi, one uint32": lambda: kernel._set_arg_buf_pack_multi((EPOCH, b"I", epoch)),
        "the 7 arguments a call changes (private setters), then the enqueue": lambda: changed(),
    }
    u64 = np.dtype(np.uint64).char.encode()  # as PyOpenCL's invokers pack a uint64
    buffers = (0, args[0], 2, args[2])
    scalars = (1, u64, args[1], 3, u64, args[3], 4, u64, args[4], 6, b"I", args[6], EPOCH, b"I", epoch)

    def changed() -> None:
        kernel._set_arg_multi(buffers)
        kernel._set_arg_buf_pack_multi(scalars)
        cl.enqueue_nd_range_kernel(queue, kernel, g, local)

    names = list(found)
    times: dict[str, list[float]] = {name: [] for name in names}
    for fn in found.values():
        fn()
    queue.finish()
    for r in range(ROUNDS):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t0 = time.perf_counter()
            for _ in range(CALLS):
                found[name]()
            t1 = time.perf_counter()
            queue.finish()
            times[name].append((t1 - t0) / CALLS * 1e6)
    print(f"{queue.device.name} ({queue.device.platform.name}), pyopencl {cl.VERSION_TEXT}")
    for name, t in times.items():
        print(f"| {name} | {statistics.median(t):.2f} | {min(t):.2f}-{max(t):.2f} |")


if __name__ == "__main__":
    main()
