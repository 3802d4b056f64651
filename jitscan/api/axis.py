"""Scans along one axis of an N-D array: every 1-D lane independently, in one pass.

The axis is moved last, so lanes become rows of the flattened array, and rows are
segments of a segmented scan by row length (``segmented="rows"``). Rows a whole
number of tiles long need no heads at all: the plain chained scan restarts at each
row (the prepared scan picks that program per call).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..monoid import Monoid
from ..plan import arrays
from .cache import prepared


def scan_along_axis(
    x: Any,
    op: str | Monoid,
    axis: int,
    kind: str,
    variant: str | None,
    backend: str | None,
    dtype: Any,
    out: Any,
    stats: dict | None,
    knobs: dict,
) -> Any:
    """Independent scans of every 1-D lane of ``x`` along ``axis`` (rows are segments)."""
    if variant == "memcpy":
        raise ValueError("variant='memcpy' has no axis form")
    b, on_device = arrays.pick_backend(x, backend)
    xa = x if on_device else np.asarray(x)
    shape = tuple(xa.shape)
    ndim = len(shape)
    if ndim == 0:
        raise ValueError("jitscan scans arrays of at least one dimension, got a 0-d array")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
    axis %= ndim
    moved = _moveaxis(xa, axis)
    p = prepared(moved, op, kind, variant, b.name, dtype, stats is not None, knobs, segmented="rows")
    arrays.check_out(out, b, on_device, p.dtype, shape)
    if xa.size == 0:
        res = np.empty(shape, p.dtype.numpy)
        if on_device:
            res = b.to_device(res, b.queue_of(xa))
        return res if out is None else out
    flat = p(moved, row_len=tuple(moved.shape)[-1], stats=stats)
    res = _moveaxis(flat.reshape(tuple(moved.shape)), axis, back=True)
    if on_device:
        res = b.contiguous(res)
    if out is not None:
        if on_device:
            b.copy(out, res)
        else:
            out[...] = res
        return out
    return res


def _moveaxis(a: Any, axis: int, back: bool = False) -> Any:
    ndim = len(a.shape)
    if axis == ndim - 1:
        return a
    order = list(range(ndim))
    if back:
        order.insert(axis, order.pop(-1))
    else:
        order.append(order.pop(axis))
    return a.transpose(order)
