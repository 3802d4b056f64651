"""Warm calls: what a public function's shortcut holds for a call it has seen before.

A public function keys its call on what can differ between such calls (the input's
type and dtype, the options, ``out``'s dtype, knobs; ``cache.call_key``) and looks the
key up once. A hit is a *warm call*, ``go(x, out, flags, offsets, initial)``: the prepared
scan called on this call's arrays, nothing else. Everything else about the call was
checked when the key was first seen (:func:`make`: the dispatch's kind and refusals, the
dtype conventions), so a hit implies the call is valid apart from its arrays, which the
prepared scan checks itself. Calls a warm call cannot do whole (a conversion, counters,
Dask, Awkward) keep ``None`` under their key and take the long way, the dispatch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..plan import PreparedScan
from ..variants import segments
from . import conventions, tuples
from .cache import is_device_type, remember, shortcut_for
from .call import AXIS, PLAIN, TUPLE, Call, kind_of, reduction_by_offsets, refuse

#: a warm call: ``go(x, out, flags, offsets, initial)``
Warm = Callable[[Any, Any, Any, Any, Any], Any]
#: the long way: ``long(x, call)`` (the dispatch, or the runner for a Dask chunk)
Long = Callable[[Any, Call], Any]


def through(cache: dict, key: tuple, x: Any, call: Call, long: Long) -> Any:
    """A call whose key found no warm call in ``cache``: where the key is new, its warm call
    is made and remembered (None: the long way); then the call is made, warm or long."""
    try:
        new = key not in cache
    except TypeError:  # an unhashable argument: no key to remember
        new = False
    go = make(x, call, long) if new else None
    if new:
        remember(cache, key, go)
    if go is None:
        return long(x, call)
    return go(x, call.out, call.flags, call.offsets, call.initial)


def make(x: Any, call: Call, long: Long) -> Warm | None:
    """The warm call of ``call`` on inputs like ``x``, or None where it takes the long way
    (which also raises what is wrong with the call)."""
    if call.stats is not None or call.nan is not None or call.include_initial:
        return None  # counters, NaN replaced, a zero first: more than the prepared scan's call
    if call.out is not None and not hasattr(call.out, "dtype"):
        return None  # an out= that is no array: the long way names it
    try:
        kind, x = kind_of(x, call)
        refuse(call, kind, x)
        maker = _MAKERS.get((kind, call.form))
        return None if maker is None else maker(x, call, long)
    except (TypeError, ValueError):
        return None  # the long way raises it, with its own message


def _scan(x: Any, call: Call, long: Long) -> Warm | None:
    p = shortcut_for(x, call.op, call.kind, call.rule, call.dtype, call.out, *_picks(call))
    if p is None:
        return None
    if type(x) is np.ndarray:  # p's host path
        if call.initial is not None:
            return lambda x, out, flags, offsets, initial: p(x, out, initial=initial)
        return lambda x, out, flags, offsets, initial: p(x, out)
    return _common(p, call.initial is not None)


def _common(p: PreparedScan, carried: bool = False) -> Warm:
    """The plain call of device arrays: the prepared scan's common call, whole in one
    function (compiled on CUDA), from ``initial=`` where ``carried`` (a Python number's
    carry goes in the launch's arguments, which the compiled call takes too); its general
    path where that declines the arrays."""

    def go(x: Any, out: Any, flags: Any, offsets: Any, initial: Any) -> Any:
        try:
            # an attribute, not bound here: verify() replaces it
            result = p.common(x, out, p.carry_of(initial) if carried else None)
        except Exception as exc:  # an allocation that failed, named (free until it catches)
            p.reraise(exc, x)
        if result is not None:
            return result
        return p(x, out, initial=initial) if carried else p(x, out)

    return go


def _reduce(x: Any, call: Call, long: Long) -> Warm | None:
    if call.keepdims or not len(x.shape):
        return None
    p = shortcut_for(x, call.op, "reduce", "keep", call.dtype, None, *_picks(call))
    if p is None:
        return None
    # the kernels write NumPy's +0.0 for a float sum of negative zeros (ScanSpec.positive_zero)
    if call.out is not None:  # its value put there (a copy of one element)
        return lambda x, out, flags, offsets, initial: conventions.put_reduction(out, p(x, initial=initial))
    return lambda x, out, flags, offsets, initial: p(x, initial=initial)


def _segmented(values: Any, call: Call, long: Long) -> Warm | None:
    p = shortcut_for(values, call.op, call.kind, "keep", call.dtype, call.out, *_picks(call), call.segments)
    if p is None:
        return None

    def go(x: Any, out: Any, flags: Any, offsets: Any, initial: Any) -> Any:
        if initial is None:
            result = _form(p, x, out, flags, offsets, 0)
            if result is not None:
                return result
        return p(x, out, flags=flags, offsets=offsets, initial=initial)

    return go


def _form(p: PreparedScan, x: Any, out: Any, flags: Any, offsets: Any, row_len: int) -> Any:
    """The prepared scan's common call of its form (FormCalls), or None where it declines
    the arrays (the prepared scan's call then takes them)."""
    try:
        return p.form_common(x, out, flags, offsets, row_len, None)  # an attribute: verify() sets it
    except Exception as exc:  # an allocation that failed, named (free until it catches)
        p.reraise(exc, x)


def _segmented_reduce(values: Any, call: Call, long: Long) -> Warm | None:
    p = shortcut_for(values, call.op, "reduce", "keep", call.dtype, None, *_picks(call), "offsets")
    if p is None:
        return None
    if call.op == "add" and p.dtype.numpy.kind == "f":
        zero = p.dtype.numpy  # NumPy's sum of nothing, or of negative zeros, is +0.0

        def go(x: Any, out: Any, flags: Any, offsets: Any, initial: Any) -> Any:
            res = conventions.numpy_sum_zero(p(x, offsets=offsets), "add", zero)
            return res if out is None else conventions.put_reduction(out, res)

        return go

    def go(x: Any, out: Any, flags: Any, offsets: Any, initial: Any) -> Any:
        # out= written by the kernels where they take it as it is, else the result put there
        res = _form(p, x, out, None, offsets, 0)
        if res is None:
            res = p(x, offsets=offsets)
        return res if out is None else conventions.put_reduction(out, res)

    return go


def _rows(x: Any, call: Call, long: Long) -> Warm | None:
    """A scan along the last axis: the lanes are rows of the flattened array, the prepared
    scan's ``row_len`` (other axes move the axis last: a copy, the long way)."""
    ndim = len(x.shape)
    if call.form != "scan" or conventions.normalize_axis(call.axis, ndim) != ndim - 1:
        return None
    p = shortcut_for(x, call.op, call.kind, call.rule, call.dtype, call.out, *_picks(call), "rows")
    if p is None:
        return None
    plain = replace(call, out=None)  # the long way of a call this one cannot take (no arrays kept)

    device = is_device_type(type(x))

    def go(x: Any, out: Any, flags: Any, offsets: Any, initial: Any) -> Any:
        shape = x.shape
        row = shape[-1]
        if row:
            if device and (out is None or out.shape == shape):
                # the common call of rows writes the input's shape, and takes an out of it
                # only where the kernels write it as it is (contiguous, apart from x; a flat
                # out it would take too, which NumPy refuses). Inline, not _form's frame:
                # a small batch's call is about a launch's time
                try:
                    res = p.form_common(x, out, None, None, row, None)  # verify() sets it
                except Exception as exc:  # an allocation that failed, named
                    p.reraise(exc, x)
                if res is not None:
                    return res
            if out is None:
                res = p(x, None, row_len=row)
                return res if res.shape == shape else res.reshape(shape)
            if out.shape == shape and out.flags.c_contiguous:  # its flat view is itself
                p(x, out if device else out.reshape(-1), row_len=row)  # rows take either
                return out
        return long(x, replace(plain, out=out))

    return go


def _lanes(x: Any, call: Call, long: Long) -> Warm | None:
    """A reduction over the last axis (of several): each lane a segment of the flattened
    array, given by offsets (made once per shape)."""
    ndim = len(x.shape)
    if ndim < 2 or conventions.normalize_axes(call.axis, ndim) != (ndim - 1,):
        return None
    variant = reduction_by_offsets(call.variant)
    p = shortcut_for(
        x, call.op, "reduce", "keep", call.dtype, None, variant, call.backend, call.knobs, "offsets"
    )
    if p is None:
        return None
    zero = p.dtype.numpy if call.op == "add" and p.dtype.numpy.kind == "f" else None
    keepdims = call.keepdims
    b = p.backend
    #: by shape (and a device array's device): the lanes' offsets, on the device for device
    #: input, so that the call takes the prepared scan's common call and copies nothing
    offsets_of: dict[tuple, Any] = {}

    def go(x: Any, out: Any, flags: Any, offsets: Any, initial: Any) -> Any:
        shape = tuple(x.shape)
        lane, kept = shape[-1], shape[:-1]
        on_device = type(x) is not np.ndarray
        key = (shape, b.device_of(x)) if on_device else shape
        offsets = offsets_of.get(key)
        if offsets is None:
            lanes = int(np.prod(kept, dtype=np.int64))
            if not lane or not lanes:
                return long(x, call)  # the identity of every empty lane, or no lane
            if len(offsets_of) >= _SHAPES:
                offsets_of.clear()
            offsets = np.arange(0, lanes * lane + 1, lane, dtype=np.int64)
            if on_device:  # made here, never seen by a user: checked already
                offsets = segments.trust(b.to_device(offsets, b.queue_of(x)))
            offsets_of[key] = offsets
        # out= of the lanes' shape written by the kernels where they take it as it is
        direct = out is not None and zero is None and not keepdims
        res = _form(p, x, out if direct else None, None, offsets, 0) if on_device else None
        if res is None:
            res = p(x, offsets=offsets)
        if zero is not None:  # NumPy's sum of negative zeros is +0.0
            res = conventions.numpy_sum_zero(res, "add", zero)
        if res is out:
            return out
        want = (*kept, 1) if keepdims else kept
        res = res if res.shape == want else res.reshape(want)  # (a view costs a CuPy call)
        return res if out is None else conventions.put_reduction(out, res)

    return go


#: the lane shapes whose offsets a warm reduction over the last axis keeps
_SHAPES = 16


def _tuples(xs: tuple, call: Call, long: Long) -> Warm | None:
    if call.axis is not None:
        return None
    p, single = tuples.prepared_call(xs, call)

    def go(x: Any, out: Any, flags: Any, offsets: Any, initial: Any) -> Any:
        res = _form(p, x, out, flags, offsets, 0)
        if res is None:
            res = p(x, out, flags=flags, offsets=offsets)
        return res[0] if single else res

    return go


def _picks(call: Call) -> tuple[Any, Any, dict[str, Any]]:
    return call.variant, call.backend, call.knobs


#: the maker of each (input kind, form) that has a warm call
_MAKERS: dict[tuple[str, str], Callable[[Any, Call, Long], Warm | None]] = {
    (PLAIN, "scan"): _scan,
    (PLAIN, "reduce"): _reduce,
    (PLAIN, "segmented"): _segmented,
    (PLAIN, "segmented_reduce"): _segmented_reduce,
    (AXIS, "scan"): _rows,
    (AXIS, "reduce"): _lanes,
    **{(TUPLE, form): _tuples for form in ("scan", "reduce", "segmented", "segmented_reduce")},
}
