"""Compaction: the elements that meet a condition, in one pass over memory.

Each function is one scan (``transforms.py``): element ``i`` scans as whether it is kept, the
exclusive count of kept elements before it is where it goes, and the last element writes
the count. The condition, the values and what is kept are each moved once; there is no
array of positions.

Results are sized as NumPy's (and CuPy's ``x[mask]``): the host waits once, for the count.
``size=`` asks for a result of exactly that many elements instead, padded with
``fill_value`` past the count and cut at ``size`` (JAX's ``nonzero(size=)``), so nothing
waits; ``return_count=True`` also returns the count, a 0-d device array for device input.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from ..kernels.transform import Write
from . import dispatch
from .cache import shortcut
from .call import is_dask
from .predicates import Predicate, _predicate
from .transforms import (
    Operands,
    array_dtype,
    constants_of,
    count_dtype,
    flat_on_one_queue,
    operands,
    prepared,
    remember,
    transform,
    value_key,
    warm_call,
    warm_key,
)


def _element_only(fn: str, predicate: Any) -> None:
    """A Dask array's chunks are scanned each on its own: a predicate there may read only its
    element, not ``i``, ``n`` or other elements (each would be the chunk's, not the array's)."""
    if isinstance(predicate, str) and re.search(r"\b[in]\b|\[", predicate):
        raise ValueError(
            f"jitscan.{fn} of a Dask array: the predicate {predicate!r} reads i, n or another element, "
            "which would be its chunk's, not the array's; a predicate there reads x alone"
        )


def _check_size(fn: str, size: Any) -> int | None:
    if size is None:
        return None
    if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)) or size < 0:
        raise ValueError(f"jitscan.{fn}: size must be an integer of at least 0, got {size!r}")
    return int(size)


#: compaction of size= fills its result in its own pass up to this many elements, and with
#: a launch of its own above: the elements not kept writing the padding saved the fill's
#: launch, but at 2^28 int32 took 560 us more than CuPy's fill (H200, selection_gpu.py)
FUSED_FILL_MOST = 1 << 20


@functools.lru_cache(maxsize=256)
def _keep_transform(
    keep: str,
    value: str,
    reads: tuple[tuple[str, str], ...],
    out_name: str,
    padded: bool,
    pred: Predicate | None,
) -> Any:
    """A compaction's transform, made once (making its rules costs a call microseconds):
    ``value`` where ``keep`` holds at the kept count, the count, and with ``padded`` the
    padding from ``fill[0]`` (:func:`_keep`)."""
    funcs = (pred.functions, pred.calls) if pred is not None else ("", ())
    rules = (Write("y", "v", value, "item"), Write("count", "0", "v + item", "i == n - 1"))
    if padded:
        rules = (*rules, Write("y", "n - 1 - (i - v)", "fill[0]", "!item"))
    writes = (("y", out_name), ("count", "int64"))
    with_fill = (*reads, ("fill", out_name)) if padded else reads
    return transform("keep", with_fill, f"({keep}) != 0", writes, rules, *funcs)


def _keep(
    fn: str,
    ops: Operands,
    n: int,
    keep: str,
    value: str,
    reads: tuple[tuple[str, str], ...],
    out_dtype: Any,
    size: int | None,
    fill_value: Any,
    knobs: dict,
    pred: Predicate | None = None,
) -> tuple[Any, Any, int | None]:
    """The kept values of one compaction: (result, count array, count where waited for).

    With ``size`` at most ``n`` (and ``n`` up to ``FUSED_FILL_MOST``) nothing fills the result
    first: the elements not kept write ``fill_value`` from its end back (the r-th of them at
    ``n - 1 - r``), which covers every place past the count, in the same pass."""
    out_dtype = np.dtype(out_dtype)
    out_name = array_dtype(fn, "the result", out_dtype)
    m = n if size is None else size
    padded = size is not None and 0 < size <= n <= FUSED_FILL_MOST
    t = _keep_transform(keep, value, reads, out_name, padded, pred)
    args = [*ops.arrays, ops.constant(fill_value, out_dtype)] if padded else ops.arrays
    y = ops.full(m, out_dtype, fill_value) if size is not None and not padded else ops.empty(m, out_dtype)
    count = ops.full(1, np.int64, 0) if n == 0 else ops.empty(1, np.int64)
    prepared(t, count_dtype(n), "add", "exclusive", ops.backend, knobs)(args, [y, count], n, ops.queue)
    if size is not None:
        return y, count, None
    return y, count, ops.count(count)


def _finish(ops: Operands, y: Any, count: Any, return_count: bool, stop: int | None) -> Any:
    """The result (its first ``stop`` elements), and where asked the count, as the caller's."""
    out = ops.result(y, stop)
    if not return_count:
        return out
    return out, ops.backend.scalar(count) if ops.on_device else np.int64(ops.count(count))


