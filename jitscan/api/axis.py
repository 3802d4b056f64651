"""Scans along one axis of an N-D array: every 1-D lane independently, in one pass.

The axis is moved last, so lanes become rows of the flattened array, and rows are
segments of a segmented scan by row length (``segmented="rows"``). Rows a whole
number of tiles long need no heads at all: the plain chained scan restarts at each
row (the prepared scan picks that program per call).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import lookup
from ..operators import Monoid, empty_value, resolve
from ..plan import arrays
from .cache import prepared
from .call import REDUCE_VARIANT
from .conventions import move_axis, normalize_axis


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
    axis = normalize_axis(axis, ndim)
    moved = move_axis(xa, axis)
    p = prepared(moved, op, kind, variant, b.name, dtype, stats is not None, knobs, segmented="rows")
    arrays.check_out(out, b, on_device, p.dtype, shape)
    if xa.size == 0:
        res = np.empty(shape, p.dtype.numpy)
        if on_device:
            res = b.to_device(res, b.queue_of(xa))
        return res if out is None else out
    flat = p(moved, row_len=tuple(moved.shape)[-1], stats=stats)
    res = move_axis(flat.reshape(tuple(moved.shape)), axis, back=True)
    if on_device:
        res = b.contiguous(res)
    if out is not None:
        if on_device:
            b.copy(out, res)
        else:
            out[...] = res
        return out
    return res


def reduce_along_axes(
    x: Any,
    op: str | Monoid,
    axes: tuple[int, ...],
    variant: str | None,
    backend: str | None,
    dtype: Any,
    knobs: dict,
) -> Any:
    """One value per lane of ``x`` over ``axes`` (sorted, not all of them): a segmented reduction.

    The reduced axes move last, so each lane is a run of the flattened array: segments
    of equal length, given as offsets. Returns the values in the shape of the other
    axes (C order), on ``x``'s side.
    """
    b, on_device = arrays.pick_backend(x, backend)
    xa = x if on_device else np.asarray(x)
    shape = tuple(xa.shape)
    kept = tuple(s for i, s in enumerate(shape) if i not in axes)
    lane = int(np.prod([shape[i] for i in axes], dtype=np.int64))
    lanes = int(np.prod(kept, dtype=np.int64))
    if lanes == 0 or lane == 0:
        value = empty_value(resolve(op), lookup(dtype))
        host = np.full(kept, value, dtype=lookup(dtype).numpy)
        return b.to_device(host, b.queue_of(xa)) if on_device else host
    order = [i for i in range(len(shape)) if i not in axes] + list(axes)
    moved = xa.transpose(order) if order != list(range(len(shape))) else xa
    variant = REDUCE_VARIANT if variant is None else variant
    p = prepared(moved, op, "reduce", variant, b.name, dtype, False, knobs, segmented="offsets")
    offsets = np.arange(0, lanes * lane + 1, lane, dtype=np.int64)
    return p(moved, offsets=offsets).reshape(kept)
