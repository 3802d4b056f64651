"""Stable partition: the elements that meet a predicate first, then the others, each part in
its order, with the count(s); nothing waits.

One scan (``transforms.py``) writes the first part in place and the others to scratch
arrays, and a second pass puts those after it: stability needs the first part's count,
which only the scan's end knows. ``numpy.partition`` is a selection, not this: hence the
name.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..kernels.transform import Write
from . import dispatch
from .cache import shortcut
from .call import is_dask
from .predicates import Predicate, _predicate
from .selection import _element_only
from .transforms import (
    Operands,
    array_dtype,
    count_dtype,
    flat_on_one_queue,
    operands,
    prepared,
    remember,
    transform,
    warm_call,
    warm_key,
)


def stable_partition(
    x: Any, predicate: Any, second: Any = None, *, backend: str | None = None, **knobs: Any
) -> tuple[Any, Any]:
    """The elements of ``x`` (flattened) for which ``predicate`` holds, then the others, each
    in their order; and how many hold. Given ``second`` too, three ways: those for which
    ``predicate`` holds, then those of the rest for which ``second`` holds, then the rest,
    with the two counts.

    Nothing waits: the count is a 0-d device array for device input (NumPy's int64 for host
    input), the two counts an array of two. One scan writes the first part in place and the
    others to scratch arrays, and a copy puts those after it.

    Parameters
    ----------
    x : array_like or device array
    predicate, second : str or callable
        As :func:`copy_if` takes them.
    backend : str, optional
    **knobs
        ``variant=``, ``simulate_blocking=``, ``threads=``, ``vectors=``, ``min_blocks=`` (the tile).

    Returns
    -------
    (array, count) or (array, counts)

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> y, k = jitscan.stable_partition(np.array([3, -1, 4, -2, 5], np.int32), "x > 0")
    >>> y, k
    (array([ 3,  4,  5, -1, -2], dtype=int32), np.int64(3))
    >>> jitscan.stable_partition(np.array([3, -1, 0, 4, -2, 0], np.int32), "x > 0", "x < 0")
    (array([ 3,  4, -1, -2,  0,  0], dtype=int32), array([2, 2]))
    """
    key = warm_key((x,), predicate, backend, *knobs.items()) if second is None else None
    got = warm_call(_WARM_PARTITION, key, x)  # a call like one seen before skips the checks
    if got is not None:
        return got
    if is_dask(x):
        lazy = dispatch.lazy()

        if second is not None:
            raise TypeError("jitscan.stable_partition of a Dask array takes one predicate (two ways)")
        _element_only("stable_partition", predicate)
        return lazy.stable_partition(lambda b: stable_partition(b, predicate, backend=backend, **knobs), x)
    ops = operands("stable_partition", [x], backend, ["x"])
    (v,) = ops.arrays
    n, vd = int(v.size), array_dtype("stable_partition", "x", v.dtype)
    if second is not None:
        return _three_way(ops, v, n, vd, predicate, second, knobs)
    split, place = _partition_transforms(_predicate("stable_partition", predicate, vd), vd)
    y, rest = ops.empty(n, v.dtype), ops.empty(n, v.dtype)
    count = ops.full(1, np.int64, 0) if n == 0 else ops.empty(1, np.int64)
    cdt = count_dtype(n)
    prepared(split, cdt, "add", "exclusive", ops.backend, knobs)([v], [y, rest, count], n, ops.queue)
    prepared(place, cdt, "add", "exclusive", ops.backend, knobs)([rest, count], [y], n, ops.queue)
    if ops.on_device:
        if key is not None and n:
            remember(_WARM_PARTITION, key, _warm_partition(ops.backend, split, place, v.dtype, cdt, knobs))
        return y, ops.backend.scalar(count)
    return ops.result(y), np.int64(ops.count(count))


#: stable_partition's warm calls (two ways: transforms.warm_key)
_WARM_PARTITION: dict[tuple, Any] = shortcut()


def _warm_partition(b: Any, split: Any, place: Any, dtype: Any, cdt: str, knobs: dict) -> Any:
    """A two-way partition like one seen before (``go(x)``), as :func:`stable_partition`
    runs it, with none of its checks and lookups; None for a call it does not take (an
    array of another shape or layout, none, or one whose count needs another width), which
    takes the long way."""
    first = prepared(split, cdt, "add", "exclusive", b, knobs).call
    second = prepared(place, cdt, "add", "exclusive", b, knobs).call
    i64 = np.dtype(np.int64)

    def go(x: Any) -> Any:
        n = x.size
        if not n or count_dtype(n) != cdt:
            return None
        queue = flat_on_one_queue(b, (x,), n)
        if queue is None:
            return None
        y, rest, count = b.empty((n,), dtype, queue), b.empty((n,), dtype, queue), b.empty((1,), i64, queue)
        first([x], [y, rest, count], n, queue)
        second([rest, count], [y], n, queue)
        return y, b.scalar(count)

    return go


@functools.lru_cache(maxsize=256)
def _partition_transforms(p: Predicate, vd: str) -> tuple[Any, Any]:
    """A two-way partition's transforms, made once: the split (the kept ones in place, the
    others to ``rest``, the count), then the others after the kept ones (``rest[i]`` to
    ``y[count + i]`` for ``i < n - count``)."""
    split = transform(
        "partition",
        (("x", vd),),
        f"({p.text}) != 0",
        (("y", vd), ("rest", vd), ("count", "int64")),
        (
            Write("y", "v", "x", "item"),
            Write("rest", "i - v", "x", "!item"),
            Write("count", "0", "v + item", "i == n - 1"),
        ),
        p.functions,
        p.calls,
    )
    place = transform(
        "place_rest",
        (("rest", vd), ("count", "int64")),
        "0",
        (("y", vd),),
        (Write("y", "count[0] + i", "rest", "i < n - count[0]"),),
    )
    return split, place


def _three_way(
    ops: Operands, v: Any, n: int, vd: str, first: Any, second: Any, knobs: dict
) -> tuple[Any, Any]:
    """stable_partition by two predicates: one scan of both counts in the halves of a 64-bit
    sum (the first part's below bit 32, the second's above), then one copy of the second
    part and the rest after the first."""
    if n >= 1 << 31:
        raise ValueError(f"a three-way stable_partition takes fewer than 2**31 elements, not {n}")
    p, q = _predicate("stable_partition", first, vd, 1), _predicate("stable_partition", second, vd, 2)
    one, two = f"(({p.text}) != 0)", f"(({p.text}) == 0 && ({q.text}) != 0)"
    low, high = "(v & 4294967295)", "(v >> 32)"
    y, mid, rest = ops.empty(n, vd), ops.empty(n, vd), ops.empty(n, vd)
    counts = ops.full(2, np.int64, 0) if n == 0 else ops.empty(2, np.int64)
    funcs = "\n".join(f for f in (p.functions, q.functions) if f)
    calls = p.calls + q.calls
    split = transform(
        "partition3",
        (("x", vd),),
        f"{one} ? 1 : {two} ? ((js_i64)1 << 32) : 0",
        (("y", vd), ("mid", vd), ("rest", vd), ("counts", "int64")),
        (
            Write("y", low, "x", "item == 1"),
            Write("mid", high, "x", "item > 1"),
            Write("rest", f"i - {low} - {high}", "x", "item == 0"),
            Write("counts", "0", f"{low} + (item == 1)", "i == n - 1"),
            Write("counts", "1", f"{high} + (item > 1)", "i == n - 1"),
        ),
        funcs,
        calls,
    )
    prepared(split, "int64", "add", "exclusive", ops.backend, knobs)(
        [v], [y, mid, rest, counts], n, ops.queue
    )
    place = transform(
        "place_mid_rest",
        (("mid", vd), ("rest", vd), ("counts", "int64")),
        "0",
        (("y", vd),),
        (
            Write("y", "counts[0] + i", "mid", "i < counts[1]"),
            Write("y", "counts[0] + counts[1] + i", "rest", "i < n - counts[0] - counts[1]"),
        ),
    )
    prepared(place, count_dtype(n), "add", "exclusive", ops.backend, knobs)(
        [mid, rest, counts], [y], n, ops.queue
    )
    if ops.on_device:
        return y, counts
    return ops.result(y), ops.result(counts)


__all__ = ["stable_partition"]
