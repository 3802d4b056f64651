"""The runner: a :class:`Call` on an array in memory (the host's or one device's).

Three kinds of such input (``call.kind_of``): complex values, scanned as real parts;
scans along an axis and reductions over some axes, whose lanes become segments; and the
plain scan of the flattened array, which is the prepared scan (``cache.prepared``) with
NumPy's conventions around it: result dtypes, 0-d input, ``out=`` casts, NaN, the
Array API's ``include_initial``. The dispatch (``dispatch.py``) hands these kinds here,
and Dask's chunk tasks (``chunked/``) call :func:`run` on their chunks: the runner is
below both, and imports neither.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .. import backends
from ..dtypes import lookup
from ..operators import Monoid, resolve
from ..plan import arrays
from . import axis as _axis
from . import complexes, conventions
from .cache import prepared
from .call import AXIS, COMPLEX, PLAIN, Call, kind_of, refuse


def run(x: Any, call: Call) -> Any:
    """``call`` on ``x``, an array in memory (or array_like): its kind picked once, refused or run."""
    kind, x = kind_of(x, call)
    refuse(call, kind, x)
    return HANDLERS[kind](x, call)


def _plain(x: Any, call: Call) -> Any:
    form = call.form
    if form == "reduce":
        return _reduce_whole(x, call)
    if call.segmented:
        return _segmented(x, call)
    return _scan(x, call)


def _scan(x: Any, call: Call) -> Any:
    """A scan of the flattened array (``kind="reduce"``: its total), with NumPy's conventions."""
    if len(x.shape) == 0:
        x = x.reshape((1,))  # as NumPy: a 0-d input is one element
    out, kind, initial = call.out, call.kind, call.initial
    conventions.check_out_cast(
        conventions.types(conventions.input_dtype(x), call.dtype, call.rule).result, out
    )
    t = conventions.call_types(x, call.op, call.rule, call.dtype, out)
    if initial is not None:
        arrays.check_initial(initial, t.result)  # in the result's range (a narrow int)
    if call.nan is not None and x.dtype.kind == "f":
        x = conventions.replace_nan(x, call.nan)
    x, op = conventions.narrowed(x, call.op, t)
    # (a float sum's total comes with NumPy's zero: ScanSpec.positive_zero, empty_value)
    direct = t.takes(out) and not call.include_initial
    stats = call.stats
    p = prepared(x, op, kind, call.variant, call.backend, t.scan.name, stats is not None, call.knobs)
    res = p(x, out if direct else None, stats=stats, initial=initial)
    if direct:
        return res
    res = t.finish(res)
    if call.include_initial:
        res = with_initial(res, p.monoid.identity_for(lookup(t.scan.name)), t.result)
    if out is not None and kind == "reduce":
        res = res.reshape((1,))  # out= of a reduction has one element
    return res if out is None else conventions.put(out, res)


def _reduce_whole(x: Any, call: Call) -> Any:
    """:func:`jitscan.reduce` over every axis: one value (``keepdims``: of ones)."""
    shape = tuple(x.shape)
    t = conventions.types(conventions.input_dtype(x), call.dtype, "keep")
    if call.initial is not None:
        arrays.check_initial(call.initial, t.result)  # in the result's range (a narrow int)
    x, op = conventions.narrowed(x, call.op, t)
    flat = x.reshape((1,)) if not shape else x
    stats = call.stats
    p = prepared(flat, op, "reduce", call.variant, call.backend, t.scan.name, stats is not None, call.knobs)
    res = p(flat, stats=stats, initial=call.initial)  # NumPy's zero included (ScanSpec.positive_zero)
    res = t.finish(res)
    return res.reshape(tuple(1 for _ in shape)) if call.keepdims else res