def extract(
    condition: Any,
    arr: Any,
    *,
    size: int | None = None,
    fill_value: Any = 0,
    return_count: bool = False,
    backend: str | None = None,
    **knobs: Any,
) -> Any:
    """The elements of ``arr`` where ``condition`` is nonzero, as :func:`numpy.extract`.

    Both are flattened. A condition shorter than ``arr`` selects among its first elements;
    a longer one may hold only zeros past ``arr``'s end (NumPy's IndexError otherwise).

    Parameters
    ----------
    condition : array_like or device array
        Nonzero (True) where an element is kept; bool, integer or float.
    arr : array_like or device array
        The values, of any dtype the scans' arrays take (bool, 8- to 64-bit integers, float32,
        float64).
    size : int, optional
        A result of exactly ``size`` elements, without the host waiting: past the count
        ``fill_value``, and kept elements past ``size`` left out.
    fill_value : scalar
        The padding of a result of ``size=``.
    return_count : bool
        Also return how many elements are kept (a 0-d device array for device input).
    backend : str, optional
    **knobs
        ``variant=``, ``simulate_blocking=``, ``threads=``, ``vectors=``, ``min_blocks=`` (the tile).

    Returns
    -------
    array, or (array, count)
        Device input gives device arrays; host input NumPy.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> x = np.arange(6, dtype=np.int32)
    >>> jitscan.extract(x % 2 == 0, x)
    array([0, 2, 4], dtype=int32)
    >>> jitscan.extract(x % 2 == 0, x, size=4, fill_value=-1)
    array([ 0,  2,  4, -1], dtype=int32)
    """
    size = _check_size("extract", size)
    key = None
    if size:  # the no-stall form: a call like one seen before skips the checks (warm_key)
        key = warm_key((condition, arr), size, value_key(fill_value), return_count, backend, *knobs.items())
    got = warm_call(_WARM, key, condition, arr)
    if got is not None:
        return got
    if is_dask(arr) or is_dask(condition):
        lazy = dispatch.lazy()

        lazy.refuse_fixed_size("extract", size, return_count)
        return lazy.extract(lambda c, x: extract(c, x, backend=backend, **knobs), condition, arr)
    ops = operands("extract", [condition, arr], backend, ["condition", "arr"])
    cond, values = ops.arrays
    cd = array_dtype("extract", "condition", cond.dtype)
    vd = array_dtype("extract", "arr", values.dtype)
    n = min(int(cond.size), int(values.size))
    if int(cond.size) > n:
        tail = ops.backend.to_host(cond[n:]) if ops.on_device else np.ravel(np.asarray(condition))[n:]
        if np.any(tail):
            first = n + int(np.flatnonzero(tail)[0])
            raise IndexError(f"index {first} is out of bounds for axis 0 with size {n}")
    reads = (("c", cd), ("x", vd))
    y, count, k = _keep("extract", ops, n, "c", "x", reads, values.dtype, size, fill_value, knobs)
    if key is not None and ops.on_device:
        remember(
            _WARM,
            key,
            _warm_keep(ops.backend, "c", "x", reads, values.dtype, size, fill_value, knobs, return_count),
        )
    return _finish(ops, y, count, return_count, k)


