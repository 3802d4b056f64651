"""The Python operators (:func:`jitscan.operator`) the bench calls: tuple values and a Python sum.

Used by :mod:`jitscan.bench.tuples` and :mod:`jitscan.bench.forms` (and the asv suite).
"""

from __future__ import annotations

import numpy as np

from ..operators import operator


@operator(identity=(1.0, 0.0))
def affine(x, y):
    """(a, b) pairs of h = a h' + b: x the earlier map, y the later one."""
    return (x[0] * y[0], x[1] * y[0] + y[1])


@operator(identity=(-np.inf, -1))
def argmax(x, y):
    """(value, index): the first of the largest values."""
    return y if y[0] > x[0] else x


@operator(identity=(0.0, 0.0, 0.0))
def welford(x, y):
    """(count, mean, M2) of two runs merged (Chan, Golub and LeVeque)."""
    n = x[0] + y[0]
    if n == 0:
        return x
    d = y[1] - x[1]
    return (n, x[1] + d * (y[0] / n), x[2] + y[2] + d * d * x[0] * y[0] / n)


python_add = operator(lambda x, y: x + y, identity=0, name="python_add")


__all__ = ["affine", "argmax", "python_add", "welford"]