def _segmented(values: Any, call: Call) -> Any:
    """A scan or reduction of every segment (by ``flags`` or ``offsets``) of flattened values."""
    t = conventions.types(conventions.input_dtype(values), call.dtype, "keep")
    values, op = conventions.narrowed(values, call.op, t)
    knobs, variant, backend = call.knobs, call.variant, call.backend
    if call.form == "segmented_reduce":
        p = prepared(values, op, "reduce", variant, backend, t.scan.name, False, knobs, segmented="offsets")
        res = conventions.numpy_sum_zero(p(values, offsets=call.offsets), op, t.scan.numpy)
        return t.finish(res)
    out, stats, initial = call.out, call.stats, call.initial
    conventions.check_out_cast(t.result, out)
    if initial is not None:
        arrays.check_initial(initial, t.result)  # in the result's range (a narrow int), as scan() checks
    direct = t.takes(out)
    seg = call.segments
    p = prepared(
        values, op, call.kind, variant, backend, t.scan.name, stats is not None, knobs, segmented=seg
    )
    res = p(
        values, out if direct else None, flags=call.flags, offsets=call.offsets, stats=stats, initial=initial
    )
    if direct:
        return res
    res = t.finish(res)
    return res if out is None else conventions.put(out, res)


def _along_axis(x: Any, call: Call) -> Any:
    """Every 1-D lane along ``call.axis`` scanned apart, or reduced over ``call.axis``."""
    if call.form == "reduce":
        return _reduce_axes(x, call)
    out = call.out
    conventions.check_out_cast(
        conventions.types(conventions.input_dtype(x), call.dtype, call.rule).result, out
    )
    t = conventions.call_types(x, call.op, call.rule, call.dtype, out)
    if call.nan is not None and x.dtype.kind == "f":
        x = conventions.replace_nan(x, call.nan)
    x, op = conventions.narrowed(x, call.op, t)
    ax = conventions.normalize_axis(call.axis, len(x.shape))
    direct = t.takes(out) and not call.include_initial
    args = (
        call.kind,
        call.variant,
        call.backend,
        t.scan.name,
        out if direct else None,
        call.stats,
        call.knobs,
    )
    res = _axis.scan_along_axis(x, op, ax, *args)
    if direct:
        return res
    res = t.finish(res)
    if call.include_initial:
        res = with_initial(res, resolve(op).identity_for(t.scan), t.result, ax)
    return res if out is None else conventions.put(out, res)


def _reduce_axes(x: Any, call: Call) -> Any:
    """:func:`jitscan.reduce` over some of the axes (all of them are a plain reduction:
    ``call.whole``): a reduction of lanes by segments."""
    shape = tuple(x.shape)
    t = conventions.types(conventions.input_dtype(x), call.dtype, "keep")
    x, op = conventions.narrowed(x, call.op, t)
    axis = call.axis
    if axis == ():
        return arrays.astype(x if shape else x.reshape(()), t.result)  # nothing to reduce
    if not shape:
        raise conventions.AxisError(axis if not isinstance(axis, tuple) else axis[0], 0)
    axes = conventions.normalize_axes(axis, len(shape))
    res = _axis.reduce_along_axes(x, op, axes, call.variant, call.backend, t.scan.name, call.knobs)
    res = conventions.numpy_sum_zero(res, op, t.scan.numpy)
    kept = tuple(s for i, s in enumerate(shape) if i not in axes)
    full = tuple(1 if i in axes else s for i, s in enumerate(shape))
    return t.finish(res).reshape(full if call.keepdims else kept)


def _complex(x: Any, call: Call) -> Any:
    """Complex values: sums as two real scans, complex64 products on 64-bit words (``complexes``)."""
    if call.form != "reduce" and len(x.shape) == 0:
        x = x.reshape((1,))

    def each(part: Any, part_op: str | Monoid, part_dtype: np.dtype) -> Any:
        return run(part, replace(call, op=part_op, dtype=part_dtype, out=None, rule="keep", nan=None))

    return complexes.by_parts(x, call.op, call.dtype, call.out, call.nan, each)


def with_initial(res: Any, identity: Any, dtype: np.dtype, axis: int = 0) -> Any:
    """The identity before ``res`` along ``axis`` (a zero of ``dtype``: +0.0 for sums, as the Array API)."""
    zero = dtype.type(0) if identity == 0 else dtype.type(identity)
    shape = list(res.shape)
    shape[axis] = 1
    head = np.full(shape, zero, dtype)
    if isinstance(res, np.ndarray):
        return np.concatenate([head, res], axis=axis)
    b = backends.for_array(res)
    return b.concatenate([b.to_device(head, b.queue_of(res)), res], axis)


#: the handler of each kind of input in memory
HANDLERS = {COMPLEX: _complex, AXIS: _along_axis, PLAIN: _plain}