#: extract's warm calls (transforms.warm_key)
_WARM: dict[tuple, Any] = shortcut()


def _warm_keep(
    b: Any,
    keep: str,
    value: str,
    reads: tuple[tuple[str, str], ...],
    out_dtype: Any,
    size: int,
    fill_value: Any,
    knobs: dict,
    return_count: bool,
) -> Any:
    """A compaction of ``size=`` like one seen before, as :func:`_keep` runs it where the
    pass writes the padding (``go(*arrays)``, the transform's reads but the fill value), with
    none of the first call's checks and lookups; None for a call it does not take (arrays of
    another shape, length or queue), which takes the long way and its checks."""
    out_dtype = np.dtype(out_dtype)
    t = _keep_transform(keep, value, reads, array_dtype("extract", "the result", out_dtype), True, None)
    scan = prepared(t, count_dtype(FUSED_FILL_MOST), "add", "exclusive", b, knobs).call
    fill = constants_of(b, [(fill_value, out_dtype)])
    i64 = np.dtype(np.int64)

    def go(*arrays: Any) -> Any:
        n = arrays[-1].size
        if not size <= n <= FUSED_FILL_MOST:
            return None
        queue = flat_on_one_queue(b, arrays, n)
        if queue is None:
            return None
        y, count = b.empty((size,), out_dtype, queue), b.empty((1,), i64, queue)
        scan([*arrays, *fill(queue)], [y, count], n, queue)
        return (y, b.scalar(count)) if return_count else y

    return go


def compress(
    condition: Any,
    a: Any,
    axis: int | None = None,
    *,
    size: int | None = None,
    fill_value: Any = 0,
    return_count: bool = False,
    backend: str | None = None,
    **knobs: Any,
) -> Any:
    """The elements (or slices along ``axis``) of ``a`` where ``condition`` is nonzero, as
    :func:`numpy.compress`.

    ``axis=None`` flattens ``a``, as :func:`extract`, whose other parameters it takes.
    Along an axis the result keeps ``a``'s other dimensions; ``condition`` is 1-D, and
    shorter than the axis it selects among the first slices (``size=`` and
    ``return_count=`` are for ``axis=None``). One pass over ``a`` writes every kept slice's
    elements where they go.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> jitscan.compress([1, 0, 1], np.arange(6).reshape(3, 2), axis=0)
    array([[0, 1],
           [4, 5]])
    """
    cnd = len(np.shape(condition)) if not hasattr(condition, "ndim") else condition.ndim
    if cnd != 1:
        raise ValueError(f"jitscan.compress: condition must be 1-D, not {cnd}-D")
    if axis is None:
        return extract(
            condition,
            a,
            size=size,
            fill_value=fill_value,
            return_count=return_count,
            backend=backend,
            **knobs,
        )
    if size is not None or return_count:
        raise TypeError("jitscan.compress: size= and return_count= are for axis=None")
    if is_dask(a) or is_dask(condition):
        raise TypeError("jitscan.compress of a Dask array takes axis=None (it flattens the array)")
    shape = tuple(np.shape(a)) if not hasattr(a, "shape") else tuple(a.shape)
    if not isinstance(axis, (int, np.integer)) or not -len(shape) <= axis < len(shape):
        raise ValueError(f"jitscan.compress: axis {axis} is out of bounds for {len(shape)} dimensions")
    axis = int(axis) % len(shape)
    along = shape[axis]
    cond = _on_host(condition)  # one entry a slice: the host picks the slices
    if np.any(cond[along:]):
        first = along + int(np.flatnonzero(cond[along:])[0])
        raise IndexError(f"index {first} is out of bounds for axis {axis} with size {along}")
    kept = np.flatnonzero(cond[:along])
    pos = np.full(along, -1, np.int64)
    pos[kept] = np.arange(kept.size)
    inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    out_shape = (*shape[:axis], kept.size, *shape[axis + 1 :])
    dims = np.array([inner, along, kept.size], np.int64)
    tables = [pos, dims] if not _owned(a, backend) else [_on_device(a, pos), _on_device(a, dims)]
    ops = operands("compress", [a, *tables], backend, ["a", "pos", "dims"])
    x = ops.arrays[0]
    n, m = int(x.size), int(np.prod(out_shape, dtype=np.int64))
    y = ops.empty(m, x.dtype)
    t = transform(
        "compress_axis",
        (("x", array_dtype("compress", "a", x.dtype)), ("pos", "int64"), ("dims", "int64")),
        "0",
        (("y", np.dtype(x.dtype).name),),
        (
            Write(
                "y",
                "(i / (dims[0] * dims[1]) * dims[2] + pos[i / dims[0] % dims[1]]) * dims[0] + i % dims[0]",
                "x",
                "pos[i / dims[0] % dims[1]] >= 0",
            ),
        ),
    )
    if n and m:
        prepared(t, count_dtype(n), "add", "exclusive", ops.backend, knobs)(ops.arrays, [y], n, ops.queue)
    return ops.result(y).reshape(out_shape)


