"""NumPy to NumPy on a device that works in host memory (a CPU): jitscan against NumPy.

On a CPU a user scans NumPy arrays and NumPy is the peer. Each contender is the call
as a user writes it, from a NumPy array to a NumPy array (results allocated by the
call, as NumPy's are), host-timed (the calls are synchronous):

- ``jitscan.cumsum(a)`` and ``numpy.cumsum(a)``, NumPy's dtype rules on both sides
  (int32 sums in int64);
- both with ``dtype=a.dtype``;
- ``np.copyto(b, a)``: the memory-speed yardstick;
- ``jitscan.segmented_cumsum(a, offsets)`` against NumPy's loop-free segmented sum
  (``np.cumsum`` minus each segment's start, repeated), segments of mean length
  :data:`SEGMENT_MEAN`.

Contenders take turns in :data:`ROUNDS` rounds, the order rotating; each figure is the
median over the rounds of each round's median call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..api import cumsum, segmented_cumsum
from .results import Result, summary
from .studies import random_offsets
from .timing import Timer

#: rounds in which the contenders take turns
ROUNDS = 5
#: mean segment length of the segmented rows
SEGMENT_MEAN = 1000
#: the contenders, in the order tables show them
JITSCAN_DEFAULT = "jitscan.cumsum(a)"
NUMPY_DEFAULT = "numpy.cumsum(a)"
JITSCAN_DTYPE = "jitscan.cumsum(a, dtype=a.dtype)"
NUMPY_DTYPE = "numpy.cumsum(a, dtype=a.dtype)"
COPY = "np.copyto(b, a)"
JITSCAN_SEGMENTED = "jitscan.segmented_cumsum(a, offsets)"
NUMPY_SEGMENTED = "NumPy segmented sum (loop-free)"
#: (jitscan, its NumPy peer) pairs the tables give ratios of
PAIRS = (
    (JITSCAN_DEFAULT, NUMPY_DEFAULT),
    (JITSCAN_DTYPE, NUMPY_DTYPE),
    (JITSCAN_DTYPE, COPY),
    (JITSCAN_SEGMENTED, NUMPY_SEGMENTED),
)


def numpy_segmented(a: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each segment's running sum without a Python loop: the whole cumsum minus each start's."""
    c = np.cumsum(a, dtype=a.dtype)
    before = np.concatenate([np.zeros(1, a.dtype), c])[offsets[:-1]]
    return c - np.repeat(before, np.diff(offsets))


def contenders(timer: Timer, dtype: str, n: int, rng: np.random.Generator) -> dict[str, Callable[[int], Any]]:
    """Every contender as ``fn(i)`` over rotating host inputs."""
    ins = timer.host_inputs(n, dtype)
    off = random_offsets(rng, n, SEGMENT_MEAN)
    copy = np.empty(n, dtype)
    b = timer.name
    return {
        JITSCAN_DEFAULT: lambda i: cumsum(ins[i % len(ins)], backend=b),
        NUMPY_DEFAULT: lambda i: np.cumsum(ins[i % len(ins)]),
        JITSCAN_DTYPE: lambda i: cumsum(ins[i % len(ins)], dtype=dtype, backend=b),
        NUMPY_DTYPE: lambda i: np.cumsum(ins[i % len(ins)], dtype=dtype),
        COPY: lambda i: np.copyto(copy, ins[i % len(ins)]),
        JITSCAN_SEGMENTED: lambda i: segmented_cumsum(ins[i % len(ins)], off, backend=b),
        NUMPY_SEGMENTED: lambda i: numpy_segmented(ins[i % len(ins)], off),
    }


def measure_host_calls(
    timer: Timer, dtype: str, n: int, reps: int, rng: np.random.Generator | None = None
) -> list[Result]:
    """One result per contender (category ``"numpy"``, host-timed) at one dtype and size."""
    rng = rng if rng is not None else np.random.default_rng(0)
    found = contenders(timer, dtype, n, rng)
    names = list(found)
    per_round: dict[str, list[float]] = {name: [] for name in names}
    for r in range(ROUNDS):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            med, _, _ = timer.time_host(found[name], max(3, reps // ROUNDS))
            per_round[name].append(med)
    results = []
    for name in names:
        med, spread, times = summary(per_round[name])
        r = Result(timer.name, name, dtype, n, med, spread, category="numpy", timing="host", times=times)
        results.append(r)
    return results


__all__ = ["PAIRS", "ROUNDS", "SEGMENT_MEAN", "contenders", "measure_host_calls", "numpy_segmented"]
