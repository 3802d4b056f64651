"""End to end from NumPy to NumPy on a CPU OpenCL device (PoCL): jitscan against NumPy.

Usage: python experiments/cpu_numpy.py [LOG2N ...]   (default 16 20 24)

For int32 and float32 at each size, in alternating rounds (best of 5 rounds of 3 calls):
``jitscan.cumsum(x, dtype=x.dtype, backend="opencl")`` with the NumPy arrays shared with the
device (the default on CPU devices), the same with sharing turned off (the input copied to
a device buffer and the result copied back, as before), ``numpy.cumsum`` and a NumPy copy
of the array (``np.copyto``). Prints M elements/s and jitscan over NumPy.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import jitscan
from jitscan import backends


def rate(fn, n: int, rounds: list[float]) -> None:
    t = time.perf_counter()
    for _ in range(3):
        fn()
    rounds.append(3 * n / (time.perf_counter() - t) / 1e6)


def main() -> None:
    exps = [int(a) for a in sys.argv[1:]] or [16, 20, 24]
    b = backends.get("opencl")
    info = b.device_info(b.default_queue())
    print(f"device: {info.name}")
    share = b.shared
    for e in exps:
        n = 1 << e
        for dt in ("int32", "float32"):
            x = np.random.default_rng(e).integers(-100, 100, n).astype(dt)
            y = np.empty_like(x)
            fns = {
                "jitscan": lambda x=x, dt=dt: jitscan.cumsum(x, dtype=dt, backend="opencl"),
                "jitscan, copies": lambda x=x, dt=dt: jitscan.cumsum(x, dtype=dt, backend="opencl"),
                "numpy.cumsum": lambda x=x, y=y, dt=dt: np.cumsum(x, dtype=dt, out=y),
                "np.copyto": lambda x=x, y=y: np.copyto(y, x),
            }
            for f in fns.values():
                f()
            got: dict[str, list[float]] = {k: [] for k in fns}
            for r in range(5):
                for name in list(fns) if r % 2 == 0 else list(fns)[::-1]:
                    b.shared = (lambda *a: None) if name == "jitscan, copies" else share  # type: ignore[method-assign]
                    rate(fns[name], n, got[name])
            b.shared = share  # type: ignore[method-assign]
            best = {k: max(v) for k, v in got.items()}
            cells = " | ".join(f"{k} {v:.0f}" for k, v in best.items())
            print(
                f"{dt} 2^{e}: {cells} M/s || jitscan/numpy {best['jitscan'] / best['numpy.cumsum']:.2f}, "
                f"jitscan/copy {best['jitscan'] / best['np.copyto']:.2f}, "
                f"copies/numpy {best['jitscan, copies'] / best['numpy.cumsum']:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
