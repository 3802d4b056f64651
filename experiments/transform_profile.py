"""Where a transform's pass loses to a flat scan on a CUDA GPU: the same pass with parts taken away.

Usage: python experiments/transform_profile.py [LOG2N ...]        (default 24 28)
       ncu --profile-from-start off ... python experiments/transform_profile.py --ncu LOG2N

Per size, int32, pipelined (an event, 10 calls back to back, an event; the median of 7 rounds
in turns), each through :class:`jitscan.ScanKernel` into arrays made once unless named:
- ``flat cumsum``: ``jitscan.cumsum(x, out=y)`` (4 bytes in, 4 out), and of the bool mask into
  int32 (1 in, 4 out);
- ``copy through a transform``: item 0, ``y[i] = x`` (the transform's machinery, dense);
- ``dense keep``: item ``c != 0``, ``y[i] = x`` where kept (no scatter);
- ``compaction``: ``y[v] = x`` where kept, and the count (the real one), by the vectors a
  thread holds and the workgroups a core is to hold (``min_blocks``: registers);
- ``compaction, no count rule``: without the ``i == n - 1`` rule.
With ``--ncu`` each call runs once between ``cupy.cuda.profiler.start()`` and ``stop()``.
"""

from __future__ import annotations

import statistics
import sys

import cupy
import numpy as np

import jitscan
from jitscan import Write
from jitscan.bench.studies import piped, selection_cases


def kernel(name: str, item: str, rules: list[Write], kind: str = "exclusive", **knobs) -> jitscan.ScanKernel:
    return jitscan.ScanKernel(
        reads=[("c", "bool"), ("x", "int32")], item=item, writes=[("y", "int32"), ("count", "int64")],
        rules=rules, dtype="int32", kind=kind, name=name, **knobs,
    )  # fmt: skip


def calls_for(n: int) -> dict:
    x_h, mask_h, _ = selection_cases(n.bit_length() - 1)
    x, mask = cupy.asarray(x_h), cupy.asarray(mask_h)
    y, yi, count = cupy.empty(n, np.int32), cupy.empty(n, np.int32), cupy.empty(1, np.int64)
    keep = [Write("y", "v", "x", "item"), Write("count", "0", "v + item", "i == n - 1")]
    kernels = {
        "copy through a transform": kernel("copy", "0", [Write("y", "i", "x")]),
        "dense keep": kernel("dense", "c != 0", [Write("y", "i", "x", "item")]),
        "compaction, no count rule": kernel("nocount", "c != 0", keep[:1]),
    }
    for p, blocks in ((8, 3), (8, 4), (4, 3), (4, 6)):
        name = f"compaction P={p} min_blocks={blocks}"
        kernels[name] = kernel("keep", "c != 0", keep, vectors=p, min_blocks=blocks)
    calls = {
        "flat cumsum int32": lambda: jitscan.cumsum(x, out=yi),
        "flat cumsum bool -> int32": lambda: jitscan.cumsum(mask, dtype=np.int32, out=yi),
    }
    for name, k in kernels.items():
        calls[name] = lambda k=k: k(c=mask, x=x, y=y, count=count)
    src, dst = cupy.empty(n * 7 // 2, np.uint8), cupy.empty(n * 7 // 2, np.uint8)
    calls["copy 3.5n bytes"] = lambda: dst.__setitem__(Ellipsis, src)
    return calls


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "--ncu":
        calls = calls_for(1 << int(args[1]))
        for fn in calls.values():
            fn()
        cupy.cuda.runtime.deviceSynchronize()
        cupy.cuda.profiler.start()
        for fn in calls.values():
            fn()
        cupy.cuda.runtime.deviceSynchronize()
        cupy.cuda.profiler.stop()
        print("order:", "; ".join(calls))
        return
    print("| 2^k | call | µs a call, pipelined | copy's time / this |\n|---|---|---|---|")
    for log2n in [int(a) for a in args] or [24, 28]:
        calls = calls_for(1 << log2n)
        for fn in calls.values():
            fn()
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(7):
            for name, fn in calls.items():
                times[name].append(piped(fn))
        med = {name: statistics.median(t) for name, t in times.items()}
        for name, us in med.items():
            print(f"| {log2n} | {name} | {us:.1f} | {med['copy 3.5n bytes'] / us:.2f} |")
    print(f"\njitscan {jitscan.__version__}, CuPy {cupy.__version__}")


if __name__ == "__main__":
    main()
