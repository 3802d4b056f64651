"""Dask scans and reductions of whole arrays and along axes: the chain, the tree, the axis carries."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ...operators import resolve
from ...plan.arrays import astype, initial_value
from .. import conventions, runner
from ..call import Call
from . import placed
from .common import (
    carry_after,
    chained,
    check_carried,
    chunk_call,
    combine,
    dask_modules,
    host_scalar,
    plan_setting,
    run_chunk,
)

# -- scans -------------------------------------------------------------------------------


def scan(x: Any, call: Call) -> Any:
    """A scan of a Dask array (``out=`` and ``stats=`` refused already): a lazy Dask array."""
    if call.kind == "reduce":
        return reduce(x, replace(call, function="reduce", axis=None, keepdims=False))
    initial = call.initial
    calls = chunk_call(call)
    resolve(calls.op)  # an unknown op fails here, not in a task
    check_carried(np.dtype(x.dtype), calls.variant, calls.knobs)
    t = conventions.types(conventions.input_dtype(x._meta), calls.dtype, calls.rule)
    result = np.dtype(t.result)
    axis = call.axis
    if axis is None:
        x = x.reshape(-1) if x.ndim != 1 else x
        axis = 0
    else:
        axis = conventions.normalize_axis(axis, x.ndim)
    if x.ndim == 1 and axis == 0:
        if chained(x, calls.kind, calls.nan):
            return _chain_1d(x, calls, initial, result)
        where = placed.choose(x, calls.op) if plan_setting() in ("auto", "placed") else None
        if where is not None:
            return placed.scan_1d(x, calls, initial, result, where)
        return _scan_1d(x, calls, initial, result)
    return _scan_axis(x, calls, axis, result)


def _scan_1d(x: Any, calls: Call, initial: Any, result: np.dtype) -> Any:
    da, tokenize, HighLevelGraph = dask_modules()
    token = tokenize(x, calls, initial)
    total, carries, name = f"jitscan-total-{token}", f"jitscan-carries-{token}", f"jitscan-scan-{token}"
    blocks = len(x.chunks[0])
    dsk: dict = {(total, i): (_block_total, (x.name, i), calls) for i in range(blocks - 1)}
    first = None if initial is None else initial_value(initial, result)
    dsk[carries] = (_fold, [(total, i) for i in range(blocks - 1)], first, calls.op, result)
    for i in range(blocks):
        dsk[(name, i)] = (_block_scan, (x.name, i), carries, i, calls)
    chunks = list(x.chunks[0])
    if calls.include_initial:
        chunks[0] += 1
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, (tuple(chunks),), meta=x._meta.astype(result))


def _chain_1d(x: Any, calls: Call, initial: Any, result: np.dtype) -> Any:
    """Chunk i is scanned from the end of chunk i - 1's result, read on the device."""
    da, tokenize, HighLevelGraph = dask_modules()
    token = tokenize(x, calls, initial, "chain")
    name = f"jitscan-chain-{token}"
    first = None if initial is None else initial_value(initial, result)
    dsk: dict = {}
    before = None  # the last chunk before with elements: its result and input end the carry
    exclusive = calls.kind == "exclusive"  # whose carry also needs the input's last element
    for i, size in enumerate(x.chunks[0]):
        link = (None, None) if before is None else ((name, before), (x.name, before) if exclusive else None)
        dsk[(name, i)] = (_chain_scan, (x.name, i), *link, first, i, calls, result)
        before = i if size else before
    chunks = list(x.chunks[0])
    if calls.include_initial:
        chunks[0] += 1
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, (tuple(chunks),), meta=x._meta.astype(result))


def _chain_scan(block: Any, done: Any, done_in: Any, first: Any, i: int, calls: Call, result: Any) -> Any:
    call = (calls.op, calls.variant, calls.backend)
    carry = first if done is None else carry_after(done, done_in, calls.kind, *call, result)
    return run_chunk(block, calls, calls.kind, first=i == 0, initial=carry if block.size else None)


def _block_total(block: Any, calls: Call) -> Any:
    # a NumPy scalar, read back here: the fold's task may run on another worker, and a
    # device 0-d array travels there through a device-to-host copy of its own (two
    # H200s under dask-cuda: 17 ms of transfers for 63 CuPy totals, experiments/notes/performance-log.md)
    return host_scalar(run_chunk(block, calls, "reduce"))


def _fold(totals: list, first: Any, op: Any, dtype: np.dtype) -> list:
    """Each block's carry: None for the first (without ``initial=``), then the running combination."""
    carries, acc = [first], first
    for v in totals:
        acc = combine(acc, v, op, dtype)
        carries.append(acc)
    return carries


def _block_scan(block: Any, carries: list, i: int, calls: Call) -> Any:
    carry = carries[i] if block.size else None  # an empty chunk takes none
    return run_chunk(block, calls, calls.kind, first=i == 0, initial=carry)


