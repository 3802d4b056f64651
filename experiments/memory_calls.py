"""Do host and device memory stay flat over 10,000 calls of every shape a program makes?

Usage: python experiments/memory_calls.py [BACKEND] [CALLS] [free]   (default: the default backend, 10000)

The calls change everything a cache could be keyed on: each call a new size (uniform in
1..2^20), a new command queue or CUDA stream every 50 calls, a scan from a
set of 16 specs (dtypes x ops x kinds x variants, segmented ones among them) taken in
turn, NumPy and device inputs alternately, and every tenth call through a fresh
``jitscan.plan``. Every result is checked against NumPy. Process memory (RSS) and, on
CUDA, the device memory CuPy's pool holds and the driver reports in use are printed at
checkpoints; the growth after the first fifth of the calls (when every program and
cache has been met) is what the reliability table reports.

CuPy's pool keeps the blocks freed on a stream for that stream, so a program that makes
stream after stream sees the pool grow with any CuPy code; "live MiB" is what is still
allocated (jitscan's scratch and the arrays alive). With ``free`` the harness returns the
pool's free blocks at each new stream, as such a program would.
"""

from __future__ import annotations

import gc
import sys
import time

import numpy as np

import jitscan
from jitscan import backends

#: (function, dtype, keyword arguments); the functions' own checks follow
SPECS = [
    ("cumsum", "int32", {}),
    ("cumsum", "float64", {}),
    ("scan", "int64", {"op": "max"}),
    ("scan", "uint32", {"op": "min", "kind": "exclusive"}),
    ("scan", "float32", {"op": "add", "variant": "lookback"}),
    ("scan", "int32", {"op": "add", "variant": "rts"}),
    ("scan", "float64", {"op": "add", "deterministic": True}),
    ("reduce", "int32", {"op": "add"}),
    ("reduce", "float32", {"op": "max"}),
    ("segmented", "int32", {}),
    ("segmented", "float64", {"op": "max"}),
    ("segmented_reduce", "int64", {}),
    ("cumsum", "uint64", {"variant": "fallback", "tile_state": "split"}),
    ("scan", "int32", {"op": "add", "variant": "fallback", "kind": "exclusive"}),
    ("cumsum", "float32", {}),
    ("scan", "int64", {"op": "add", "kind": "inclusive", "variant": "lookback"}),
]


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


class Device:
    """Queues, transfers and memory figures of one backend."""

    def __init__(self, name: str) -> None:
        self.b = backends.get(name)
        self.name = name
        if name == "cupy":
            import cupy

            self.cupy = cupy
        else:
            import pyopencl as cl
            import pyopencl.array as cla

            self.cl, self.cla = cl, cla
            self.context = self.b.queue_of(None).context
        self.queue = self.new_queue()

    def new_queue(self):  # noqa: ANN201 - a CuPy stream or a PyOpenCL queue
        if self.name == "cupy":
            self.queue = self.cupy.cuda.Stream(non_blocking=True)
        else:
            self.queue = self.cl.CommandQueue(self.context)
        return self.queue

    def to_device(self, x: np.ndarray):  # noqa: ANN201
        if self.name == "cupy":
            with self.queue:
                return self.cupy.asarray(x)
        return self.cla.to_device(self.queue, x)

    def call(self, fn, *args, **kwargs):  # noqa: ANN001, ANN201
        if self.name == "cupy":
            with self.queue:
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    def memory(self) -> tuple[float, float, float]:
        """MiB live in CuPy's pool, held by it, in use on the device; zeros where the device is the host."""
        if self.name != "cupy":
            return 0.0, 0.0, 0.0
        pool = self.cupy.get_default_memory_pool()
        free, total = self.cupy.cuda.runtime.memGetInfo()
        return pool.used_bytes() / 2**20, pool.total_bytes() / 2**20, (total - free) / 2**20

    def free_held(self) -> None:
        if self.name == "cupy":
            self.cupy.get_default_memory_pool().free_all_blocks()


