"""Segmented scans and reductions from NumPy to NumPy on a CPU OpenCL device (PoCL).

Usage: [VECTORS=V,...] python experiments/cpu_segments.py [LOG2N ...]   (default 10 16 20 22)

For int32 and float32 at each size, segments of mean length 1000 (the inputs of
``cpu_numpy.py``: ``jitscan.bench.studies.numpy_cases``), µs a call (best of 7 rounds in
turns, each round about 2^21 elements of calls) of:

- ``segmented_cumsum(x, offsets=...)`` and the same by ``flags=`` (a bool array), against
  NumPy's loop-free segmented sum (``np.cumsum`` minus each segment's start, repeated);
- a prepared scan by offsets called with ``out=`` (``jitscan.plan(..., segmented=
  "offsets")``): the host side of a call without the result's allocation;
- ``segmented_reduce(x, offsets=...)`` against ``np.add.reduceat``.

With ``VECTORS=1024,4096,...`` it times instead ``segmented_cumsum`` by offsets and by
flags with the default tile and with each ``vectors=`` knob (16-byte vectors a one-thread
tile), in turns (the sweep behind ``tuning.CPU_SEG_LANE_BYTES``).

Each result is checked against NumPy's first. Set ``POCL_DEVICES="pthread basic"`` for
PoCL's in-thread driver (README, *Performance on a CPU*); run two trees in turns with
``PYTHONPATH`` to compare them.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import numpy as np

import jitscan
from jitscan import backends
from jitscan.bench import numpy_segmented
from jitscan.bench.studies import heads_from_offsets, numpy_cases


def best_us(fns: dict[str, Callable[[], object]], n: int, rounds: int = 7) -> dict[str, float]:
    """µs a call of each function, best round, the functions taking turns."""
    calls = max(1, (1 << 21) // n)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, f in fns.items():
            t = time.perf_counter()
            for _ in range(calls):
                f()
            best[name] = min(best[name], (time.perf_counter() - t) / calls * 1e6)
    return best


def tile_sweep(exps: list[int], vectors: list[int]) -> None:
    """``segmented_cumsum`` by offsets and by flags with the default tile and with each
    ``vectors=`` (16-byte vectors a one-thread tile), in turns: µs a call."""
    for dt, e, x, y, off in numpy_cases(exps):
        heads = heads_from_offsets(off, x.size)
        want = numpy_segmented(x, off)
        for name, seg in (("offsets", {"offsets": off}), ("flags", {"flags": heads})):
            fns: dict[str, Callable[[], object]] = {}
            for v in [None, *vectors]:
                knobs = {} if v is None else {"vectors": v}
                fns[f"vectors={v}"] = lambda x=x, y=y, seg=seg, knobs=knobs: jitscan.segmented_cumsum(
                    x, **seg, out=y, **knobs
                )
                fns[f"vectors={v}"]()
                np.testing.assert_array_equal(y, want)
            got = best_us(fns, x.size)
            print(f"{name} {dt} 2^{e}: " + ", ".join(f"{k} {t:.0f}" for k, t in got.items()), flush=True)


def main() -> None:
    exps = [int(a) for a in sys.argv[1:]] or [10, 16, 20, 22]
    if os.environ.get("VECTORS"):
        tile_sweep(exps, [int(v) for v in os.environ["VECTORS"].split(",")])
        return
    b = backends.get("opencl")
    print(f"device: {b.device_info(b.default_queue()).name}; NumPy {np.__version__}")
    names = None
    for dt, e, x, y, off in numpy_cases(exps):
        n = 1 << e
        flags = np.zeros(n, bool)
        flags[off[:-1][off[:-1] < n]] = True
        prepared = jitscan.plan(dt, segmented="offsets", backend="opencl")
        want = numpy_segmented(x, off)
        np.testing.assert_array_equal(jitscan.segmented_cumsum(x, offsets=off, backend="opencl"), want)
        np.testing.assert_array_equal(jitscan.segmented_cumsum(x, flags=flags, backend="opencl"), want)
        np.testing.assert_array_equal(prepared(x, y, offsets=off), want)
        sums = np.add.reduceat(x, off[:-1])
        np.testing.assert_array_equal(jitscan.segmented_reduce(x, offsets=off, backend="opencl"), sums)
        got = best_us(
            {
                "offsets": lambda x=x, o=off: jitscan.segmented_cumsum(x, offsets=o, backend="opencl"),
                "flags": lambda x=x, f=flags: jitscan.segmented_cumsum(x, flags=f, backend="opencl"),
                "prepared, out=": lambda p=prepared, x=x, y=y, o=off: p(x, y, offsets=o),
                "numpy": lambda x=x, o=off: numpy_segmented(x, o),
                "reduce": lambda x=x, o=off: jitscan.segmented_reduce(x, offsets=o, backend="opencl"),
                "reduceat": lambda x=x, o=off: np.add.reduceat(x, o[:-1]),
            },
            n,
        )
        names = list(got)
        ratios = (got["numpy"] / got["offsets"], got["reduceat"] / got["reduce"])
        cells = " | ".join([f"{v:.1f}" for v in got.values()] + [f"{r:.2f}" for r in ratios])
        print(f"| {dt} 2^{e} | {cells} |", flush=True)
    print("columns (µs a call): " + " | ".join([*names, "numpy / offsets", "reduceat / reduce"]))


if __name__ == "__main__":
    main()