def _scan_axis(x: Any, calls: Call, axis: int, result: np.dtype) -> Any:
    """Along ``axis``: block j is scanned with the row of its carries in front (one copy)."""
    da, tokenize, HighLevelGraph = dask_modules()
    token = tokenize(x, calls, axis)
    total, carry, name = f"jitscan-total-{token}", f"jitscan-carry-{token}", f"jitscan-scan-{token}"
    dsk: dict = {}
    for idx in np.ndindex(*x.numblocks):
        j = idx[axis]
        if j + 1 < x.numblocks[axis]:
            dsk[(total, *idx)] = (_row_total_of, (x.name, *idx), axis, calls)
        if j >= 1:
            prev = idx[:axis] + (j - 1,) + idx[axis + 1 :]
            before = (carry, *prev) if j >= 2 else None
            dsk[(carry, *idx)] = (_row_combine, before, (total, *prev), axis, calls.op, result)
        args = (carry, *idx) if j >= 1 else None
        dsk[(name, *idx)] = (_block_scan_axis, (x.name, *idx), args, axis, j == 0, calls)
    chunks = list(x.chunks)
    if calls.include_initial:
        chunks[axis] = (chunks[axis][0] + 1, *chunks[axis][1:])
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])
    return da.Array(graph, name, tuple(chunks), meta=x._meta.astype(result))


def _row_total_of(block: Any, axis: int, calls: Call) -> Any:
    if block.shape[axis] == 0:
        return None  # an empty block: nothing to carry
    return _take(run_chunk(block, calls, "inclusive", axis=axis), axis, -1)


def _take(a: Any, axis: int, at: int) -> Any:
    """The slice ``at`` of ``a`` along ``axis``, kept as an axis of length one."""
    index = [slice(None)] * a.ndim
    index[axis] = slice(at, at + 1) if at != -1 else slice(-1, None)
    return a[tuple(index)]


def _row_combine(before: Any, total: Any, axis: int, op: Any, dtype: np.dtype) -> Any:
    """The carry row of a block: the rows of the blocks before it, combined (None: nothing yet)."""
    if before is None or total is None:
        return total if before is None else before
    both = _concat([astype(before, dtype), astype(total, dtype)], axis)
    return _take(runner.run(both, Call(op=op, dtype=dtype, axis=axis)), axis, -1)


def _concat(parts: list, axis: int) -> Any:
    return np.concatenate(parts, axis=axis)  # CuPy's through __array_function__


def _block_scan_axis(block: Any, carry: Any, axis: int, first: bool, calls: Call) -> Any:
    if carry is None:
        return run_chunk(block, calls, calls.kind, axis=axis, first=first)
    scan_dtype = np.dtype(conventions.types(conventions.input_dtype(block), calls.dtype, calls.rule).result)
    if calls.nan is not None and block.dtype.kind == "f":
        block = conventions.replace_nan(block, calls.nan)
    joined = _concat([astype(carry, scan_dtype), astype(block, scan_dtype)], axis)
    inc = runner.run(
        joined, replace(calls, kind="inclusive", rule="keep", dtype=scan_dtype, axis=axis, nan=None)
    )
    index = [slice(None)] * inc.ndim
    index[axis] = slice(1, None) if calls.kind == "inclusive" else slice(None, -1)
    return inc[tuple(index)]


# -- reductions --------------------------------------------------------------------------


def reduce(x: Any, call: Call) -> Any:
    """:func:`jitscan.reduce` of a Dask array: Dask's tree reduction, jitscan on the chunks."""
    da, _, _ = dask_modules()
    op, dtype = call.op, call.dtype
    resolve(op)
    chunks = replace(call, initial=None, stats=None, out=None)
    # combine and aggregate reduce the chunks' results: no knobs of the user's variant
    partial = Call(function="reduce", op=op, dtype=dtype)

    def chunk(block: Any, axis: Any = None, keepdims: bool = True) -> Any:
        return runner.run(block, replace(chunks, axis=axis, keepdims=True))

    def combine_(block: Any, axis: Any = None, keepdims: bool = True) -> Any:
        return runner.run(block, replace(partial, axis=axis, keepdims=True))

    def aggregate(block: Any, axis: Any = None, keepdims: bool = False) -> Any:
        res = runner.run(block, replace(partial, axis=axis, keepdims=keepdims))
        if start is not None:  # the whole array's reduction, of any shape (keepdims)
            value = combine(start, host_scalar(res), op, np.dtype(res.dtype))
            res = np.asarray(value, res.dtype).reshape(res.shape)
        return res

    t = conventions.types(conventions.input_dtype(x._meta), dtype, "keep")
    out = np.dtype(t.result)
    start = None if call.initial is None else initial_value(call.initial, out)
    return da.reduction(
        x,
        chunk,
        aggregate,
        combine=combine_,
        axis=call.axis,
        keepdims=call.keepdims,
        dtype=out,
        concatenate=True,
    )