def one_call(dev: Device, i: int, rng: np.random.Generator, top: int) -> None:
    fn, dtype, kw = SPECS[i % len(SPECS)]
    n = int(rng.integers(1, top))
    # floats get 0..2, so that every partial sum (below 2^24) is exact in any order
    x = rng.integers(0, 3 if dtype.startswith("float") else 100, n).astype(dtype)
    on_device = i % 2 == 1
    arg = dev.to_device(x) if on_device else x

    def host(y):  # noqa: ANN001, ANN202 - NumPy in, NumPy out; a device array in, a device array out
        # on the array's stream: a non-blocking stream is not ordered with the default one
        return y if isinstance(y, (np.ndarray, np.generic)) else dev.call(dev.b.to_host, y)

    if fn == "segmented" or fn == "segmented_reduce":
        cuts = np.unique(rng.integers(0, n + 1, max(1, n // 1000)))
        offsets = np.r_[0, cuts[(cuts > 0) & (cuts < n)], n].astype(np.int64)
        if fn == "segmented":
            got = host(dev.call(jitscan.segmented_scan, arg, offsets=offsets, **kw))
            op = {"max": np.maximum}.get(kw.get("op"), np.add)
            pieces = zip(offsets[:-1], offsets[1:], strict=True)
            want = np.concatenate([op.accumulate(x[a:b]) for a, b in pieces])
        else:
            got = host(dev.call(jitscan.segmented_reduce, arg, offsets=offsets, **kw))
            want = np.add.reduceat(x, offsets[:-1]) if n else np.zeros(0, dtype)
        ok = np.array_equal(got, want)
    elif fn == "reduce":
        got = host(dev.call(jitscan.reduce, arg, **kw)) if i % 10 else None
        if got is None:  # a fresh prepared reduction (plans take whole-array scans: a scan here)
            p = jitscan.plan(dtype, kw["op"], kind="reduce", backend=dev.name)
            got = host(dev.call(p, arg))
        want = {"add": np.add, "max": np.maximum}[kw["op"]].reduce(x)
        ok = np.asarray(got).reshape(-1)[-1] == want
    else:
        op = kw.get("op", "add")
        kind = kw.get("kind", "inclusive")
        knobs = {k: v for k, v in kw.items() if k not in ("op", "kind")}
        if i % 10 == 0:
            p = jitscan.plan(dtype, op, kind=kind, backend=dev.name, **knobs)
            got = host(dev.call(p, arg))
        elif fn == "cumsum":
            got = host(dev.call(jitscan.cumsum, arg, dtype=dtype, **knobs))
        else:
            got = host(dev.call(jitscan.scan, arg, op, kind=kind, dtype=dtype, **knobs))
        ufunc = {"add": np.add, "max": np.maximum, "min": np.minimum}[op]
        want = ufunc.accumulate(x, dtype=dtype) if n else x
        if kind == "exclusive" and n:
            identity = {"add": 0, "max": np.iinfo(dtype).min, "min": np.iinfo(dtype).max}[op]
            want = np.r_[np.array([identity], dtype), want[:-1]]
        ok = np.array_equal(got, want)
    if not ok:
        raise AssertionError(f"call {i}: {fn} {dtype} {kw} n={n} came out wrong")


def main(argv: list[str]) -> None:
    name = argv[0] if argv else backends.default().name
    calls = int(argv[1]) if len(argv) > 1 else 10_000
    free = len(argv) > 2 and argv[2] == "free"
    dev = Device(name)
    info = dev.b.device_info(dev.b.queue_of(None))
    top = 1 << 20
    rng = np.random.default_rng(7)
    print(f"{calls} calls on {info.name} ({name}), sizes 1..{top}, {len(SPECS)} specs, a new queue every 50")
    print(f"{'calls':>7} {'RSS MiB':>9} {'live MiB':>9} {'pool MiB':>9} {'device MiB':>11} {'seconds':>8}")
    start = time.perf_counter()
    marks = []
    for i in range(calls):
        if i % 50 == 0:
            if free:
                dev.free_held()
            dev.new_queue()
        one_call(dev, i, rng, top)
        if (i + 1) % (calls // 10) == 0:
            gc.collect()
            live, pool, used = dev.memory()
            marks.append((i + 1, _rss_mib(), live, pool, used))
            took = time.perf_counter() - start
            print(f"{i + 1:>7} {marks[-1][1]:>9.1f} {live:>9.1f} {pool:>9.1f} {used:>11.1f} {took:>8.1f}")
    first = next(m for m in marks if m[0] >= calls // 5)
    last = marks[-1]
    print(
        f"after call {first[0]}: RSS {last[1] - first[1]:+.1f} MiB, live {last[2] - first[2]:+.1f} MiB, "
        f"pool {last[3] - first[3]:+.1f} MiB, device {last[4] - first[4]:+.1f} MiB by call {last[0]}; "
        "every result right"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
