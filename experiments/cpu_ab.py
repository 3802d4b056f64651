"""Two trees in one process on a CPU OpenCL device (PoCL): segmented and plain scans of NumPy arrays.

Usage: BASE=DIR python experiments/cpu_ab.py [LOG2N ...]   (default 16 20 22)

``DIR`` holds an older tree imported as ``jitscan_base`` (``git archive REV jitscan | tar -x
-C DIR --transform s/^jitscan/jitscan_base/``), as for ``host_ab.py``: the machine's speed
moves between processes, so the trees take turns in one. For int32 and float32 at each
size (the inputs of ``cpu_numpy.py``, segments of mean length 1000), best µs a call of 11
rounds in turns, each round about 2^20 elements of calls, of each tree's:

- ``segmented_cumsum(x, offsets=..., out=z)`` and the same by ``flags=`` (uint8 heads),
  beside NumPy's loop-free segmented sum;
- a prepared scan ``p(x, z)`` with ``dtype=x.dtype``, beside ``np.copyto``;
- the exclusive scan ``scan(x, kind="exclusive", dtype=x.dtype, out=z)``, beside ``np.copyto``.

Each tree's results are checked against NumPy's first. Prints the ratio of the base's time
to the new tree's (above 1: the new tree is faster) and each tree's ratio to its NumPy
peer. ``POCL_DEVICES="pthread basic"`` runs the calls in the calling thread (README,
*Performance on a CPU*).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

import numpy as np

import jitscan
from jitscan.bench import numpy_segmented
from jitscan.bench.studies import best_in_turns, heads_from_offsets, numpy_cases


def best_us(fns: dict[str, Callable[[], object]], n: int) -> dict[str, float]:
    """Best µs a call of each function in 11 rounds of about 2^20 elements, in turns."""
    best = best_in_turns(fns, rounds=11, calls=max(3, (1 << 20) // n))
    return {name: t * 1e6 for name, t in best.items()}


def compare(trees: dict, dt: str, e: int, x: np.ndarray, off: np.ndarray) -> None:
    """Print each group's times and ratios for one input."""
    n = x.size
    z, y = np.empty_like(x), np.empty_like(x)
    heads = heads_from_offsets(off, n)
    want_seg, want = numpy_segmented(x, off), np.cumsum(x, dtype=x.dtype)
    want_ex = np.concatenate(([0], want[:-1])).astype(x.dtype)
    groups: dict[str, dict[str, Callable[[], object]]] = {
        "offsets": {"numpy": lambda: numpy_segmented(x, off)},
        "flags": {"numpy": lambda: numpy_segmented(x, off)},
        "plain": {"numpy": lambda: np.copyto(y, x)},
        "exclusive": {"numpy": lambda: np.copyto(y, x)},
    }
    for tag, js in trees.items():
        p = js.plan(dt, backend="opencl")
        for name, fn, ref in (
            ("offsets", lambda js=js: js.segmented_cumsum(x, offsets=off, out=z), want_seg),
            ("flags", lambda js=js: js.segmented_cumsum(x, flags=heads, out=z), want_seg),
            ("plain", lambda p=p: p(x, z), want),
            ("exclusive", lambda js=js: js.scan(x, kind="exclusive", dtype=dt, out=z), want_ex),
        ):
            fn()
            np.testing.assert_allclose(z, ref, rtol=1e-4)
            groups[name][tag] = fn
    for name, fns in groups.items():
        t = best_us(fns, n)
        peer = "np.copyto" if name in ("plain", "exclusive") else "NumPy"
        print(
            f"{name} {dt} 2^{e}: NumPy {t['numpy']:.0f} us, base {t['base']:.0f}, new {t['new']:.0f}; "
            f"base/new {t['base'] / t['new']:.2f}; over {peer}: base {t['numpy'] / t['base']:.2f}, "
            f"new {t['numpy'] / t['new']:.2f}",
            flush=True,
        )


def main() -> None:
    base = os.environ.get("BASE")
    if not base:
        sys.exit(__doc__)
    sys.path.insert(0, base)
    trees = {"new": jitscan, "base": importlib.import_module("jitscan_base")}
    for dt, e, x, _, off in numpy_cases([int(a) for a in sys.argv[1:]] or [16, 20, 22]):
        compare(trees, dt, e, x, off)


if __name__ == "__main__":
    main()
