"""End to end from NumPy to NumPy on a CPU OpenCL device (PoCL): jitscan against NumPy.

Usage: python experiments/cpu_numpy.py [LOG2N ...]   (default 16 20 24)

For int32 and float32 at each size, timed in alternating rounds (best of 7 rounds of 3
calls), M elements/s of:

- ``jitscan.cumsum(x)`` and ``numpy.cumsum(x)``: the call as a user writes it, with
  NumPy's dtype rules on both sides (int32 sums in int64);
- the same with ``dtype=x.dtype`` (int32 sums in int32);
- ``np.copyto`` of the array into one made before: the memory-speed yardstick, beside
  the ``dtype=x.dtype`` scan into an ``out=`` array made before (the same traffic: an
  allocating call also pays for the fresh pages of its result, which the copy does not);
- ``jitscan.segmented_cumsum(x, offsets=...)`` against NumPy's loop-free segmented sum
  (``np.cumsum`` minus each segment's start, repeated), segments of mean length 1000.

Ratios printed last: jitscan over NumPy for each pair, and the ``dtype=x.dtype`` scan
over the copy.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

import jitscan
from jitscan import backends
from jitscan.bench import numpy_segmented
from jitscan.bench.studies import best_in_turns, numpy_cases


def rates(fns: dict[str, Callable[[], object]], n: int, rounds: int = 7, calls: int = 3) -> dict[str, float]:
    """M elements/s of each function, best round, the functions taking turns."""
    return {name: n / t / 1e6 for name, t in best_in_turns(fns, rounds, calls).items()}


def main() -> None:
    exps = [int(a) for a in sys.argv[1:]] or [16, 20, 24]
    b = backends.get("opencl")
    info = b.device_info(b.default_queue())
    print(f"device: {info.name}; NumPy {np.__version__}")
    for dt, e, x, y, off in numpy_cases(exps):
        n = 1 << e
        want = numpy_segmented(x, off)
        z = np.empty_like(x)  # the out= of the scan, as y is the copy's
        np.testing.assert_allclose(jitscan.segmented_cumsum(x, offsets=off), want, rtol=1e-4)
        got = rates(
            {
                "jitscan": lambda x=x: jitscan.cumsum(x, backend="opencl"),
                "numpy": lambda x=x: np.cumsum(x),
                "jitscan dtype": lambda x=x, dt=dt: jitscan.cumsum(x, dtype=dt, backend="opencl"),
                "numpy dtype": lambda x=x, dt=dt: np.cumsum(x, dtype=dt),
                "copyto": lambda x=x, y=y: np.copyto(y, x),
                "jitscan out": lambda x=x, dt=dt, z=z: jitscan.cumsum(x, dtype=dt, out=z, backend="opencl"),
                "jitscan seg": lambda x=x, o=off: jitscan.segmented_cumsum(x, o, backend="opencl"),
                "numpy seg": lambda x=x, off=off: numpy_segmented(x, off),
            },
            n,
        )
        ratios = (
            got["jitscan"] / got["numpy"],
            got["jitscan dtype"] / got["numpy dtype"],
            got["jitscan dtype"] / got["copyto"],
            got["jitscan out"] / got["copyto"],
            got["jitscan seg"] / got["numpy seg"],
        )
        cells = " | ".join([f"{v:.0f}" for v in got.values()] + [f"{r:.2f}" for r in ratios])
        print(f"| {dt} 2^{e} | {cells} |", flush=True)
    ratio_names = ["default/numpy", "dtype/numpy", "dtype/copy", "out/copy", "seg/numpy"]
    print("columns: " + " | ".join(list(got) + ratio_names))


if __name__ == "__main__":
    main()