def _on_host(x: Any) -> np.ndarray:
    """``x`` on the host: a device array's values (the host waits), else NumPy's reading of it."""
    from .. import backends

    owner = backends.for_array(x)
    return np.asarray(owner.to_host(x) if owner is not None else x).reshape(-1)


def flatnonzero(
    a: Any,
    *,
    size: int | None = None,
    fill_value: Any = 0,
    return_count: bool = False,
    backend: str | None = None,
    **knobs: Any,
) -> Any:
    """Indices (int64) of the nonzero elements of ``a`` flattened, as :func:`numpy.flatnonzero`.

    Other parameters as :func:`extract`.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> jitscan.flatnonzero(np.array([[0, 3], [4, 0]]))
    array([1, 2])
    """
    size = _check_size("flatnonzero", size)
    if is_dask(a):
        lazy = dispatch.lazy()

        lazy.refuse_fixed_size("flatnonzero", size, return_count)
        return lazy.flatnonzero(lambda b: flatnonzero(b, backend=backend, **knobs), a)
    ops = operands("flatnonzero", [a], backend, ["a"])
    (x,) = ops.arrays
    reads = (("x", array_dtype("flatnonzero", "a", x.dtype)),)
    y, count, k = _keep("flatnonzero", ops, int(x.size), "x", "i", reads, np.int64, size, fill_value, knobs)
    return _finish(ops, y, count, return_count, k)


