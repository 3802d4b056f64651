"""Runs of equal keys: unique runs with their counts and inverse, and scans and reductions by key.

A run starts where a key differs from the one before it (every key field compared with
``!=``: a NaN key differs from everything, so each NaN is a run of its own, as in
``torch.unique_consecutive``; -0.0 and +0.0 are one key). One scan (``transforms.py``) finds
the runs in the kernel, no flags array built: element ``i`` scans as whether it starts a
run, so its inclusive scan is its run's number, and a run's first element writes the run's
key and where it starts. A reduction by key then reduces the values between those starts,
and a scan by key scans them (the segmented functions, by offsets).

Results are sized to the number of runs, for which the host waits once; ``size=`` asks
for exactly that many runs instead, so that nothing waits (keys padded with
``fill_value``, counts with 0, totals with the operator's identity).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..dtypes import DTYPES
from ..kernels.transform import ARRAY_CTYPES, Write
from ..operators import Monoid
from ..plan import PreparedScan
from ..variants import segments
from . import dispatch
from .cache import shortcut
from .call import is_dask
from .flat import reduce
from .segmented import segmented_reduce, segmented_scan
from .selection import FUSED_FILL_MOST, _check_size
from .transforms import (
    Operands,
    array_dtype,
    constants_of,
    count_dtype,
    dtype_name,
    flat_on_one_queue,
    operands,
    prepared,
    remember,
    transform,
    value_key,
    warm_call,
    warm_key,
)


def _key_fields(fn: str, keys: Any) -> list[Any]:
    """The key arrays: a tuple's are one key's fields; anything else (a list too) is one array."""
    fields = list(keys) if isinstance(keys, tuple) else [keys]
    if not 1 <= len(fields) <= 6:
        raise ValueError(f"jitscan.{fn}: keys are an array or a tuple of 1 to 6 arrays, not {len(fields)}")
    return fields


@functools.lru_cache(maxsize=256)
def _runs_transform(
    kd: tuple[str, ...], values: bool, starts: bool, inverse: bool, padded: bool = False
) -> tuple[Any, tuple[tuple[str, str], ...]]:
    """The runs' transform of keys of dtypes ``kd``, and what it writes (made once: making
    its rules costs a call microseconds).

    ``padded``: the results are of ``size`` runs (at most n), and the elements that start no
    run write their padding, in the same pass (no fill launched before it): the r-th of them
    a key's ``fill{j}[0]`` at ``n - 1 - r`` and n in ``starts`` at ``n + 1 - r``, which cover
    every place past the runs (places past an array write nothing); the last element writes
    n at the two places after the runs and at ``cap[0] + 1`` (``cap`` holds ``size``)."""
    fields = len(kd)
    head = "i == 0 || " + " || ".join(f"k{j} != k{j}[i - 1]" for j in range(fields))
    reads = [(f"k{j}", kd[j]) for j in range(fields)]
    if padded:
        reads += [("cap", "int64"), *((f"fill{j}", kd[j]) for j in range(fields))]
    writes: list[tuple[str, str]] = []
    rules: list[Write] = []
    if values:
        writes += [(f"u{j}", kd[j]) for j in range(fields)]
        rules += [Write(f"u{j}", "v - 1", f"k{j}", "item") for j in range(fields)]
        if padded:
            rules += [Write(f"u{j}", "n - 1 - (i - v)", f"fill{j}[0]", "!item") for j in range(fields)]
    if starts:
        writes.append(("starts", "int64"))
        if padded:  # size + 2 of them: the first size + 1 runs' starts, then n
            rules += [
                Write("starts", "v - 1 <= cap[0] ? v - 1 : -1", "i", "item"),
                Write("starts", "n + 1 - (i - v)", "n", "!item"),
                Write("starts", "v", "n", "i == n - 1"),
                Write("starts", "v + 1", "n", "i == n - 1"),
                Write("starts", "cap[0] + 1", "n", "i == n - 1"),
            ]
        else:
            rules += [Write("starts", "v - 1", "i", "item"), Write("starts", "v", "n", "i == n - 1")]
    if inverse:
        writes.append(("inverse", "int64"))
        rules.append(Write("inverse", "i", "v - 1"))
    writes.append(("count", "int64"))
    rules.append(Write("count", "0", "v", "i == n - 1"))
    t = transform(f"runs{fields}{'p' if padded else ''}", tuple(reads), head, tuple(writes), tuple(rules))
    return t, tuple(writes)


def _runs(
    fn: str,
    ops: Operands,
    fields: int,
    n: int,
    size: int | None,
    fill_value: Any,
    knobs: dict,
    values: bool = True,
    starts: bool = True,
    inverse: bool = False,
) -> dict[str, Any]:
    """The runs of the first ``fields`` arrays of ``ops``: what was asked of them, by name
    (``u0``.. the keys, ``starts`` where runs start and, last, n; ``inverse``), as the
    caller's arrays are (``Operands.result``), each cut to the number of runs unless
    ``size`` is given; ``runs`` that number, where waited for.

    With ``size``, ``starts`` has ``size + 2`` entries: the starts of the first ``size + 1``
    runs (n past the last run), then n, so that they are the offsets of segments whose
    first ``size`` are the first runs and whose last holds what runs past ``size`` hold."""
    keys = ops.arrays[:fields]
    kd = [array_dtype(fn, "keys", k.dtype) for k in keys]
    for k in keys[1:]:
        if int(k.size) != n:
            raise ValueError(f"jitscan.{fn}: the key arrays differ in size: {n} and {int(k.size)}")
    m = n if size is None else size
    padded = size is not None and 0 < size <= n <= FUSED_FILL_MOST
    t, writes = _runs_transform(tuple(kd), values, starts, inverse, padded)
    fill = size is not None and not padded  # results filled before the pass
    out: dict[str, Any] = {}
    for name, dt in writes:
        if name == "count":
            out[name] = ops.full(1, np.int64, 0) if n == 0 else ops.empty(1, np.int64)
        elif name == "inverse":
            out[name] = ops.empty(n, np.int64)
        elif name == "starts":
            if size is None:
                out[name] = ops.empty(m + 1, np.int64)
            else:
                out[name] = ops.full(m + 2, np.int64, n) if fill else ops.empty(m + 2, np.int64)
        else:
            out[name] = ops.full(m, dt, fill_value) if fill else ops.empty(m, dt)
    # filled, the kernel writes all but the last of the starts (its writes stop at the end)
    dsts = [ops.head(out[name], m + 1) if name == "starts" and fill else out[name] for name, _ in writes]
    reads = list(keys)
    if padded:
        reads += [ops.constant(m, np.int64), *(ops.constant(fill_value, k.dtype) for k in keys)]
    prepared(t, count_dtype(n), "add", "inclusive", ops.backend, knobs)(reads, dsts, n, ops.queue)
    k = ops.count(out["count"]) if size is None else None
    got: dict[str, Any] = {"runs": k}
    for name, _ in writes:
        if name == "count":
            continue
        stop = None if k is None or name == "inverse" else k + 1 if name == "starts" else k
        got[name] = ops.result(out[name], stop)
    return got


def unique_consecutive(
    x: Any,
    return_inverse: bool = False,
    return_counts: bool = False,
    *,
    size: int | None = None,
    fill_value: Any = 0,
    backend: str | None = None,
    **knobs: Any,
) -> Any:
    """The first element of every run of equal consecutive elements of ``x`` (flattened), as
    ``torch.unique_consecutive``; with ``return_counts`` the run-length encoding.

    Parameters
    ----------
    x : array_like or device array
    return_inverse : bool
        Also return each element's run (int64, ``x``'s shape).
    return_counts : bool
        Also return each run's length (int64).
    size : int, optional
        Exactly ``size`` runs, without the host waiting: past the number of runs the values
        are ``fill_value`` and the counts 0; runs past ``size`` are left out.
    fill_value : scalar
    backend : str, optional
    **knobs
        ``variant=``, ``simulate_blocking=``, ``threads=``, ``vectors=``, ``min_blocks=`` (the tile).

    Returns
    -------
    array, or a tuple of (values, inverse, counts) as asked

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> jitscan.unique_consecutive(np.array([1, 1, 2, 2, 3, 1, 1, 2]), return_counts=True)
    (array([1, 2, 3, 1, 2]), array([2, 2, 1, 2, 1]))
    """
    size = _check_size("unique_consecutive", size)
    key = None
    if size:  # the no-stall form: a call like one seen before skips the checks (warm_key)
        options = (size, value_key(fill_value), return_inverse, return_counts, backend, *knobs.items())
        key = warm_key((x,), *options)
        got_warm = warm_call(_WARM, key, x)
        if got_warm is not None:
            return got_warm
    if is_dask(x):
        lazy = dispatch.lazy()

        lazy.refuse_fixed_size("unique_consecutive", size, False)
        runs = lambda b: unique_consecutive(b, return_counts=True, backend=backend, **knobs)  # noqa: E731
        return lazy.unique_consecutive(runs, x, return_inverse, return_counts)
    shape = tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)
    ops = operands("unique_consecutive", [x], backend, ["x"])
    n = int(ops.arrays[0].size)
    got = _runs(
        "unique_consecutive", ops, 1, n, size, fill_value, knobs, starts=return_counts, inverse=return_inverse
    )
    res = [got["u0"]]
    if return_inverse:
        res.append(got["inverse"].reshape(shape))
    if return_counts:
        res.append(_lengths(ops, got["starts"], n if size is None else size, got["runs"], knobs))
    if key is not None and ops.on_device:
        kd = array_dtype("unique_consecutive", "keys", ops.arrays[0].dtype)
        remember(
            _WARM, key, _warm_runs(ops.backend, kd, size, fill_value, knobs, return_inverse, return_counts)
        )
    return res[0] if len(res) == 1 else tuple(res)


#: unique_consecutive's warm calls (transforms.warm_key)
_WARM: dict[tuple, Any] = shortcut()


def _warm_runs(b: Any, kd: str, size: int, fill_value: Any, knobs: dict, inverse: bool, counts: bool) -> Any:
    """unique_consecutive of ``size=`` like a call seen before, as :func:`_runs` runs it where
    the pass writes the padding (``go(x)``), with none of the first call's checks and lookups;
    None for a call it does not take (another shape, a length under ``size`` or past the
    padding's bound), which takes the long way."""
    t, writes = _runs_transform((kd,), True, counts, inverse, True)
    scan = prepared(t, count_dtype(FUSED_FILL_MOST), "add", "inclusive", b, knobs).call
    lengths = prepared(_lengths_transform(), count_dtype(FUSED_FILL_MOST), "add", "inclusive", b, knobs).call
    kdt, i64 = np.dtype(kd), np.dtype(np.int64)
    consts = constants_of(b, [(size, i64), (fill_value, kdt)])
    sizes = {"count": 1, "starts": size + 2, "u0": size}

    def go(x: Any) -> Any:
        n = x.size
        if not size <= n <= FUSED_FILL_MOST:
            return None
        queue = flat_on_one_queue(b, (x,), n)
        if queue is None:
            return None
        out = {
            name: b.empty((sizes.get(name, n),), kdt if name == "u0" else i64, queue) for name, _ in writes
        }
        scan([x, *consts(queue)], [out[name] for name, _ in writes], n, queue)
        res = [out["u0"]]
        if inverse:
            res.append(out["inverse"])
        if counts:
            c = b.empty((size,), i64, queue)
            lengths([out["starts"]], [c], size, queue)
            res.append(c)
        return res[0] if len(res) == 1 else tuple(res)

    return go


@functools.lru_cache(maxsize=1)
def _lengths_transform() -> Any:
    """Each run's length from where runs start: ``c[i] = s[i + 1] - s[i]``."""
    return transform("lengths", (("s", "int64"),), "0", (("c", "int64"),), (Write("c", "i", "s[i + 1] - s"),))


def _lengths(ops: Operands, starts: Any, size: int, runs: int | None, knobs: dict) -> Any:
    """The lengths of the first ``size`` runs (``runs`` of them where the host waited for
    their number), from ``starts`` (which holds at least one more entry): on the device one
    launch of a transform, no slices of the arrays (a PyOpenCL slice costs a launch's time)."""
    m = size if runs is None else runs
    if not ops.on_device:
        s = np.asarray(starts)
        return s[1 : m + 1] - s[:m]
    c = ops.empty(m, np.int64)
    if m:
        prepared(_lengths_transform(), count_dtype(m), "add", "inclusive", ops.backend, knobs)(
            [starts], [c], m, ops.queue
        )
    return c


def reduce_by_key(
    keys: Any,
    values: Any,
    op: str | Monoid = "add",
    *,
    size: int | None = None,
    fill_value: Any = 0,
    backend: str | None = None,
    **knobs: Any,
) -> tuple[Any, Any]:
    """The keys of the runs of equal consecutive keys, and each run's values combined by ``op``.

    Parameters
    ----------
    keys : array or tuple of arrays
        One key per value; a tuple's arrays are one key's fields (a run ends where any
        differs).
    values : array_like, device array, or a tuple of them
        As :func:`jitscan.segmented_reduce` takes them: a tuple value's arrays (and
        ``jitscan.index``) with a :func:`jitscan.operator` of tuples, ``argmax`` by key say.
    op : str or Monoid
    size : int, optional
        Exactly ``size`` runs, without the host waiting: keys past the number of runs are
        ``fill_value``, totals the operator's identity.
    fill_value : scalar
    backend : str, optional
    **knobs
        ``variant=``, ``simulate_blocking=``, ``threads=``, ``vectors=``, ``min_blocks=`` (of the
        pass that finds the runs).

    Returns
    -------
    (keys, totals)
        ``keys`` an array, or a tuple of arrays for a tuple of key arrays.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> k = np.array([1, 1, 2, 2, 2, 1], np.int32)
    >>> jitscan.reduce_by_key(k, np.arange(6, dtype=np.int32))
    (array([1, 2, 1], dtype=int32), array([1, 9, 5], dtype=int32))
    """
    size = _check_size("reduce_by_key", size)
    key = None
    if size:  # the no-stall form: a call like one seen before skips the checks (warm_key)
        key = warm_key((keys, values), op, size, value_key(fill_value), backend, *knobs.items())
        got = warm_call(_WARM_BY_KEY, key, keys, values)
        if got is not None:
            return got
    fields = _key_fields("reduce_by_key", keys)
    if is_dask(values) or any(is_dask(f) for f in fields):
        lazy = dispatch.lazy()

        lazy.refuse_fixed_size("reduce_by_key", size, False)
        tupled = isinstance(keys, tuple)

        def block(*arrays: Any) -> tuple[Any, Any]:
            k, t = reduce_by_key(
                tuple(arrays[:-1]) if tupled else arrays[0], arrays[-1], op, backend=backend, **knobs
            )
            return k, t

        def combine(a: Any, b: Any) -> Any:
            # two runs' totals (one-element arrays of the chunks' kind) combined in order
            if type(a) is np.ndarray:
                return reduce(np.concatenate([a, b]), op=op, backend=backend)
            import cupy

            return reduce(cupy.concatenate([a, b]), op=op, backend=backend)

        out_keys, totals = lazy.reduce_by_key(block, combine, fields, values)
        return (tuple(out_keys) if tupled else out_keys[0]), totals
    ops, n, vals = _with_values("reduce_by_key", fields, values, backend)
    if size == 0 or (n == 0 and size is None):  # no run: empty keys, and an empty reduction's result
        got = {f"u{j}": ops.result(ops.empty(0, ops.arrays[j].dtype)) for j in range(len(fields))}
        empty = segmented_reduce(_none_of(vals), offsets=_no_segments(ops), op=op)
        return _keys_out(got, len(fields), isinstance(keys, tuple)), empty
    got = _runs("reduce_by_key", ops, len(fields), n, size, fill_value, knobs)
    totals = _by_runs(vals, got["starts"], op)
    if size is not None:  # the last segment holds the runs past size
        cut = ops.backend.head if ops.on_device else (lambda a, k: a[:k])
        totals = tuple(cut(t, size) for t in totals) if isinstance(totals, tuple) else cut(totals, size)
    if key is not None and ops.on_device:
        kd = array_dtype("reduce_by_key", "keys", ops.arrays[0].dtype)
        remember(_WARM_BY_KEY, key, _warm_by_key(ops.backend, kd, op, size, fill_value, knobs))
    return _keys_out(got, len(fields), isinstance(keys, tuple)), totals


#: reduce_by_key's warm calls (one key array, one value array: transforms.warm_key)
_WARM_BY_KEY: dict[tuple, Any] = shortcut()


def _warm_by_key(b: Any, kd: str, op: Any, size: int, fill_value: Any, knobs: dict) -> Any:
    """reduce_by_key of ``size=`` like a call seen before (``go(keys, values)``), as the
    long way runs it where the runs' pass writes the padding: that pass, then the values'
    reduction by the runs' starts; None for a call it does not take (another shape, a
    length under ``size`` or past the padding's bound), which takes the long way."""
    t, writes = _runs_transform((kd,), True, True, False, True)
    scan = prepared(t, count_dtype(FUSED_FILL_MOST), "add", "inclusive", b, knobs).call
    kdt, i64 = np.dtype(kd), np.dtype(np.int64)
    consts = constants_of(b, [(size, i64), (fill_value, kdt)])
    sizes = {"u0": size, "starts": size + 2, "count": 1}

    def go(keys: Any, values: Any) -> Any:
        n = keys.size
        if not size <= n <= FUSED_FILL_MOST:
            return None
        queue = flat_on_one_queue(b, (keys, values), n)
        if queue is None:
            return None
        out = {name: b.empty((sizes[name],), kdt if name == "u0" else i64, queue) for name, _ in writes}
        scan([keys, *consts(queue)], [out[name] for name, _ in writes], n, queue)
        # the last of the size + 1 segments holds the runs past size
        return out["u0"], b.head(_by_runs(values, out["starts"], op), size)

    return go


def _by_runs(values: Any, starts: Any, op: Any) -> Any:
    """``values`` reduced by the runs' ``starts``: offsets the runs' pass wrote, so trusted
    for the call (no device check, and on an OpenCL GPU no alarm's copy back)."""
    segments.trust(starts)
    try:
        return segmented_reduce(values, offsets=starts, op=op)
    finally:
        segments.distrust(starts)


def _with_values(fn: str, fields: list[Any], values: Any, backend: str | None) -> tuple[Operands, int, Any]:
    """The keys' operands, the element count, and the values as the segmented functions take
    them: an array (flattened), or a tuple value's arrays (``jitscan.index`` fields kept)."""
    tupled = isinstance(values, (tuple, list))
    arrays = (
        [v for v in values if hasattr(v, "shape") or isinstance(v, (list, np.ndarray))]
        if tupled
        else [values]
    )
    if not arrays:
        raise TypeError(f"jitscan.{fn}: a tuple value needs at least one array")
    ops = operands(fn, [*fields, arrays[0]], backend, [*(["keys"] * len(fields)), "values"])
    n = int(ops.arrays[-1].size)
    if int(ops.arrays[0].size) != n:
        raise ValueError(f"jitscan.{fn}: {int(ops.arrays[0].size)} keys for {n} values")
    if tupled:
        return ops, n, tuple(values)
    return ops, n, ops.arrays[-1] if ops.on_device else np.ravel(np.asarray(values))


def _none_of(values: Any) -> Any:
    """No element of the values: each array of a tuple value cut to none (index fields kept)."""
    if isinstance(values, tuple):
        return tuple(v[:0] if hasattr(v, "shape") else v for v in values)
    return values[:0]


def _no_segments(ops: Operands) -> Any:
    """The offsets of no segment, as the caller's arrays are."""
    none = np.zeros(1, np.int64)
    return ops.backend.to_device(none, ops.queue) if ops.on_device else none


def _keys_out(got: dict[str, Any], fields: int, tupled: bool) -> Any:
    out = [got[f"u{j}"] for j in range(fields)]
    return tuple(out) if tupled else out[0]


def scan_by_key(
    keys: Any,
    values: Any,
    op: str | Monoid = "add",
    *,
    kind: str = "inclusive",
    backend: str | None = None,
    **knobs: Any,
) -> Any:
    """Scan the values of every run of equal consecutive keys on its own.

    Parameters
    ----------
    keys : array or tuple of arrays
        As :func:`reduce_by_key` takes them.
    values : array_like, device array, or a tuple of them
        As :func:`jitscan.segmented_scan` takes them; the result is of their length.
    op : str or Monoid
    kind : {"inclusive", "exclusive"}
    backend : str, optional
    **knobs
        ``variant=``, ``simulate_blocking=``, ``threads=``, ``vectors=``, ``min_blocks=`` (of the
        pass that finds the runs).

    One pass for keys of one array and values of a scan dtype: the tiles find a new
    segment where the key differs from the one before it as they load the keys (no flags
    array, no host wait). Keys of several fields (or values of other dtypes) take two: the
    runs' starts, then a scan by those offsets, and the host waits once, for the number of
    runs, between them.

    Examples
    --------
    >>> import numpy as np, jitscan
    >>> k = np.array([1, 1, 2, 2, 2, 1], np.int32)
    >>> jitscan.scan_by_key(k, np.ones(6, np.int32))
    array([1, 2, 1, 2, 3, 1], dtype=int32)
    """
    if kind not in ("inclusive", "exclusive"):
        raise ValueError(f"jitscan.scan_by_key: kind is 'inclusive' or 'exclusive', not {kind!r}")
    fields = _key_fields("scan_by_key", keys)
    if is_dask(values) or any(is_dask(f) for f in fields):
        lazy = dispatch.lazy()

        return lazy.scan_by_key(segmented_scan, fields, values, op=op, kind=kind, backend=backend, **knobs)
    ops, n, vals = _with_values("scan_by_key", fields, values, backend)
    kd = dtype_name(ops.arrays[0].dtype)
    vd = "" if isinstance(vals, tuple) else dtype_name(vals.dtype)
    if len(fields) == 1 and vd in DTYPES and kd in ARRAY_CTYPES:
        # one pass: the tiles find the heads where the key changes as they load
        scan = _by_key(vd, op, kind, kd, ops.backend.name, knobs)
        return scan(vals, flags=ops.arrays[0] if ops.on_device else np.ravel(np.asarray(fields[0])))
    got = _runs("scan_by_key", ops, len(fields), n, None, 0, knobs, values=False)
    offsets = _no_segments(ops) if n == 0 else got["starts"]
    return segmented_scan(vals, offsets=offsets, op=op, kind=kind)


#: the prepared scans by key (one per values' dtype, op, kind, keys' dtype, backend, knobs)
_BY_KEY: dict[tuple, PreparedScan] = {}


def _by_key(dtype: str, op: str | Monoid, kind: str, keys: str, backend: str, knobs: dict) -> PreparedScan:
    key = (dtype, op, kind, keys, backend, tuple(sorted(knobs.items())))
    scan = _BY_KEY.get(key)
    if scan is None:
        if len(_BY_KEY) > 64:
            _BY_KEY.clear()
        scan = _BY_KEY[key] = PreparedScan(
            dtype, op, kind=kind, segmented="flags", head_keys=keys, backend=backend, **knobs
        )
    return scan


__all__ = ["reduce_by_key", "scan_by_key", "unique_consecutive"]
