"""One call in a loop, as a user's loop makes it: jitscan against NumPy, with page faults.

Usage: python experiments/cpu_loop.py [LOG2N ...]   (default 16 20)

For int32 input of 2^LOG2N items (on the default device, a CPU's PoCL where there is no
GPU): ``jitscan.cumsum(x)`` and ``numpy.cumsum(x)`` (NumPy's rules: an int64 result), then
both with ``dtype=x.dtype``, each called alone in a loop of about 2^26 items' worth of calls
(after 20 untimed ones), the loops taking turns, three rounds. Prints the mean µs a call
of each round and the minor page faults a call (``getrusage``): NumPy allocates every
result afresh, jitscan takes its results from a pool. ``experiments/cpu_numpy.py`` times
three calls at a time in turns with other functions, and keeps each function's best round.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable

import numpy as np

import jitscan


def loop(fn: Callable[[], object], calls: int) -> tuple[float, float]:
    """Mean µs a call and minor page faults a call of ``calls`` calls of ``fn``."""
    for _ in range(20):
        fn()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - t
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return elapsed / calls * 1e6, faults / calls


def main() -> None:
    exps = [int(a) for a in sys.argv[1:]] or [16, 20]
    print(f"NumPy {np.__version__}; mean µs a call (minor page faults a call), three rounds")
    for e in exps:
        n = 1 << e
        x = np.random.default_rng(0).integers(-100, 100, n).astype(np.int32)
        fns = {
            "jitscan.cumsum(x)": lambda x=x: jitscan.cumsum(x),
            "numpy.cumsum(x)": lambda x=x: np.cumsum(x),
            "jitscan.cumsum(x, dtype=int32)": lambda x=x: jitscan.cumsum(x, dtype=np.int32),
            "numpy.cumsum(x, dtype=int32)": lambda x=x: np.cumsum(x, dtype=np.int32),
        }
        np.testing.assert_array_equal(jitscan.cumsum(x), np.cumsum(x))
        calls = max(10, (1 << 26) // n)
        rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in fns}
        for _ in range(3):
            for name, fn in fns.items():
                rounds[name].append(loop(fn, calls))
        for name, got in rounds.items():
            cells = ", ".join(f"{us:.1f} ({faults:.0f})" for us, faults in got)
            print(f"2^{e} int32 | {name} | {cells}")


if __name__ == "__main__":
    main()
