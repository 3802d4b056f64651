"""Device time of two jitscan trees in one process, in turns: did a change slow the kernels?

Usage: BASE=DIR python experiments/ab_device.py [LOG2N,...]

``DIR`` holds the other tree's package as ``jitscan_base`` (``git archive REV jitscan | tar -x
-C DIR --transform s/^jitscan/jitscan_base/``). Each case is a call on CuPy arrays made
``CALLS`` times back to back between two events (pipelined: the device's time per call once
the host is ahead), the trees taking turns over ``ROUNDS`` rounds; one line per case with
both medians (microseconds a call) and new / base. With ``ISOLATED=1`` each case is instead
one call between two events on an idle device (the median of ``CALLS`` of them a round):
what a small call costs, the host's launch included.
"""

from __future__ import annotations

import importlib
import os
import statistics
import sys
from collections.abc import Callable
from types import ModuleType

import cupy
import numpy as np

import jitscan
from jitscan.bench import studies

CALLS = 20
ROUNDS = 9


def cases(js: ModuleType, log2n: int) -> dict[str, Callable[[], object]]:
    """The calls timed at 2**log2n elements, on arrays of their own."""
    n = 1 << log2n
    rng = np.random.default_rng(log2n)
    out: dict[str, Callable[[], object]] = {}
    for dtype in ("int32", "float32", "int64"):
        x = cupy.asarray(rng.integers(0, 9, n).astype(dtype))
        y = cupy.empty_like(x)
        out[f"cumsum {dtype}"] = lambda x=x, y=y: js.cumsum(x, out=y)
    x = cupy.asarray(rng.integers(0, 9, n).astype(np.int32))
    y = cupy.empty_like(x)
    cuts = np.sort(rng.choice(n, max(n // 1000, 1), replace=False))
    off = cupy.asarray(np.r_[0, cuts[cuts > 0], n].astype(np.int64))
    flags = cupy.zeros(n, np.uint8)
    flags[off[:-1]] = 1
    out["scan int32 initial=1"] = lambda: js.scan(x, initial=1, out=y)
    out["segmented offsets int32"] = lambda: js.segmented_cumsum(x, offsets=off, out=y)
    out["segmented flags int32"] = lambda: js.segmented_cumsum(x, flags=flags, out=y)
    out["segmented_reduce int32"] = lambda: js.segmented_reduce(x, offsets=off)
    a = cupy.asarray(rng.random(n, np.float32))
    b = cupy.asarray(rng.random(n, np.float32))
    h = cupy.empty_like(b)
    affine = js.operator(
        lambda p, q: (p[0] * q[0], p[1] * q[0] + q[1]), identity=(1.0, 0.0), name="affine_ab"
    )
    out["tuple affine float32"] = lambda: js.scan((a, b), op=affine, output=1, out=h)
    x2 = x.reshape(64, -1) if n >= 64 else x.reshape(1, -1)
    y2 = cupy.empty_like(x2)
    out["axis scan int32, 64 rows"] = lambda: js.cumsum(x2, axis=1, out=y2)
    return out


def piped(fn: Callable[[], object]) -> float:
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(CALLS):
        fn()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) * 1e3 / CALLS


def isolated(fn: Callable[[], object]) -> float:
    return statistics.median(studies.isolated(fn) for _ in range(CALLS))


def main() -> None:
    timed = isolated if os.environ.get("ISOLATED") else piped
    trees = {"new": jitscan, "base": importlib.import_module("jitscan_base")}
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "16,20,24,28").split(",")]
    print("| case | 2^k | new µs | base µs | new / base |\n|---|---|---|---|---|")
    for log2n in sizes:
        made = {name: cases(js, log2n) for name, js in trees.items()}
        for case in made["new"]:
            fns = {name: made[name][case] for name in trees}
            try:
                for f in fns.values():
                    f()
                    f()
            except Exception as exc:  # noqa: BLE001 - a case one tree lacks
                print(f"| {case} | {log2n} | {type(exc).__name__}: {exc} | | |")
                continue
            times: dict[str, list[float]] = {name: [] for name in fns}
            for r in range(ROUNDS):
                for name in fns if r % 2 == 0 else list(fns)[::-1]:
                    times[name].append(timed(fns[name]))
            new, base = (statistics.median(times[k]) for k in ("new", "base"))
            print(f"| {case} | {log2n} | {new:.2f} | {base:.2f} | {new / base:.3f} |", flush=True)
        del made
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    if not os.environ.get("BASE"):
        raise SystemExit("BASE=DIR: the other tree's package as jitscan_base (see the module text)")
    sys.path.insert(0, os.environ["BASE"])
    main()
