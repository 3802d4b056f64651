"""What setting a kernel's arguments costs on an OpenCL device, piece by piece: PyOpenCL's
invoker against setting the buffers and the scalars that changed, for the kernels of a
segmented scan by flags and a pair scan (the arguments their launchers pass).

Usage: python experiments/ocl_setter.py

The kernels are captured from jitscan's own launchers (CLProgram._setter) on their fifth
call, then each piece is timed alone over 2,000 calls (median of 5 rounds, in turns), µs.
"""

from __future__ import annotations

import statistics
import struct
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import jitscan
from jitscan.backends import opencl_programs as op
from jitscan.bench.operators import affine

captured: dict[str, tuple] = {}
real = op.CLProgram._setter


def spy(self, entry, queue):
    launch = real(self, entry, queue)
    seen = [0]

    def wrapped(groups, args):
        seen[0] += 1
        if seen[0] == 5:
            captured.setdefault(
                f"{entry}/{len(args)}/{len(captured)}", (self, queue, groups, tuple(args), launch)
            )
        return launch(groups, args)

    return wrapped


op.CLProgram._setter = spy
queue = jitscan.backends.get("opencl").default_queue()
n = 1 << 10
rng = np.random.default_rng(1)
x = cla.to_device(queue, rng.integers(0, 9, n).astype(np.int32))
y = cla.empty(queue, (n,), np.int32)
fl = np.zeros(n, np.uint8)
fl[::100] = 1
flags = cla.to_device(queue, fl)
a = cla.to_device(queue, rng.random(n).astype(np.float32))
b = cla.to_device(queue, rng.random(n).astype(np.float32))
h = cla.empty(queue, (n,), np.float32)
for _ in range(8):
    jitscan.segmented_cumsum(x, flags=flags, out=y)
    jitscan.scan((a, b), op=affine, output=1, out=h)
queue.finish()


def us(fn, calls: int = 2000) -> float:
    for _ in range(50):
        fn()
    queue.finish()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    took = (time.perf_counter() - t) / calls * 1e6
    queue.finish()
    return took


def time_kernel(name: str, prog, q, groups: int, args: tuple, launch) -> None:
    k = prog._kernel(name.split("/")[0])
    sig = prog._signatures[name.split("/")[0]]
    local = prog.local
    gsize = (groups * local[0],)
    k(q, gsize, local, *args)
    bufs = tuple(v for i, t in enumerate(sig) if t is None for v in (i, args[i]))
    packs = {np.uint64: struct.Struct("=Q").pack, np.uint32: struct.Struct("=I").pack}
    scal = tuple(v for i, t in enumerate(sig) if t is not None for v in (i, packs[t](args[i])))
    one = next(i for i, t in enumerate(sig) if t is not None)
    pieces = {
        "PyOpenCL's invoker, every argument": lambda: k(q, gsize, local, *args),
        "jitscan's launch (buffers, changed scalars, enqueue)": lambda: launch(groups, args),
        "enqueue_nd_range_kernel alone": lambda: cl.enqueue_nd_range_kernel(q, k, gsize, local),
        "_cl.enqueue_nd_range_kernel alone": lambda: cl._cl.enqueue_nd_range_kernel(
            q, k, gsize, local, None, None, False, False
        ),
        "the buffers set, then the enqueue": lambda: (
            k._set_arg_multi(bufs),
            cl.enqueue_nd_range_kernel(q, k, gsize, local),
        ),
        "one scalar set, then the enqueue": lambda: (
            k._set_arg_buf_multi((one, scal[1])),
            cl.enqueue_nd_range_kernel(q, k, gsize, local),
        ),
        "every scalar set, then the enqueue": lambda: (
            k._set_arg_buf_multi(scal),
            cl.enqueue_nd_range_kernel(q, k, gsize, local),
        ),
        f"_set_arg_multi of the {len(bufs) // 2} buffers": lambda: k._set_arg_multi(bufs),
        f"_set_arg_buf_multi of the {len(scal) // 2} scalars": lambda: k._set_arg_buf_multi(scal),
        "_set_arg_buf_multi of one scalar": lambda: k._set_arg_buf_multi((one, scal[1])),
    }
    rounds: dict[str, list[float]] = {p: [] for p in pieces}
    for r in range(5):
        for p in pieces if r % 2 == 0 else list(pieces)[::-1]:
            rounds[p].append(us(pieces[p]))
    for p in pieces:
        print(f"| {name} | {p} | {statistics.median(rounds[p]):.2f} |", flush=True)


print("| kernel | piece | µs |\n|---|---|---|")
for name, held in captured.items():
    time_kernel(name, *held)