def nonzero(
    a: Any, *, size: int | None = None, fill_value: Any = 0, backend: str | None = None, **knobs: Any
) -> tuple[Any, ...]:
    """The indices of the nonzero elements of ``a``, one int64 array per dimension, as
    :func:`numpy.nonzero` (row-major order).

    One pass writes every dimension's indices. ``size=`` and ``fill_value=`` as
    :func:`extract` (every dimension padded with it).

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> jitscan.nonzero(np.array([[0, 3], [4, 0]]))
    (array([0, 1]), array([1, 0]))
    """
    size = _check_size("nonzero", size)
    if is_dask(a):
        lazy = dispatch.lazy()

        lazy.refuse_fixed_size("nonzero", size, False)
        return lazy.nonzero(lambda b: flatnonzero(b, backend=backend, **knobs), a)
    shape = tuple(np.shape(a)) if not hasattr(a, "shape") else tuple(a.shape)
    if not shape:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jitscan.flatnonzero(a) instead.")
    if len(shape) > 6:
        raise ValueError(f"jitscan.nonzero takes arrays of at most 6 dimensions, not {len(shape)}")
    strides = [int(np.prod(shape[d + 1 :], dtype=np.int64)) for d in range(len(shape))]
    # the shape as data, not text: one program per number of dimensions
    dims = np.array([*strides, *shape], np.int64)
    ops = operands(
        "nonzero", [a, dims if not _owned(a, backend) else _on_device(a, dims)], backend, ["a", "dims"]
    )
    x, dev_dims = ops.arrays
    nd, n = len(shape), int(x.size)
    m = n if size is None else size
    outs = [
        ops.full(m, np.int64, fill_value) if size is not None else ops.empty(m, np.int64) for _ in range(nd)
    ]
    count = ops.full(1, np.int64, 0) if n == 0 else ops.empty(1, np.int64)
    t = transform(
        f"nonzero{nd}",
        (("x", array_dtype("nonzero", "a", x.dtype)), ("dims", "int64")),
        "x != 0",
        (*((f"i{d}", "int64") for d in range(nd)), ("count", "int64")),
        (
            *(Write(f"i{d}", "v", f"i / dims[{d}] % dims[{nd + d}]", "item") for d in range(nd)),
            Write("count", "0", "v + item", "i == n - 1"),
        ),
    )
    prepared(t, count_dtype(n), "add", "exclusive", ops.backend, knobs)(
        [x, dev_dims], [*outs, count], n, ops.queue
    )
    k = ops.count(count) if size is None else None
    return tuple(ops.result(o, k) for o in outs)


def _owned(a: Any, backend: str | None) -> bool:
    from ..plan.arrays import pick_backend

    return pick_backend(a, backend)[1]


def _on_device(a: Any, host: np.ndarray) -> Any:
    """``host`` on the device and queue of device array ``a``."""
    from ..plan.arrays import pick_backend

    b, _ = pick_backend(a, None)
    return b.to_device(host, b.queue_of(a))


def copy_if(
    x: Any,
    predicate: Any,
    *,
    size: int | None = None,
    fill_value: Any = 0,
    return_count: bool = False,
    backend: str | None = None,
    **knobs: Any,
) -> Any:
    """The elements of ``x`` (flattened) for which ``predicate`` holds, in order.

    Parameters
    ----------
    x : array_like or device array
    predicate : str or callable
        A C expression over ``x`` (the element), ``i`` (its index) and ``n`` (the element
        count), nonzero where the element is kept: ``"x > 0"``, ``"x == x"`` (not NaN),
        ``"i % 3 == 0 && x != 0"``, in the grammar of a :class:`jitscan.Monoid`'s combine; or
        a Python function of the element returning a bool, typed by Numba for the array's
        dtype and lowered to C as :func:`jitscan.operator` functions are
        (``lambda x: x > 0 and x % 3 != 0``).

    Other parameters as :func:`extract`.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> jitscan.copy_if(np.array([3, -1, 4, -1, 5], np.int32), "x > 0")
    array([3, 4, 5], dtype=int32)
    """
    size = _check_size("copy_if", size)
    if is_dask(x):
        lazy = dispatch.lazy()

        lazy.refuse_fixed_size("copy_if", size, return_count)
        _element_only("copy_if", predicate)
        return lazy.copy_if(lambda b: copy_if(b, predicate, backend=backend, **knobs), x)
    ops = operands("copy_if", [x], backend, ["x"])
    (v,) = ops.arrays
    reads = (("x", array_dtype("copy_if", "x", v.dtype)),)
    pred = _predicate("copy_if", predicate, reads[0][1])
    n = int(v.size)
    y, count, k = _keep("copy_if", ops, n, pred.text, "x", reads, v.dtype, size, fill_value, knobs, pred)
    return _finish(ops, y, count, return_count, k)


__all__ = ["compress", "copy_if", "extract", "flatnonzero", "nonzero"]
