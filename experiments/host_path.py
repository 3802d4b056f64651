"""Where the host time of a prepared scan's call goes on CUDA, layer by layer.

Usage: python experiments/host_path.py [DTYPE] [LOG2N ...]   (default int32 10 20)

Each contender is timed in blocks of ``CALLS`` calls back to back (``perf_counter`` around
the block, one synchronization after it, untimed; a block this short never fills the
launch queue, so the figure is the host's), in ``ROUNDS`` rounds taking turns; the median
of the rounds, per call, in microseconds. The layers:

- ``cumsum(x, out=y)`` and ``p(x, out=y)``: the public call and the prepared scan;
- the same two with the driver launch replaced by a function that does nothing: jitscan's
  Python alone;
- ``p.common`` (the common call in one function: the checks of ``x`` and ``out``, the
  queue and the launch function, ``Backend.common_call``) and ``go`` (the launch function
  alone), both with the driver stubbed;
- ``launchKernel``: CuPy's call of ``cuLaunchKernel`` with the packed block, alone;
  (where the common call is compiled, backends/_common_call.c, it launches past the stub:
  its stubbed rows are left out; ``JITSCAN_NO_EXTENSION=1`` times the Python call)
- peers: CUB's call (``cuda.compute``), ``torch.cumsum(out=)`` and a device-to-device
  ``cudaMemcpyAsync`` of the array through CuPy.
"""

from __future__ import annotations

import inspect
import statistics
import sys
from collections.abc import Callable

import cupy
import numpy as np

import jitscan
from jitscan.backends import cupy as cupy_backend
from jitscan.bench import studies
from jitscan.bench.cub import cub_call

CALLS = 200
ROUNDS = 15


def contenders(dtype: str, n: int) -> dict[str, Callable[[], object]]:
    """Every layer and peer as a function of no arguments."""
    rng = np.random.default_rng(1)
    x = cupy.asarray(rng.integers(-9, 9, n).astype(dtype))
    y = cupy.empty_like(x)
    p = jitscan.plan(dtype, "add", backend="cupy")
    p(x, out=y)
    jitscan.cumsum(x, out=y)
    b = p.backend
    queue = b.queue_of(x)
    go = p._launcher(queue, n)
    bound = p.bound(queue, n)
    # the launch alone needs a valid argument block: one real launch of one tile packs it
    # (Program.launcher takes the backend's buffer function since the arrays went into fire)
    m = min(n, bound.spec.tile)
    scratch = b.scratch(0, queue, bound.state.encoding)
    if "buffer" in inspect.signature(bound.program.launcher).parameters:
        fire1 = bound.program.launcher("js_chained", queue, b.buffer)
        fire1(1, x, y, m, scratch.buf, 0, 0, 0, 0, 0, 0)
    else:
        fire1 = bound.program.launcher("js_chained", queue)
        fire1(1, x.data.ptr, 0, y.data.ptr, 0, m, scratch.buf, 0, 0, 0, 0, 0, 0)
    cupy.cuda.runtime.deviceSynchronize()
    scratch.epoch = 0
    b.zero(scratch.buf, None, queue)
    entry, stream, threads = fire1.entry, queue.ptr, bound.program.threads

    def launch() -> None:
        REAL(entry.ptr, 1, 1, 1, threads, 1, 1, 0, stream, entry.params_ptr, 0)

    found: dict[str, Callable[[], object]] = {
        "jitscan.cumsum(x, out=y)": lambda: jitscan.cumsum(x, out=y),
        "p(x, out=y)": lambda: p(x, out=y),
        "stubbed: jitscan.cumsum(x, out=y)": lambda: jitscan.cumsum(x, out=y),
        "stubbed: p(x, out=y)": lambda: p(x, out=y),
        "stubbed: p.common(x, y, None)": lambda: p.common(x, y, None),
        "stubbed: go(x, y, n)": lambda: go(x, y, n),
        "launchKernel alone": launch,
    }
    if not inspect.isfunction(p._common):  # compiled: it launches past the stub
        print("the common call is compiled: no stubbed calls through it (JITSCAN_NO_EXTENSION=1: Python's)")
        for name in [k for k in found if k.startswith("stubbed") and "go(" not in k]:
            del found[name]
    try:
        cub = cub_call("inclusive", x, y, num_items=n)
        found["CUB (cuda.compute)"] = lambda: cub(x)
    except ImportError as exc:
        print(f"no CUB: {exc}")
    try:
        import torch

        tx = torch.as_tensor(x, device="cuda")
        ty = torch.empty_like(tx)
        found["torch.cumsum(out=)"] = lambda: torch.cumsum(tx, 0, out=ty)
    except ImportError:
        pass
    nbytes = x.nbytes
    dd = cupy.cuda.runtime.memcpyDeviceToDevice
    found["cudaMemcpyAsync (CuPy)"] = lambda: cupy.cuda.runtime.memcpyAsync(
        y.data.ptr, x.data.ptr, nbytes, dd, cupy.cuda.get_current_stream().ptr
    )
    return found


REAL = cupy_backend._launch


def main() -> None:
    args = sys.argv[1:]
    dtype = args.pop(0) if args and not args[0].isdigit() else "int32"
    sizes = [int(a) for a in args] or [10, 20]
    print(f"cupy {cupy.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}")
    for e in sizes:
        n = 1 << e
        found = contenders(dtype, n)
        times: dict[str, list[float]] = {name: [] for name in found}
        names = list(found)
        for r in range(ROUNDS):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                times[name].append(studies.host_block(found[name], CALLS, name.startswith("stubbed")))
        print(f"\n{dtype} 2^{e}: microseconds a call, median of {ROUNDS} rounds of {CALLS} calls (min-max)")
        for name in names:
            t = times[name]
            print(f"| {name} | {statistics.median(t):.2f} | {min(t):.2f}-{max(t):.2f} |")


if __name__ == "__main__":
    main()
