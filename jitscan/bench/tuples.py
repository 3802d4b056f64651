"""Tuple values and Python operators, as a user calls them, beside what they compete with.

Each contender is a public call on device arrays of float32 (results into arrays the
caller keeps where the call takes ``out=``), timed as every per-call figure is
(:func:`jitscan.bench.calls.measure_contenders`: host time, isolated call, pipelined
rate, device time), category ``"tuples"``:

- the linear recurrence h_t = a_t h_{t-1} + b_t, ``jitscan.scan((a, b), op=affine,
  output=1, out=h)``, against a kernel moving the same bytes (read a and b, write h: on
  CuPy an elementwise ``h = a + b``);
- argmax, ``jitscan.reduce((x, jitscan.index), op=argmax)``, against ``cupy.argmax(x)``;
- Welford's (count, mean, M2), ``jitscan.reduce((ones, x, zeros), op=welford)``, against
  CuPy's ``x.mean()`` and ``x.var()``;
- ``jitscan.scan(x, op=python_add, out=y)``, a Python operator equal to a built-in,
  against ``op="add"``.

The peers are CuPy's, so on other backends only jitscan's calls run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..api import reduce, scan
from ..api.tuples import index
from .calls import PIPELINE_CALLS, Contender, measure_contenders
from .operators import affine, argmax, python_add, welford
from .results import Result, Unsupported, log2_label
from .timing import Timer

RECURRENCE = "jitscan.scan((a, b), op=affine, output=1, out=h)"
RECURRENCE_BYTES = "same bytes: h = a + b"
ARGMAX = "jitscan.reduce((x, jitscan.index), op=argmax)"
CUPY_ARGMAX = "cupy.argmax(x)"
WELFORD = "jitscan.reduce((ones, x, zeros), op=welford)"
CUPY_MOMENTS = "x.mean(), x.var() (CuPy)"
PYTHON_ADD = "jitscan.scan(x, op=python add, out=y)"
BUILTIN_ADD = "jitscan.scan(x, op='add', out=y)"
#: (jitscan, what it is compared with) pairs the table gives ratios of
PAIRS = (
    (RECURRENCE, RECURRENCE_BYTES),
    (ARGMAX, CUPY_ARGMAX),
    (WELFORD, CUPY_MOMENTS),
    (PYTHON_ADD, BUILTIN_ADD),
)


def contenders(timer: Timer, n: int, rng: np.random.Generator) -> list[Contender]:
    """The calls above on ``n`` float32 elements on the timer's device (CuPy's peers where it is CuPy)."""
    if 6 * n > timer.max_elements("float32"):
        raise Unsupported(
            f"the tuple cases of 2^{log2_label(n)} elements do not fit in {timer.info.name}'s memory"
        )
    b, q = timer.backend, timer.queue

    def put(a: np.ndarray) -> Any:
        return b.to_device(np.ascontiguousarray(a, np.float32), q)

    a, c = put(rng.uniform(0.5, 1.0, n)), put(rng.standard_normal(n))
    ones, zeros = put(np.ones(n)), put(np.zeros(n))
    h, y = b.empty((n,), np.dtype(np.float32), q), b.empty((n,), np.dtype(np.float32), q)
    name = timer.name
    found = [
        Contender(RECURRENCE, lambda i: scan((a, c), op=affine, output=1, out=h, backend=name), h),
        Contender(ARGMAX, lambda i: reduce((c, index), op=argmax, backend=name)),
        Contender(WELFORD, lambda i: reduce((ones, c, zeros), op=welford, backend=name)),
        Contender(PYTHON_ADD, lambda i: scan(c, op=python_add, out=y, backend=name), y),
        Contender(BUILTIN_ADD, lambda i: scan(c, op="add", out=y, backend=name), y),
    ]
    if name == "cupy":
        import cupy

        same = cupy.ElementwiseKernel("float32 a, float32 b", "float32 h", "h = a + b", "js_same_bytes")
        found += [
            Contender(RECURRENCE_BYTES, lambda i: same(a, c, h), h),
            Contender(CUPY_ARGMAX, lambda i: cupy.argmax(c)),
            Contender(CUPY_MOMENTS, lambda i: (c.mean(), c.var())),
        ]
    return found


def measure_tuples(
    timer: Timer, n: int, reps: int, calls: int = PIPELINE_CALLS, rng: np.random.Generator | None = None
) -> list[Result]:
    """The per-call figures of every contender at one size (category ``"tuples"``, dtype float32)."""
    found = contenders(timer, n, rng if rng is not None else np.random.default_rng(0))
    return measure_contenders(timer, found, "float32", n, reps, calls, category="tuples")


__all__ = ["PAIRS", "affine", "argmax", "contenders", "measure_tuples", "python_add", "welford"]
